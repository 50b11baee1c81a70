//! `callstats serve` and `callstats demo` as processes: refusing bad configurations, serving,
//! printing the demo key, and stopping gracefully on SIGTERM.

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use callstats::commands::keys::issue;
use callstats_domain::scope::ScopeSet;
use callstats_sim::{SimOptions, spawn_sim};
use callstats_store::backend_tests;
use callstats_store::keys::NewKey;
use callstats_store::testing::TestDatabase;
use time::OffsetDateTime;

use crate::cli::{assert_exit, stderr, stdout};

/// A loopback address nothing listens on right now.
pub(super) fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A directory of its own for one process; removed by the test.
pub(super) fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("callstats-svc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `callstats ARGS` with a clean environment for the service settings, logs in `dir/stderr`.
pub(super) fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_callstats"));
    command.args(args).current_dir(dir).env_remove("RUST_LOG");
    for (name, _) in std::env::vars() {
        if name.starts_with("CALLSTATS_") {
            command.env_remove(name);
        }
    }
    command
}

/// `callstats SERVER` (`serve` or `demo`) in `dir` on `address`, with one worker and no
/// warm-up of the recent call days.
pub(super) fn server(dir: &Path, server: &str, address: &str) -> Command {
    let mut command = command(dir, &[server, "--bind", address]);
    command.args(["--workers", "1", "--call-day-warm-days", "0"]);
    command
}

pub(super) fn spawn(mut command: Command, dir: &Path) -> Child {
    let log = std::fs::File::create(dir.join("stderr")).unwrap();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap()
}

pub(super) fn logs(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
}

pub(super) fn terminate(child: &Child) {
    signal(child, "TERM");
}

/// Sends the signal `name` (`TERM`, `INT`) to `child`.
pub(super) fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for the process to end, at most `limit` (then kills it and fails).
pub(super) fn wait_exit(child: &mut Child, limit: Duration, dir: &Path) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running after {limit:?}; logs:\n{}", logs(dir));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(super) fn client() -> reqwest::Client {
    callstats_callplatform::install_crypto_provider();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// Polls `GET http://{address}/healthz` until it answers 200 (within 90 s: a debug build
