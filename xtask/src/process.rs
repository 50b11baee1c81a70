//! What the tasks that start the service share: child processes stopped when dropped, free
//! loopback ports, the target directory, and a plain HTTP GET (xtask needs no HTTP client).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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

/// A GET to the loopback `port` with `key` as a Bearer token: the status and the body's bytes.
pub fn get(port: u16, path: &str, key: &str) -> Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let end_of_head = answer
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .with_context(|| format!("{path}: no HTTP answer"))?;
    let (head, body) = answer.split_at(end_of_head);
    let status = String::from_utf8_lossy(head)
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("{path}: no status line"))?;
    Ok((status, body.get(4..).unwrap_or_default().to_vec()))
}
