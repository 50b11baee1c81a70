//! The bare baseline (src/bin/baseline.rs): a minimal actix-web server that answers the very
//! bytes, and headers, the demo answered, so that comparing the two compares what happens
//! before the body is written and not the body.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use xtask::process::{
    Running, agent, free_port, get_with, spawn, target_dir, wait_for_port, wrapped,
};

/// How long the baseline may take to listen (under callgrind, seconds).
const PORT_WAIT: Duration = Duration::from_secs(120);

/// The release builds of `callstats` and of the baseline server, built first.
pub fn release_builds() -> Result<(PathBuf, PathBuf)> {
    xtask::cargo(
        &[
            "build",
            "--release",
            "-p",
            "callstats",
            "--bin",
            "callstats",
        ],
        &[],
    )?;
    xtask::cargo(
        &[
            "build",
            "--release",
            "-p",
            "callstats-bench",
            "--bin",
            "baseline",
        ],
        &[],
    )?;
    let release = target_dir().join("release");
    Ok((release.join("callstats"), release.join("baseline")))
}

/// Starts the baseline on a free port, run by `launcher` (a profiler) when it is not empty,
/// answering `answers` (`PATH=FILE[=HEADERS]`), its log in `dir`: the process and its port.
pub fn start<S: AsRef<std::ffi::OsStr>>(
    baseline: &Path,
    launcher: &[S],
    dir: &Path,
    answers: &[String],
) -> Result<(Running, u16)> {
    let port = free_port()?;
    let mut command: Command = wrapped(launcher, baseline);
    command.arg(format!("127.0.0.1:{port}")).args(answers);
    let process = spawn(&mut command, dir, "baseline")?;
    wait_for_port(port, PORT_WAIT)?;
    Ok((process, port))
}

/// What `path` answers `key` with on the loopback `port` (a 200, or an error): its headers, as
/// `name: value` lines, without those actix writes itself (`date`, `content-length`), for the
/// baseline to send the same; and its body.
pub fn record(port: u16, path: &str, key: &str) -> Result<(String, Vec<u8>)> {
    let (status, headers, body) = get_with(&agent(), &format!("127.0.0.1:{port}"), path, key, &[])?;
    if status != 200 {
        bail!("{path} answered {status}");
    }
    let mut lines = String::new();
    for (name, value) in &headers {
        if matches!(name.as_str(), "date" | "content-length") {
            continue;
        }
        let value = value
            .to_str()
            .with_context(|| format!("{path} answered a header that is not text: {name}"))?;
        lines += &format!("{name}: {value}\n");
    }
    Ok((lines, body))
}