/// migrating and seeding on a busy machine).
pub(super) async fn wait_healthy(address: &str, child: &mut Child, dir: &Path) {
    let client = client();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let response = client.get(format!("http://{address}/healthz")).send().await;
        if response.is_ok_and(|response| response.status() == 200) {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("exited with {status} before serving; logs:\n{}", logs(dir));
        }
        assert!(
            Instant::now() < deadline,
            "not healthy; logs:\n{}",
            logs(dir)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn serve_without_a_call_platform_url_exits_2_saying_which_setting() {
    let dir = work_dir("no-upstream");
    // Unset, and empty as docker-compose.yml passes a variable its .env does not set.
    for url in [None, Some(""), Some("  ")] {
        let mut command = command(&dir, &["serve", "--bind", &free_address()]);
        command.env("CALLSTATS_DATABASE_URL", "sqlite://portal.db");
        if let Some(url) = url {
            command.env("CALLSTATS_CALL_PLATFORM_URL", url);
        }
        let output = command.output().unwrap();
        assert_exit(&output, 2);
        let message = stderr(&output);
        assert!(
            message.contains("CALLSTATS_CALL_PLATFORM_URL") && message.contains("required"),
            "{url:?}: {message}"
        );
        assert!(stdout(&output).is_empty());
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_without_an_upstream_token_warns_at_start_and_serves() {
    const WARNING: &str = "CALLSTATS_CALL_PLATFORM_TOKEN is unset or empty";
    let dir = work_dir("no-token");
    // `serve` never creates its SQLite file: `migrate` does, as ops would.
    let migrated = command(&dir, &["migrate"])
        .env("CALLSTATS_DATABASE_URL", "sqlite://portal.db")
        .output()
        .unwrap();
    assert!(migrated.status.success(), "{migrated:?}");
    for (token, warned) in [("", true), ("tok-55", false)] {
        let address = free_address();
        let mut child = spawn(
            {
                let mut command = command(
                    &dir,
                    &["serve", "--migrate", "--bind", &address, "--workers", "1"],
                );
                command
                    .env("CALLSTATS_DATABASE_URL", "sqlite://portal.db")
                    .env("CALLSTATS_CALL_PLATFORM_URL", "http://127.0.0.1:9")
                    .env("CALLSTATS_CALL_PLATFORM_TOKEN", token);
                command
            },
            &dir,
        );
        wait_healthy(&address, &mut child, &dir).await;
        terminate(&child);
        let status = wait_exit(&mut child, Duration::from_secs(30), &dir);
        assert_eq!(status.code(), Some(0), "logs:\n{}", logs(&dir));
        let logs = logs(&dir);
        assert_eq!(
            logs.matches(WARNING).count(),
            usize::from(warned),
            "token {token:?}:\n{logs}"
        );
        assert!(!logs.contains("tok-55"), "{logs}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Makes the database exist, not migrated: an empty SQLite file (`serve` never creates one).
fn unmigrated(db: &TestDatabase) {
    if let Some(path) = db.url().strip_prefix("sqlite://") {
        std::fs::File::create(path).unwrap();
    }
}

backend_tests! {
    async fn serve_with_pending_migrations_exits_2_naming_migrate(db: &TestDatabase) {
        unmigrated(db);
        let dir = work_dir(&format!("pending-{:?}", db.backend()));
        let output = command(&dir, &["serve", "--bind", &free_address()])
            .env("CALLSTATS_DATABASE_URL", db.url())
            .env("CALLSTATS_CALL_PLATFORM_URL", "http://127.0.0.1:9")
            .output()
            .unwrap();
        assert_exit(&output, 2);
        let message = stderr(&output);
        assert!(message.contains("pending"), "{message}");
        assert!(message.contains("callstats migrate") && message.contains("--migrate"), "{message}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    async fn serve_with_migrate_applies_them_and_answers_healthz(db: &TestDatabase) {
        unmigrated(db);
        let dir = work_dir(&format!("migrate-{:?}", db.backend()));
        let address = free_address();
        let mut child = spawn(
            {
                let mut command = command(&dir, &["serve", "--migrate", "--bind", &address, "--workers", "1"]);
                command
                    .env("CALLSTATS_DATABASE_URL", db.url())
                    .env("CALLSTATS_CALL_PLATFORM_URL", "http://127.0.0.1:9");
                command
            },
            &dir,
        );
        wait_healthy(&address, &mut child, &dir).await;
        assert!(db.store(callstats_store::config::Access::ReadWrite).pending_migrations().await.unwrap().is_empty());
        terminate(&child);
        let status = wait_exit(&mut child, Duration::from_secs(30), &dir);
        assert_eq!(status.code(), Some(0), "logs:\n{}", logs(&dir));
        std::fs::remove_dir_all(dir).unwrap();
    }

    async fn sigterm_lets_an_in_flight_request_finish_then_exits_0(db: &TestDatabase) {
        let sim = spawn_sim(SimOptions {
            calls_per_day: 200,
            latency: Duration::from_secs(3),
            ..SimOptions::default()
        })
        .unwrap();
        let admin = db.migrated_store().await;
        let (secret, _) = issue(
            &admin,
            &NewKey::new("graceful", ScopeSet::parse_list("calls").unwrap()).unwrap(),
            OffsetDateTime::now_utc(),
        )
        .await
        .unwrap();
        let dir = work_dir(&format!("sigterm-{:?}", db.backend()));
        let address = free_address();
        let mut child = spawn(
            {
                let mut command = command(&dir, &["serve", "--bind", &address, "--workers", "1"]);
                command
                    .env("CALLSTATS_DATABASE_URL", db.url())
                    .env("CALLSTATS_CALL_PLATFORM_URL", sim.base_url());
                command
            },
            &dir,
        );
        wait_healthy(&address, &mut child, &dir).await;

        let request = client()
            .get(format!("http://{address}/api/v1/calls/summary?start=2026-10-05"))
            .bearer_auth(secret.expose())
            .send();
        let in_flight = tokio::spawn(request);
        // The request is now waiting on the slow upstream (3 s).
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!in_flight.is_finished(), "the upstream answers after 3 s");
        terminate(&child);

        let response = in_flight.await.unwrap().expect("the in-flight request is answered");
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["period"]["start_date"], "2026-10-05");
        let status = wait_exit(&mut child, Duration::from_secs(30), &dir);
        assert_eq!(status.code(), Some(0), "logs:\n{}", logs(&dir));
        sim.stop().await;
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_prints_a_key_and_three_curl_lines_then_serves_with_that_key() {
    let dir = work_dir("demo");
    let address = free_address();
    let mut child = spawn(command(&dir, &["demo", "--bind", &address]), &dir);
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    while lines.len() < 4 {
        match lines_rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) => lines.push(line),
            Err(_) => panic!("printed {lines:?}; logs:\n{}", logs(&dir)),
        }
    }
    let key = lines[0]
        .strip_prefix("key: ")
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(key.starts_with("cs_") && key.len() == 46, "{key}");
    for line in &lines[1..] {
        assert!(
            line.starts_with("curl ") && line.contains(key) && line.contains(&address),
            "{line}"
        );
    }
    assert!(lines[1].contains("/api/v1/ping"), "{}", lines[1]);
    assert!(
        dir.join("callstats-demo.db").exists(),
        "the default database in the working directory"
    );

    let ping = client()
        .get(format!("http://{address}/api/v1/ping"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(ping.status(), 200);
    let body: serde_json::Value = ping.json().await.unwrap();
    assert_eq!(body["key_name"], "demo");
    assert_eq!(body["scopes"], body["available_scopes"], "every scope");

    terminate(&child);
    let status = wait_exit(&mut child, Duration::from_secs(30), &dir);
    assert_eq!(status.code(), Some(0), "logs:\n{}", logs(&dir));
    assert!(!logs(&dir).contains(key), "the key is never logged");
    std::fs::remove_dir_all(dir).unwrap();
}
