//! The npm packages the Node.js checks run (`cargo xtask client-ts`, `lint-openapi`, `grafana`),
//! installed once under the target directory; kept apart so that no check imports another.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result};

use crate::schemathesis::succeed;

/// The generator, client and compiler releases CI runs; bump them deliberately. openapi-typescript
/// 7 declares TypeScript 5 as its peer, so not 6 or 7.
const OPENAPI_TYPESCRIPT_VERSION: &str = "7.13.0";
const OPENAPI_FETCH_VERSION: &str = "0.17.0";
pub const TYPESCRIPT_VERSION: &str = "5.9.3";
/// The Spectral release CI runs; bump it deliberately.
const SPECTRAL_CLI_VERSION: &str = "6.16.3";

/// The npm packages of both Node.js checks of the document (`client-ts` and `lint-openapi`), in one
/// directory under the target directory, installed the first time: the directory that holds
/// their `node_modules`.
pub fn node_tools(target: &Path) -> Result<PathBuf> {
    npm_install(
        target,
        &format!(
            "npm-openapi-typescript-{OPENAPI_TYPESCRIPT_VERSION}-openapi-fetch-{OPENAPI_FETCH_VERSION}\
             -typescript-{TYPESCRIPT_VERSION}-spectral-{SPECTRAL_CLI_VERSION}"
        ),
        &[
            ("openapi-typescript", OPENAPI_TYPESCRIPT_VERSION),
            ("openapi-fetch", OPENAPI_FETCH_VERSION),
            ("typescript", TYPESCRIPT_VERSION),
            ("@stoplight/spectral-cli", SPECTRAL_CLI_VERSION),
        ],
        &["openapi-typescript", "tsc", "spectral"],
    )
}

/// The directory `target/<name>`, with `packages` (name, exact version) installed by npm the
/// first time, or again when one of `executables` is missing from `node_modules/.bin`.
pub fn npm_install(
    target: &Path,
    name: &str,
    packages: &[(&str, &str)],
    executables: &[&str],
) -> Result<PathBuf> {
    let dir = target.join(name);
    let bin = dir.join("node_modules").join(".bin");
    if executables.iter().all(|e| bin.join(e).exists()) {
        return Ok(dir);
    }
    let dependencies: serde_json::Map<String, serde_json::Value> = packages
        .iter()
        .map(|&(package, version)| (package.to_owned(), version.into()))
        .collect();
    let manifest = serde_json::json!({"private": true, "dependencies": dependencies});
    eprintln!(
        "==> installing {} into {}",
        packages
            .iter()
            .map(|(package, version)| format!("{package}@{version}"))
            .collect::<Vec<_>>()
            .join(" "),
        dir.display()
    );
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(dir.join("package.json"), format!("{manifest:#}\n"))
        .context("cannot write package.json")?;
    // None of them needs its install script; one would only report a download (@scarf/scarf).
    succeed(Command::new("npm").current_dir(&dir).args([
        "install",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
    ]))?;
    Ok(dir)
}
