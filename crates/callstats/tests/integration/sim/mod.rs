//! `callstats sim` as the program runs it: the synthetic platform over the upstream contract,
//! with its token check and injected failures.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `callstats sim` process on a free port, killed on drop.
struct Sim {
    child: Child,
    port: u16,
}

impl Sim {
    fn start(args: &[&str]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bind = format!("127.0.0.1:{port}");
        let child = Command::new(env!("CARGO_BIN_EXE_callstats"))
            .args(["sim", "--bind", &bind, "--calls-per-day", "200"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&bind).is_err() {
            assert!(Instant::now() < deadline, "callstats sim did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }

    /// Status line and body of one GET.
    fn get(&self, path_and_query: &str, token: Option<&str>) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET {path_and_query} HTTP/1.1\r\nHost: sim\r\n{auth}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status = response.split(' ').nth(1).unwrap().parse().unwrap();
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const DAY: &str =
    "/calls?from=2026-11-02T00:00:00%2B05:00&to=2026-11-03T00:00:00%2B05:00&limit=1000";

#[test]
fn sim_serves_the_contract_and_checks_its_token() {
    let sim = Sim::start(&["--token", "sim-secret"]);
    let (status, body) = sim.get(DAY, None);
    assert_eq!(status, 401, "{body}");
    let (status, body) = sim.get(DAY, Some("wrong"));
    assert_eq!(status, 401, "{body}");
    let (status, body) = sim.get(DAY, Some("sim-secret"));
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value =
        serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"));
    let calls = page["calls"].as_array().unwrap();
    assert!(!calls.is_empty());
    assert!(
        calls
            .iter()
            .all(|c| c["started_at"].as_str().unwrap().starts_with("2026-11-02T"))
    );
    assert!(page.get("next_cursor").is_some());
}

#[test]
fn sim_injects_failures_as_json_500s() {
    let sim = Sim::start(&["--fail-rate", "1"]);
    let (status, body) = sim.get(DAY, None);
    assert_eq!(status, 500);
    assert!(
        serde_json::from_str::<serde_json::Value>(body.trim()).is_ok(),
        "{body}"
    );
}

#[test]
fn sim_refuses_a_fail_rate_outside_0_to_1_with_exit_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_callstats"))
        .args(["sim", "--fail-rate", "1.5"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn sim_serves_no_call_that_starts_after_the_present() {
    use callstats_domain::calendar::{DateRange, Day};
    use time::OffsetDateTime;
    use time::format_description::well_known::Rfc3339;

    let utc = |unix| {
        OffsetDateTime::from_unix_timestamp(unix)
            .unwrap()
            .format(&Rfc3339)
            .unwrap()
    };
    let whole_day = |day: Day| {
        let (from, to) = DateRange::up_to_31_days(day, day).unwrap().unix_window();
        format!("/calls?from={}&to={}&limit=1000", utc(from), utc(to))
    };
    let calls = |body: &str| -> Vec<serde_json::Value> {
        let page: serde_json::Value =
            serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body}"));
        page["calls"].as_array().unwrap().clone()
    };
    let sim = Sim::start(&[]);
    let today = Day::new(callstats_domain::tz::to_tashkent(OffsetDateTime::now_utc()).date());

    for path in [
        whole_day(today.plus_days(1).unwrap()),
        "/calls?from=9999-12-31T00:00:00%2B05:00&to=9999-12-31T23:59:59%2B05:00".to_owned(),
    ] {
        let (status, body) = sim.get(&path, None);
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(calls(&body).len(), 0, "{path}");
    }

    // Today's calls (at most about 220 at this volume: one page) started by the answer.
    let (status, body) = sim.get(&whole_day(today), None);
    let answered = OffsetDateTime::now_utc();
    assert_eq!(status, 200, "{body}");
    for call in calls(&body) {
        let started =
            OffsetDateTime::parse(call["started_at"].as_str().unwrap(), &Rfc3339).unwrap();
        assert!(
            started <= answered,
            "{call} started after the answer ({answered})"
        );
    }
}
