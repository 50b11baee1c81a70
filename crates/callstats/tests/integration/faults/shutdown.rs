//! SIGTERM under load, on the real binary: requests in flight complete, new connections are
//! refused, idle connections do not hold the stop, and the process exits 0.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use callstats_sim::{SimOptions, spawn_sim};

use crate::faults::harness::{client, get};
use crate::support::demo::Demo;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_lets_in_flight_requests_complete_refuses_new_ones_and_exits_0() {
    // Every upstream page takes a second, so requests are surely in flight at the signal.
    let sim = spawn_sim(SimOptions {
        calls_per_day: 300,
        latency: Duration::from_secs(1),
        ..SimOptions::default()
    })
    .unwrap();
    let upstream = sim.base_url();
    let mut demo = tokio::task::spawn_blocking(move || {
        Demo::start("sigterm", |_, command| {
            command
                .args(["--shutdown-timeout-secs", "20"])
                .env("CALLSTATS_CALL_PLATFORM_URL", upstream);
        })
    })
    .await
    .unwrap();
    let (base, key, pid) = (demo.base(), demo.key.clone(), demo.pid());
    let client = client();

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
    terminate(pid);
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
    let status = tokio::task::spawn_blocking(move || demo.wait_for_exit(Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

/// Sends SIGTERM to `pid`; the instant it was sent.
fn terminate(pid: u32) -> Instant {
    let signalled = Instant::now();
    let sent = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    signalled
}

/// The demo exits 0, less than 10 s after the SIGTERM `signalled` though its shutdown timeout
/// is 20 s.
fn exits_0_within_10_seconds(demo: &mut Demo, signalled: Instant) {
    assert_eq!(demo.wait_for_exit(Duration::from_secs(30)).code(), Some(0));
    let stopped = signalled.elapsed();
    assert!(
        stopped < Duration::from_secs(10),
        "stopped {stopped:?} after the signal, with a 20 s shutdown timeout"
    );
}

/// Reads from `stream` until the server closes it (at most 20 s); gives how long that took.
fn closed_after(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut buffer = [0_u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return started.elapsed(),
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => {
                return started.elapsed();
            }
            Err(err) => panic!("still open after {:?}: {err}", started.elapsed()),
        }
    }
}

#[test]
fn sigterm_closes_idle_connections_at_once_rather_than_waiting_for_their_timeouts() {
    let mut demo = Demo::start("sigterm-idle", |_, command| {
        command.args(["--shutdown-timeout-secs", "20"]);
    });
    // One connection idle after an answer (kept alive for 5 s), one that never sent a byte
    // (given 5 s for its head).
    let mut idle = TcpStream::connect(("127.0.0.1", demo.port)).unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = [0_u8; 12];
    idle.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
    let mut silent = TcpStream::connect(("127.0.0.1", demo.port)).unwrap();
    std::thread::sleep(Duration::from_millis(200));

    let signalled = terminate(demo.pid());
    for (what, stream) in [("idle", &mut idle), ("silent", &mut silent)] {
        let waited = closed_after(stream);
        assert!(
            waited < Duration::from_secs(3),
            "{what}: closed after {waited:?}"
        );
    }
    exits_0_within_10_seconds(&mut demo, signalled);
}

#[test]
fn sigterm_ends_an_open_live_stream_at_once_and_the_process_exits_within_the_drain() {
    let mut demo = Demo::start("sigterm-live", |_, command| {
        command.args(["--shutdown-timeout-secs", "20"]);
    });
    let mut stream = TcpStream::connect(("127.0.0.1", demo.port)).unwrap();
    write!(
        stream,
        "GET /api/v1/calls/live HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         Accept: text/event-stream\r\n\r\n",
        demo.key
    )
    .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut read = Vec::new();
    let mut buffer = [0_u8; 4096];
    while !String::from_utf8_lossy(&read).contains("event: live") {
        let count = stream.read(&mut buffer).unwrap();
        assert!(count > 0, "closed before the first event");
        read.extend_from_slice(buffer.get(..count).unwrap());
    }
    assert!(read.starts_with(b"HTTP/1.1 200 OK"), "{read:?}");

    let signalled = terminate(demo.pid());
    let waited = closed_after(&mut stream);
    assert!(
        waited < Duration::from_secs(3),
        "closed after {waited:?}; logs:\n{}",
        demo.log_text()
    );
    exits_0_within_10_seconds(&mut demo, signalled);
}
