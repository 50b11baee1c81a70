//! A spawned `callstats demo`, for the tests that need the real process.

use std::io::{BufRead as _, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the demo may take to print its key and listen.
const START_WITHIN: Duration = Duration::from_secs(60);

/// `callstats demo` on a free loopback port, with 2 workers and its SQLite file in a directory
/// of its own. Killed, and its directory removed, when dropped.
pub struct Demo {
    child: Child,
    pub dir: PathBuf,
    pub port: u16,
    /// The key the demo printed (every scope).
    pub key: String,
    /// Every line the demo wrote to stderr so far.
    pub logs: Arc<Mutex<Vec<String>>>,
    /// Every line the demo wrote to stdout after its key so far (the `curl` lines).
    pub printed: Arc<Mutex<Vec<String>>>,
}

impl Demo {
    /// Starts the demo in a fresh directory named after the test crate, its process and `name`; `configure`
    /// may run commands in that directory first and adds arguments and environment. Returns once
    /// the demo has printed its key and accepts connections.
    pub fn start(name: &str, configure: impl FnOnce(&Path, &mut Command)) -> Self {
        Self::start_under(name, &[], configure)
    }

    /// [`Demo::start`], run by the command `launcher` (its program and arguments, to which the
    /// demo's program and arguments are added), such as `prlimit --nofile=256 --`.
    pub fn start_under(
        name: &str,
        launcher: &[&str],
        configure: impl FnOnce(&Path, &mut Command),
    ) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "callstats-{}-{}-{name}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let program = env!("CARGO_BIN_EXE_callstats");
        let mut command = match launcher.split_first() {
            Some((first, rest)) => {
                let mut command = Command::new(first);
                command.args(rest).arg(program);
                command
            }
            None => Command::new(program),
        };
        command
            .args(["demo", "--bind", &format!("127.0.0.1:{port}")])
            .args(["--database-url", "sqlite://callstats-demo.db"])
            .args(["--workers", "2"])
            .env("RUST_LOG", "warn")
            .env_remove("CALLSTATS_CALL_PLATFORM_URL")
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        configure(&dir, &mut command);
        let mut child = command.spawn().unwrap();

        let logs = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&logs);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let stdout = child.stdout.take().unwrap();
        let mut demo = Self {
            child,
            dir,
            port,
            key: String::new(),
            logs,
            printed: Arc::new(Mutex::new(Vec::new())),
        };
        let mut lines = BufReader::new(stdout).lines();
        demo.key = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix("key: ").map(str::to_owned))
            .unwrap_or_else(|| panic!("the demo printed no key; logs:\n{}", demo.log_text()));
        // The demo fails on a closed stdout: keep reading what it prints after the key.
        let printed = Arc::clone(&demo.printed);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                printed.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + START_WITHIN;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the demo never listened; logs:\n{}",
                demo.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        demo
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_text(&self) -> String {
        self.logs.lock().unwrap().join("\n")
    }

    /// Waits for the demo to exit by itself; kills it and fails the test after `within`.
    pub fn wait_for_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("still running {within:?} later");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
