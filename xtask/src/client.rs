//! `cargo xtask client`: a client generated from the OpenAPI document must read the whole
//! document and talk to the service.
//!
//! Starts `callstats demo` (as `cargo xtask schemathesis` does), generates a Python client from
//! the document it serves with openapi-python-client (from a virtual environment under the
//! target directory, created once), and fails on any warning of the generator, which otherwise
//! leaves out what it cannot read and still exits 0. Then `xtask/client/check.py` calls every
//! endpoint through the generated client with the demo's key (and `/kpi/{month}` also with a
//! key holding only `kpi:aggregate`) and checks that each answers 200 parsed into the generated
//! models, downloads the CSV of every CSV endpoint and reads it with pandas (pinned below),
//! checking its rows against the JSON's, and `mypy --strict` checks that script with the
//! generated package.

use std::path::Path;
use std::process::{Command, Output};

use anyhow::{Context as _, Result, bail};

use crate::process::target_dir;
use crate::schemathesis::venv;
use crate::serve::Demo;

/// The generator and type checker releases CI runs; bump them deliberately.
const OPENAPI_PYTHON_CLIENT_VERSION: &str = "0.29.1";
const MYPY_VERSION: &str = "2.4.1";
/// The CSV reader that reads every CSV endpoint's download (docs/behaviour.md, "CSV").
const PANDAS_VERSION: &str = "2.2.3";

pub fn run(workspace: &Path) -> Result<()> {
    let target = target_dir();
    let generator = venv(
        &target,
        &format!(
            "client-{OPENAPI_PYTHON_CLIENT_VERSION}-mypy-{MYPY_VERSION}-pandas-{PANDAS_VERSION}"
        ),
        &[
            &format!("openapi-python-client=={OPENAPI_PYTHON_CLIENT_VERSION}"),
            &format!("mypy=={MYPY_VERSION}"),
            &format!("pandas=={PANDAS_VERSION}"),
        ],
        "openapi-python-client",
    )?;
    let bin = generator
        .parent()
        .context("the virtual environment has no bin directory")?;
    let demo = Demo::start("client", &[])?;
    let aggregate = demo.issue("client-aggregate", "kpi:aggregate")?;
    let base_url = format!("http://127.0.0.1:{}", demo.port);
    let client_dir = workspace.join("xtask").join("client");
    let dir = demo.dir.clone();

    // The document as served, not the committed copy: the two are held equal by a test.
    let output = dir.join("generated");
    let generated = run_captured(
        Command::new(&generator)
            .current_dir(&dir)
            .args([
                "generate",
                "--meta",
                "none",
                "--fail-on-warning",
                "--overwrite",
            ])
            .arg("--url")
            .arg(format!("{base_url}/api/v1/openapi.json"))
            .arg("--config")
            .arg(client_dir.join("config.yaml"))
            .arg("--output-path")
            .arg(output.join("callstats_client")),
    )?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&generated.stdout),
        String::from_utf8_lossy(&generated.stderr)
    );
    eprint!("{text}");
    if !generated.status.success() || text.to_lowercase().contains("warning") {
        bail!("openapi-python-client did not read the whole document (see its warnings above)");
    }

    eprintln!("==> the generated client against the demo");
    let checked = Command::new(bin.join("python"))
        .current_dir(&dir)
        .env("PYTHONPATH", &output)
        .arg(client_dir.join("check.py"))
        .args([&base_url, &demo.key, &aggregate])
        .status()
        .context("cannot run check.py")?;
    drop(demo);
    if !checked.success() {
        bail!("the generated client failed against the demo (see above)");
    }

    eprintln!("==> mypy --strict over check.py and the generated client");
    let typed = Command::new(bin.join("mypy"))
        .current_dir(&output)
        .env("MYPYPATH", &output)
        .args(["--strict", "--no-color-output", "--cache-dir"])
        .arg(output.join(".mypy_cache"))
        .arg(client_dir.join("check.py"))
        .arg("callstats_client")
        .status()
        .context("cannot run mypy")?;
    if !typed.success() {
        bail!("mypy --strict found type errors (see above)");
    }
    // Nothing from a green run is worth keeping.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn run_captured(command: &mut Command) -> Result<Output> {
    command
        .output()
        .with_context(|| format!("cannot run {command:?}"))
}
