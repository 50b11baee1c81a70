//! Child processes stopped when dropped, free loopback ports, the target directory, and an
//! HTTP GET through ureq: what every task that starts a program shares.

use std::ffi::OsStr;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

/// A child process stopped when dropped (SIGTERM, then a kill after 10 s), so a failed run
/// leaves nothing behind.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            // Exited already, or now: either way nothing is left running.
            if !matches!(self.0.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `work` in a directory of its own under the system's temporary one
/// (`callstats-{name}-{pid}`), removed afterwards whatever the outcome.
pub fn in_scratch_dir<T>(name: &str, work: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let dir = std::env::temp_dir().join(format!("callstats-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let outcome = work(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// Starts a process with its stderr in `<name>.log` of the work directory `dir`.
pub fn spawn(command: &mut Command, dir: &Path, name: &str) -> Result<Running> {
    let log = std::fs::File::create(dir.join(format!("{name}.log")))?;
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("cannot start {name}"))?;
    Ok(Running(child))
}

/// A command that runs `program`, through `wrapper` (a program and its arguments, a profiler
/// say) when it is not empty.
pub fn wrapped<S: AsRef<OsStr>>(wrapper: &[S], program: &Path) -> Command {
    match wrapper.split_first() {
        Some((runner, args)) => {
            let mut command = Command::new(runner);
            command.args(args).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// Fails with how to install it (Debian's `package`) unless `tool` runs.
pub fn require(tool: &str, package: &str) -> Result<()> {
    if Command::new(tool).arg("--version").output().is_err() {
        bail!("{tool} is not installed (Debian/Ubuntu: apt-get install -y {package})");
    }
    Ok(())
}

/// A loopback port nothing listens on (at the moment of asking).
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(listener.local_addr()?.port())
}

/// Waits until something accepts connections on the loopback `port`.
pub fn wait_for_port(port: u16, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            bail!(
                "nothing listens on port {port} after {} s",
                within.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Where cargo puts its builds: `CARGO_TARGET_DIR`, else the workspace's `target/`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| crate::workspace().join("target"), PathBuf::from)
}

/// An HTTP client for the loopback service: every status is an answer (not an error), a
/// 30-second limit per request, kept-alive connections pooled.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// A GET to the loopback `port` with `key` as a Bearer token: the status and the body's bytes.
pub fn get(port: u16, path: &str, key: &str) -> Result<(u16, Vec<u8>)> {
    static AGENT: LazyLock<ureq::Agent> = LazyLock::new(agent);
    get_on(&AGENT, port, path, key)
}

/// [`get`] on a given agent (and so on its kept-alive connection).
pub fn get_on(agent: &ureq::Agent, port: u16, path: &str, key: &str) -> Result<(u16, Vec<u8>)> {
    let (status, _, body) = get_from(agent, &format!("127.0.0.1:{port}"), path, key)?;
    Ok((status, body))
}

/// A GET to `http://{authority}{path}` with `key` as a Bearer token on `agent`: the status, the
/// headers and the body's bytes (at most 64 MiB).
pub fn get_from(
    agent: &ureq::Agent,
    authority: &str,
    path: &str,
    key: &str,
) -> Result<(u16, ureq::http::HeaderMap, Vec<u8>)> {
    get_with(agent, authority, path, key, &[])
}

/// [`get_from`] with more request `headers` (name, value).
pub fn get_with(
    agent: &ureq::Agent,
    authority: &str,
    path: &str,
    key: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, ureq::http::HeaderMap, Vec<u8>)> {
    let mut request = agent
        .get(format!("http://{authority}{path}"))
        .header("Authorization", format!("Bearer {key}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut answer = request
        .call()
        .with_context(|| format!("GET {path} failed"))?;
    let body = answer
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_vec()
        .with_context(|| format!("GET {path}: the body could not be read"))?;
    Ok((answer.status().as_u16(), answer.headers().clone(), body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_is_named_with_its_package() {
        require("cargo", "cargo").unwrap();
        let err = require("callstats-no-such-tool", "some-package").unwrap_err();
        assert_eq!(
            err.to_string(),
            "callstats-no-such-tool is not installed (Debian/Ubuntu: apt-get install -y some-package)"
        );
    }
}
