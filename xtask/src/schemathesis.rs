//! `cargo xtask schemathesis`: fuzzes the running service against its own OpenAPI document.
//!
//! Builds the `callstats` binary, starts `callstats demo` on a free loopback port in a
//! temporary directory, issues three keys (every scope, only `kpi:aggregate`, none) with quotas
//! high enough that the fuzzer never meets a 429, and runs schemathesis (from a virtual
//! environment it creates once and reuses) with every check: first with the every-scope key,
//! then with each narrow key, where the documented 403s must answer as documented. The demo
//! process is killed on every way out.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::process::{get, target_dir};
use crate::serve::{Demo, HIGH_QUOTA};

/// The schemathesis release CI runs; bump it deliberately.
const SCHEMATHESIS_VERSION: &str = "4.32.5";
/// Examples per operation of the every-scope run (the narrow runs use fewer).
const MAX_EXAMPLES: &str = "150";
const MAX_EXAMPLES_NARROW: &str = "25";

pub fn run(workspace: &Path) -> Result<()> {
    let target = target_dir();
    let schemathesis = ensure_venv(&target)?;
    // The fuzzer comes from one IP; its unauthenticated probes must not be throttled.
    let demo = Demo::start("schemathesis", &[("CALLSTATS_ANON_RATE_LIMIT", HIGH_QUOTA)])?;
    let (dir, port, bind) = (
        demo.dir.clone(),
        demo.port,
        format!("127.0.0.1:{}", demo.port),
    );
    let every = demo.issue(
        "fuzz-every",
        "calls,kpi:aggregate,kpi:detail,operators,scripts",
    )?;
    let aggregate = demo.issue("fuzz-aggregate", "kpi:aggregate")?;
    let nothing = demo.issue("fuzz-nothing", "")?;

    let url = format!("http://{bind}/api/v1/openapi.json");
    let mut failures = Vec::new();
    for (label, key, examples, extra) in [
        ("every scope", &every, MAX_EXAMPLES, &[][..]),
        // Narrow keys: only the API's own operations; the probes need no key.
        (
            "only kpi:aggregate",
            &aggregate,
            MAX_EXAMPLES_NARROW,
            &["--include-path-regex", "^/api/v1/"][..],
        ),
        (
            "no scope",
            &nothing,
            MAX_EXAMPLES_NARROW,
            &["--include-path-regex", "^/api/v1/"][..],
        ),
    ] {
        eprintln!("==> schemathesis with the {label} key");
        let status = Command::new(&schemathesis)
            // schemathesis keeps a cache in its working directory: not in the workspace.
            .current_dir(&dir)
            .arg("--config-file")
            .arg(workspace.join("xtask").join("schemathesis.toml"))
            .args(["run", &url, "--checks", "all", "--max-examples", examples])
            .args(["--header", &format!("Authorization: Bearer {key}")])
            .args([
                "--seed",
                "42",
                "--generation-database",
                "none",
                "--no-color",
            ])
            .args(["--report-dir", &dir.join("report").display().to_string()])
            .args(extra)
            .status()
            .context("cannot run schemathesis")?;
        if !status.success() {
            failures.push(label);
        }
    }
    let scope_failures = check_documented_403s(port, &aggregate, &nothing);
    drop(demo);
    for failure in &scope_failures {
        eprintln!("scope check failed: {failure}");
    }
    if !scope_failures.is_empty() {
        failures.push("the targeted 403 checks");
    }
    if !failures.is_empty() {
        bail!("schemathesis failed with the keys: {}", failures.join(", "));
    }
    // Nothing from a green run is worth keeping.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// What each narrow key must get, endpoint by endpoint: a 403 naming the missing scope, or 200.
const SCOPE_CASES: &[(&str, Option<&str>, Option<&str>)] = &[
    // (path, with only kpi:aggregate, with no scope): the scope a 403 must name, or None for 200
    ("/api/v1/ping", None, None),
    (
        "/api/v1/calls/summary?start=2026-11-02",
        Some("calls"),
        Some("calls"),
    ),
    (
        "/api/v1/calls/agents?start=2026-11-02",
        Some("calls"),
        Some("calls"),
    ),
    ("/api/v1/kpi/months", None, Some("kpi:aggregate")),
    ("/api/v1/operators", Some("operators"), Some("operators")),
    (
        "/api/v1/schedule?month=2026-11",
        Some("operators"),
        Some("operators"),
    ),
    ("/api/v1/scripts/stats", Some("scripts"), Some("scripts")),
];

/// Asks every endpoint with both narrow keys and lists what did not answer as documented.
fn check_documented_403s(port: u16, aggregate: &str, nothing: &str) -> Vec<String> {
    let mut failures = Vec::new();
    for &(path, with_aggregate, with_nothing) in SCOPE_CASES {
        for (label, key, expected) in [
            ("kpi:aggregate", aggregate, with_aggregate),
            ("no scope", nothing, with_nothing),
        ] {
            match get(port, path, key) {
                Err(err) => failures.push(format!("{path} with the {label} key: {err:#}")),
                Ok((status, body)) => {
                    let body = String::from_utf8_lossy(&body);
                    let fits = match expected {
                        None => status == 200,
                        Some(scope) => {
                            status == 403
                                && body.contains(&format!("\"required_scope\":\"{scope}\""))
                        }
                    };
                    if !fits {
                        failures.push(format!(
                            "{path} with the {label} key: expected {}, got {status} {body}",
                            expected.map_or_else(|| "200".to_owned(), |s| format!("403 for {s}"))
                        ));
                    }
                }
            }
        }
    }
    failures
}

/// The schemathesis executable of a virtual environment under the target directory, created
/// and filled the first time.
fn ensure_venv(target: &Path) -> Result<PathBuf> {
    venv(
        target,
        &format!("schemathesis-{SCHEMATHESIS_VERSION}"),
        &[&format!("schemathesis=={SCHEMATHESIS_VERSION}")],
        "schemathesis",
    )
}

/// The executable `bin/<executable>` of the virtual environment `target/<name>`, created and
/// filled with `requirements` (pinned `package==version`) the first time.
pub fn venv(target: &Path, name: &str, requirements: &[&str], executable: &str) -> Result<PathBuf> {
    let venv = target.join(name);
    let executable = venv.join("bin").join(executable);
    if executable.exists() {
        return Ok(executable);
    }
    eprintln!(
        "==> installing {} into {}",
        requirements.join(" "),
        venv.display()
    );
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    succeed(Command::new(&python).arg("-m").arg("venv").arg(&venv))?;
    succeed(
        Command::new(venv.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(requirements),
    )?;
    Ok(executable)
}

/// Runs `command`; an error unless it exits successfully.
pub fn succeed(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(())
}
