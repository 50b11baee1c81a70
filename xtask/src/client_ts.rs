//! `cargo xtask client-ts`: TypeScript types generated from the OpenAPI document must read the
//! whole document, type-check and talk to the service.
//!
//! Starts `callstats demo` (as `cargo xtask client` does), generates `schema.d.ts` from the
//! document it serves with openapi-typescript (from npm packages installed once under the target
//! directory), and fails on anything the generator writes to stderr, where it reports what it
//! could not read. `xtask/client-ts/check.ts`, copied beside the generated types, must pass
//! `tsc --noEmit --strict`; compiled, it calls every endpoint through openapi-fetch with the
//! demo's key (and `/kpi/{month}` also with a key holding only `kpi:aggregate`), checks that each
//! answers 200 with the fields its type promises, and that a date outside the calendar is a 400
//! read as problem details through the generated error type. It also reads `/calls/live` as an
//! event stream with fetch, up to its first `live` event, whose data must be the live figures.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::node::node_tools;
use crate::process::target_dir;
use crate::schemathesis::succeed;
use crate::serve::Demo;

pub fn run(workspace: &Path) -> Result<()> {
    let bin = node_tools(&target_dir())?.join("node_modules").join(".bin");
    let demo = Demo::start("client-ts", &[])?;
    let aggregate = demo.issue("client-ts-aggregate", "kpi:aggregate")?;
    let base_url = format!("http://127.0.0.1:{}", demo.port);
    let dir = demo.dir.clone();

    // check.ts imports the generated types as `./schema.js`, and node finds openapi-fetch only in
    // a node_modules above the script: the work directory gets both, and is an ES module package.
    let client_dir = workspace.join("xtask").join("client-ts");
    for file in ["check.ts", "tsconfig.json"] {
        std::fs::copy(client_dir.join(file), dir.join(file))
            .with_context(|| format!("cannot copy {file} to {}", dir.display()))?;
    }
    std::fs::write(
        dir.join("package.json"),
        "{\"private\": true, \"type\": \"module\"}\n",
    )
    .context("cannot write the work directory's package.json")?;
    let modules = bin.parent().context("node_modules/.bin has no parent")?;
    std::os::unix::fs::symlink(modules, dir.join("node_modules"))
        .context("cannot link node_modules into the work directory")?;

    // The document as served, not the committed copy: the two are held equal by a test.
    let generated = Command::new(bin.join("openapi-typescript"))
        .current_dir(&dir)
        .arg(format!("{base_url}/api/v1/openapi.json"))
        .args(["--output", "schema.d.ts"])
        .env("FORCE_COLOR", "0")
        .output()
        .context("cannot run openapi-typescript")?;
    let warnings = String::from_utf8_lossy(&generated.stderr);
    eprint!("{}{warnings}", String::from_utf8_lossy(&generated.stdout));
    // Its warnings and errors (the document's own lint among them) go to stderr, the rest to
    // stdout; a warning still exits 0.
    if !generated.status.success() || !warnings.trim().is_empty() {
        bail!("openapi-typescript did not read the whole document (see its output above)");
    }

    eprintln!("==> tsc --noEmit --strict over check.ts and the generated types");
    let tsc = bin.join("tsc");
    let project = dir.join("tsconfig.json");
    let typed = Command::new(&tsc)
        .arg("--project")
        .arg(&project)
        .args(["--noEmit", "--strict", "--pretty", "false"])
        .status()
        .context("cannot run tsc")?;
    if !typed.success() {
        bail!("tsc --strict found type errors (see above)");
    }
    succeed(
        Command::new(&tsc)
            .arg("--project")
            .arg(&project)
            .args(["--strict", "--pretty", "false"]),
    )?;

    eprintln!("==> the generated client against the demo");
    let checked = Command::new("node")
        .current_dir(&dir)
        .arg(dir.join("js").join("check.js"))
        .args([&base_url, &demo.key, &aggregate])
        .status()
        .context("cannot run node")?;
    drop(demo);
    if !checked.success() {
        bail!("the generated client failed against the demo (see above)");
    }
    // Nothing from a green run is worth keeping.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
