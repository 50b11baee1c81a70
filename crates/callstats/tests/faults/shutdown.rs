//! SIGTERM under load, on the real binary: requests in flight complete, new connections are
//! refused, and the process exits 0.

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use callstats_callplatform::{SimOptions, spawn_sim};

use crate::harness::{client, get};

/// Kills the child if the test fails before it has exited.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_lets_in_flight_requests_complete_refuses_new_ones_and_exits_0() {
    // Every upstream page takes a second, so requests are surely in flight at the signal.
    let sim = spawn_sim(SimOptions {
        calls_per_day: 300,
        latency: Duration::from_secs(1),
        ..SimOptions::default()
    })
    .unwrap();
    let dir = std::env::temp_dir().join(format!("callstats-sigterm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_callstats"))
        .args(["demo", "--bind", &format!("127.0.0.1:{port}")])
        .args([
            "--database-url",
            "sqlite://callstats-demo.db",
            "--workers",
            "2",
        ])
        .args(["--shutdown-timeout-secs", "20"])
        .env("CALLSTATS_CALL_PLATFORM_URL", sim.base_url())
        .env("RUST_LOG", "warn")
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let stdout = child.stdout.take().unwrap();
    let mut guard = KillOnDrop(Some(child));
    let key = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let key = lines
            .by_ref()
            .map(Result::unwrap)
            .find_map(|line| line.strip_prefix("key: ").map(str::to_owned))
            .expect("the demo printed no key");
        // The demo fails on a closed stdout: keep reading what it prints after the key.
        std::thread::spawn(move || lines.for_each(drop));
        key
    })
    .await
    .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = client();
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the demo never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Distinct days, so no two requests share an upstream fetch.
    let in_flight: Vec<_> = (1..=10)
        .map(|day| {
            let (client, base, key) = (client.clone(), base.clone(), key.clone());
            tokio::spawn(async move {
                let path = format!("/api/v1/calls/summary?start=2026-10-{day:02}");
                get(&client, &base, &path, &key).await.0
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let signalled = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(signalled.success());
    tokio::time::sleep(Duration::from_millis(300)).await;

    let late = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap()
        .get(format!("{base}/api/v1/ping"))
        .bearer_auth(&key)
        .send()
        .await;
    assert!(
        late.is_err(),
        "a request after SIGTERM was served: {late:?}"
    );

    for request in in_flight {
        assert_eq!(
            request.await.unwrap(),
            200,
            "an in-flight request was not completed"
        );
    }
    let mut child = guard.0.take().unwrap();
    let status = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("still running 30 s after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await
    .unwrap();
    assert_eq!(status.code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
