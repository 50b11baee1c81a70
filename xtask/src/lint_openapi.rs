//! `cargo xtask lint-openapi`: the committed OpenAPI document against Spectral's `spectral:oas`
//! ruleset, as `.spectral.yaml` at the workspace root adjusts it.
//!
//! Spectral comes from the npm directory `cargo xtask client-ts` installs under the target
//! directory (once, for both). Warnings fail as errors do: the ruleset turns off, with its
//! reasons, the few rules that do not fit this service, so whatever is left is worth fixing.
//! The committed copy is linted, not the served one: a test holds the two equal, and no service
//! need be built for it.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::node::node_tools;
use crate::process::target_dir;

pub fn run(workspace: &Path) -> Result<()> {
    let spectral = node_tools(&target_dir())?
        .join("node_modules")
        .join(".bin")
        .join("spectral");
    eprintln!("==> spectral lint docs/openapi.json (.spectral.yaml, warnings fail)");
    let status = Command::new(&spectral)
        .current_dir(workspace)
        .args(["lint", "docs/openapi.json", "--ruleset", ".spectral.yaml"])
        .args(["--fail-severity=warn", "--format", "stylish"])
        .env("FORCE_COLOR", "0")
        .status()
        .context("cannot run spectral")?;
    if !status.success() {
        bail!("spectral found problems in docs/openapi.json (see above)");
    }
    Ok(())
}
