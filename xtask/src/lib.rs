//! What the tasks of `cargo xtask` and the benchmarks (`callstats-bench`, bench/) share: the
//! workspace and cargo, child processes and loopback HTTP ([`process`]), and the service started
//! on loopback from a build ([`serve`]: the sim, a seeded portal, `callstats serve` and
//! `callstats demo`), and the reader of the live figures' event stream ([`sse`]). The CI tasks and the benchmarks start the service the same way, so the
//! two cannot drift apart.

pub mod process;
pub mod serve;
pub mod sse;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `cargo` (the one that runs this program, when it does) with `args` and `env`; an error
/// unless it succeeds.
pub fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("could not run {cargo}"))?;
    if !status.success() {
        bail!("`cargo {}` failed with {status}", args.join(" "));
    }
    Ok(())
}
