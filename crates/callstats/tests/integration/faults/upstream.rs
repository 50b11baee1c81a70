//! The upstream call platform misbehaving: the calls endpoints answer 503 within the fetch
//! deadline, the endpoints that do not need the upstream keep answering, and the service
//! recovers on its own once the upstream does.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use callstats::app::Upstream;
use callstats_sim::{SimOptions, spawn_sim};
use callstats_store::config::Access;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::faults::harness::{
    FETCH_DEADLINE, Proxy, client, eventually, get, see, seeded_sqlite, short_upstream, start,
};
use crate::support::demo::Demo;

const SUMMARY: &str = "/api/v1/calls/summary?start=2026-11-02";
const OPERATORS: &str = "/api/v1/operators";
/// The deadline plus room for a loaded machine; an answer later than this is a hang.
const BOUND: Duration = Duration::from_millis(1500 + 2500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_upstream_gives_503_within_the_deadline_and_other_endpoints_still_answer() {
    let (db, key) = seeded_sqlite().await;
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let service = start(
        db.store(Access::ReadOnly),
        Upstream::Http(short_upstream(format!("http://{closed}"))),
    );
    let client = client();
    for _ in 0..5 {
        let (status, took) = get(&client, &service.base, SUMMARY, &key).await;
        assert_eq!(status, 503);
        assert!(took < BOUND, "503 after {took:?}");
    }
    assert_eq!(get(&client, &service.base, OPERATORS, &key).await.0, 200);
    assert_eq!(
        get(&client, &service.base, "/api/v1/kpi/months", &key)
            .await
            .0,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_slower_than_the_deadline_gives_503_within_the_deadline_while_others_answer() {
    let (db, key) = seeded_sqlite().await;
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(30)))
        .mount(&upstream)
        .await;
    let service = start(
        db.store(Access::ReadOnly),
        Upstream::Http(short_upstream(upstream.uri())),
    );
    let client = client();
    let slow = {
        let (client, base, key) = (client.clone(), service.base.clone(), key.clone());
        tokio::spawn(async move { get(&client, &base, SUMMARY, &key).await })
    };
    // While the slow fetch is in flight, the store-backed endpoints answer at once.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, took) = get(&client, &service.base, OPERATORS, &key).await;
    assert_eq!(status, 200);
    assert!(took < FETCH_DEADLINE, "operators took {took:?}");
    let (status, took) = slow.await.unwrap();
    assert_eq!(status, 503);
    assert!(
        took >= FETCH_DEADLINE.saturating_sub(Duration::from_millis(600)),
        "{took:?}"
    );
    assert!(took < BOUND, "503 after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_answering_garbage_gives_503_and_the_service_recovers_when_it_heals() {
    let (db, key) = seeded_sqlite().await;
    let client = client();
    let sim = spawn_sim(SimOptions::default()).unwrap();
    for garbage in [
        ResponseTemplate::new(200).set_body_raw("<html>not json", "application/json"),
        ResponseTemplate::new(200).set_body_raw(r#"{"unexpected":[1,2,3]}"#, "application/json"),
        ResponseTemplate::new(200)
            .set_body_raw(r#"{"records":"nope","next":7}"#, "application/json"),
        ResponseTemplate::new(200).set_body_raw(vec![0xff, 0xfe, 0x00, 0x9f], "application/json"),
        ResponseTemplate::new(302).insert_header("location", "http://127.0.0.1:1/"),
        ResponseTemplate::new(404).set_body_string("gone"),
    ] {
        let upstream = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(garbage)
            .mount(&upstream)
            .await;
        let proxy = Proxy::start(*upstream.address()).await;
        let service = start(
            db.store(Access::ReadOnly),
            Upstream::Http(short_upstream(format!("http://{}", proxy.address))),
        );
        let (status, took) = get(&client, &service.base, SUMMARY, &key).await;
        assert_eq!(status, 503);
        assert!(took < BOUND, "503 after {took:?}");
        assert_eq!(get(&client, &service.base, OPERATORS, &key).await.0, 200);
        // The upstream heals: the same service answers again, no restart.
        proxy.point_at(sim.address());
        eventually(
            &client,
            &service.base,
            SUMMARY,
            &key,
            200,
            Duration::from_secs(5),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_goes_down_and_returns_is_used_again_without_a_restart() {
    let (db, key) = seeded_sqlite().await;
    let sim = spawn_sim(SimOptions::default()).unwrap();
    let proxy = Proxy::start(sim.address()).await;
    let service = start(
        db.store(Access::ReadOnly),
        Upstream::Http(short_upstream(format!("http://{}", proxy.address))),
    );
    let client = client();
    assert_eq!(get(&client, &service.base, SUMMARY, &key).await.0, 200);
    proxy.cut();
    // Enough failures to open the breaker: it must close again by itself.
    for day in 3..9 {
        let path = format!("/api/v1/calls/summary?start=2026-11-0{day}");
        let (status, took) = get(&client, &service.base, &path, &key).await;
        assert_eq!(status, 503, "{path}");
        assert!(took < BOUND, "503 after {took:?}");
    }
    assert_eq!(get(&client, &service.base, OPERATORS, &key).await.0, 200);
    proxy.restore();
    eventually(
        &client,
        &service.base,
        "/api/v1/calls/summary?start=2026-11-09",
        &key,
        200,
        Duration::from_secs(5),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_503_of_a_failing_upstream_says_when_to_ask_again_the_open_breaker_its_period_left() {
    let (db, key) = seeded_sqlite().await;
    let sim = spawn_sim(SimOptions::default()).unwrap();
    let proxy = Proxy::start(sim.address()).await;
    let mut upstream = short_upstream(format!("http://{}", proxy.address));
    // Long enough that no probe goes through while the test asks.
    upstream.breaker_open_for = Duration::from_secs(60);
    let service = start(db.store(Access::ReadOnly), Upstream::Http(upstream));
    let client = client();
    proxy.cut();
    let mut retry_after = Vec::new();
    for day in 3..9 {
        let path = format!("/api/v1/calls/summary?start=2026-11-0{day}");
        let seen = see(&client, &service.base, &path, &key).await;
        assert_eq!(seen.status, 503, "{path}");
        retry_after.push(seen.retry_after.unwrap().parse::<u32>().unwrap());
    }
    // Three failed fetches open the breaker (`short_upstream`); it then refuses at once.
    assert_eq!(retry_after[..3], [10, 10, 10], "{retry_after:?}");
    assert!(
        retry_after[3..].iter().all(|secs| (50..=60).contains(secs)),
        "the breaker's open period left: {retry_after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flapping_upstream_gives_only_200s_and_503s_and_the_service_settles_when_it_stops() {
    let (db, key) = seeded_sqlite().await;
    let sim = spawn_sim(SimOptions::default()).unwrap();
    let proxy = std::sync::Arc::new(Proxy::start(sim.address()).await);
    let service = start(
        db.store(Access::ReadOnly),
        Upstream::Http(short_upstream(format!("http://{}", proxy.address))),
    );
    let client = client();
    let flapping = {
        let proxy = std::sync::Arc::clone(&proxy);
        tokio::spawn(async move {
            for _ in 0..12 {
                proxy.cut();
                tokio::time::sleep(Duration::from_millis(150)).await;
                proxy.restore();
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        })
    };
    let (mut ok, mut unavailable) = (0, 0);
    let started = Instant::now();
    let mut day = 0_u32;
    while !flapping.is_finished() {
        day = day % 28 + 1;
        let path = format!("/api/v1/calls/summary?start=2026-10-{day:02}");
        let (status, took) = get(&client, &service.base, &path, &key).await;
        match status {
            200 => ok += 1,
            503 => unavailable += 1,
            other => panic!("{path} answered {other} while the upstream flapped"),
        }
        assert!(took < BOUND, "{path} took {took:?}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "flapping never ended"
        );
    }
    assert!(
        unavailable > 0,
        "the flapping never reached the service ({ok} answers)"
    );
    eventually(
        &client,
        &service.base,
        "/api/v1/calls/summary?start=2026-09-01",
        &key,
        200,
        Duration::from_secs(5),
    )
    .await;
}

/// The call platform's warning is written on the day's fetch, a task of its own, and still
/// names the request it failed, in either log format and under a filter that keeps only
/// warnings (`demo`'s in these tests); the request's 503 line carries the whole cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstreams_warning_names_the_request_it_failed_in_either_log_format() {
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    for format in ["text", "json"] {
        let demo = Demo::start(&format!("request-span-{format}"), |_, command| {
            command
                .env("CALLSTATS_CALL_PLATFORM_URL", format!("http://{closed}"))
                .env("CALLSTATS_LOG_FORMAT", format)
                // The request's own fetch, not one the warmer started and it joined.
                .env("CALLSTATS_CALL_DAY_WARM_DAYS", "0");
        });
        let answer = client()
            .get(format!("{}{SUMMARY}", demo.base()))
            .bearer_auth(&demo.key)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 503, "{format}");
        let id = answer.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let names_the_request = |line: &str| match format {
            "text" => {
                line.contains(" WARN request{")
                    && line.contains(&format!("request{{request_id={id}}}"))
                    && line.contains("call platform unavailable")
            }
            _ => serde_json::from_str::<serde_json::Value>(line).is_ok_and(|line| {
                line["level"] == "WARN"
                    && line["message"] == "call platform unavailable"
                    && line["spans"][0]["name"] == "request"
                    && line["spans"][0]["request_id"] == id.as_str()
            }),
        };
        let carries_the_cause = |line: &str| {
            line.contains("dependency unavailable")
                && line.contains(&id)
                && line.contains("could not connect: error sending request: ")
                && line.contains("Connection refused")
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let logs = demo.log_text();
            if logs.lines().any(names_the_request) && logs.lines().any(carries_the_cause) {
                break;
            }
            assert!(Instant::now() < deadline, "{format}: {logs}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            !demo.log_text().contains("from="),
            "no request URL is logged"
        );
    }
}
