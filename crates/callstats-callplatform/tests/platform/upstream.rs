//! The adapter against a mock upstream: paging, data checks, bounds, retries, the breaker and
//! the token.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use callstats_callplatform::HttpPlatformConfig;
use callstats_domain::error::cause_chain;
use callstats_domain::model::CallRecord;
use callstats_domain::params::Direction;
use callstats_domain::ports::{CallPlatform, UpstreamError, UpstreamFailure};
use serde_json::json;
use time::macros::datetime;
use wiremock::matchers::{header, method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{
    CapturedLogs, TOKEN, answer_first_get, answer_gets, breaker_config, call, page, platform,
    range, test_config, upstream_answering,
};

/// Fetches the calls of 2026-11-01 through a platform with `config`.
async fn fetch_day(config: HttpPlatformConfig) -> Result<Vec<CallRecord>, UpstreamError> {
    platform(config)
        .calls(range("2026-11-01", "2026-11-01"))
        .await
        .map(|fetched| fetched.records().collect())
}

/// Asserts the records start at `expected`, in this order.
fn assert_starts(records: &[CallRecord], expected: &[time::OffsetDateTime]) {
    let starts: Vec<i64> = records.iter().map(|r| r.started_at).collect();
    let expected: Vec<i64> = expected.iter().map(|at| at.unix_timestamp()).collect();
    assert_eq!(starts, expected);
}

/// Requests the mock received so far.
async fn received(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn follows_cursors_to_the_last_page_and_returns_every_call() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/calls"))
        .and(query_param("from", "2026-11-01T00:00:00+05:00"))
        .and(query_param("to", "2026-11-02T00:00:00+05:00"))
        .and(query_param("limit", "1000"))
        .and(query_param_is_missing("cursor"))
        .respond_with(page(
            &[
                call("c-1", "2026-11-01T09:00:00+05:00"),
                call("c-2", "2026-11-01T10:00:00+05:00"),
            ],
            Some("page 2/opaque+="),
        ))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/calls"))
        .and(query_param("cursor", "page 2/opaque+="))
        .and(query_param("from", "2026-11-01T00:00:00+05:00"))
        .respond_with(page(&[call("c-3", "2026-11-01T11:00:00+05:00")], None))
        .expect(1)
        .mount(&server)
        .await;

    let records = fetch_day(test_config(server.uri())).await.unwrap();

    assert_starts(
        &records,
        &[
            datetime!(2026-11-01 09:00 +5),
            datetime!(2026-11-01 10:00 +5),
            datetime!(2026-11-01 11:00 +5),
        ],
    );
    assert_eq!(records[0].agent_number.as_ref().unwrap().as_str(), "101");
    assert_eq!(records[0].direction, Direction::Inbound);
    assert!((records[0].duration_seconds - 60.5).abs() < f64::EPSILON);
}

#[tokio::test]
async fn sends_the_window_from_tashkent_midnight_to_the_midnight_after_the_end() {
    let server = upstream_answering(page(&[], None)).await;

    platform(test_config(server.uri()))
        .calls(range("2026-11-01", "2026-11-02"))
        .await
        .unwrap();

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].url.path(), "/calls");
    assert_eq!(
        requests[0].url.query(),
        Some("from=2026-11-01T00:00:00%2B05:00&to=2026-11-03T00:00:00%2B05:00&limit=1000")
    );
}

#[tokio::test]
async fn sends_the_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(page(&[call("c-1", "2026-11-01T09:00:00+05:00")], None))
        .expect(1)
        .mount(&server)
        .await;
    // Anything without the token would get wiremock's 404, which is unavailable.
    let records = fetch_day(test_config(server.uri())).await.unwrap();
    assert_eq!(records.len(), 1);
}

#[tokio::test]
async fn counts_a_repeated_id_once() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(query_param_is_missing("cursor"))
        .respond_with(page(
            &[
                call("c-1", "2026-11-01T09:00:00+05:00"),
                call("c-2", "2026-11-01T09:30:00+05:00"),
                call("c-1", "2026-11-01T09:00:00+05:00"),
            ],
            Some("2"),
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("cursor", "2"))
        .respond_with(page(
            &[
                call("c-2", "2026-11-01T09:30:00+05:00"),
                call("c-3", "2026-11-01T10:00:00+05:00"),
            ],
            None,
        ))
        .mount(&server)
        .await;

    let records = fetch_day(test_config(server.uri())).await.unwrap();
    assert_eq!(records.len(), 3);
}

#[tokio::test]
async fn converts_any_offset_to_the_same_instant() {
    let server = upstream_answering(page(
        &[
            // Tashkent midnight, the first instant of the window.
            call("z", "2026-10-31T19:00:00Z"),
            call("utc", "2026-11-01T04:00:00+00:00"),
            call("minus5", "2026-11-01T08:00:00-05:00"),
            call("fraction", "2026-11-01T12:34:56.789+05:00"),
            // 23:59:59 in Tashkent, the last second of the window.
            call("last", "2026-11-01T18:59:59z"),
        ],
        None,
    ))
    .await;

    let records = fetch_day(test_config(server.uri())).await.unwrap();

    assert_starts(
        &records,
        &[
            datetime!(2026-11-01 00:00 +5),
            datetime!(2026-11-01 09:00 +5),
            datetime!(2026-11-01 18:00 +5),
            datetime!(2026-11-01 12:34:56 +5),
            datetime!(2026-11-01 23:59:59 +5),
        ],
    );
}

#[tokio::test]
async fn ignores_calls_outside_the_window() {
    let server = upstream_answering(page(
        &[
            call("day-before", "2026-10-31T23:59:59+05:00"),
            call("day-before-utc", "2026-10-31T18:59:59Z"),
            call("inside", "2026-11-01T12:00:00+05:00"),
            call("midnight-after", "2026-11-02T00:00:00+05:00"),
            call("next-day-utc", "2026-11-01T19:00:00Z"),
            call("far-away", "2024-01-01T12:00:00+05:00"),
        ],
        None,
    ))
    .await;

    let records = fetch_day(test_config(server.uri())).await.unwrap();

    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].started_at,
        datetime!(2026-11-01 12:00 +5).unix_timestamp()
    );
}

#[tokio::test]
async fn unanswered_calls_keep_no_agent() {
    let server = upstream_answering(page(
        &[
            json!({"id": "c-1", "direction": "outbound", "agent_number": null,
                        "started_at": "2026-11-01T09:00:00+05:00", "duration_seconds": 0.0}),
        ],
        None,
    ))
    .await;
    let records = fetch_day(test_config(server.uri())).await.unwrap();
    assert_eq!(records[0].agent_number, None);
    assert_eq!(records[0].direction, Direction::Outbound);
}

#[tokio::test]
async fn a_malformed_record_makes_the_answer_unavailable_and_logs_why() {
    let logs = CapturedLogs::start();
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(page(
            &[
                call("good", "2026-11-01T09:00:00+05:00"),
                call("bad", "yesterday at nine"),
            ],
            None,
        ))
        .expect(1)
        .mount(&server)
        .await;

    let error = fetch_day(test_config(server.uri())).await.unwrap_err();

    assert!(error.reason.contains("started_at"), "{error}");
    assert!(error.reason.contains("\"bad\""), "{error}");
    let logged = logs.text();
    assert!(
        logged.contains("call platform unavailable") && logged.contains("yesterday at nine"),
        "{logged}"
    );
    assert!(
        logged.contains("start=2026-11-01"),
        "the line names the day: {logged}"
    );
}

#[tokio::test]
async fn a_page_that_is_not_the_contracts_json_is_unavailable_without_retry() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": []})))
        .expect(1)
        .mount(&server)
        .await;
    let error = fetch_day(test_config(server.uri())).await.unwrap_err();
    assert!(error.reason.contains("not the contract's JSON"), "{error}");
    // The parser's own error is kept under it.
    let chain = cause_chain(&error);
    assert!(chain.contains("JSON: missing field `calls`"), "{chain}");
}

#[tokio::test]
async fn a_page_larger_than_the_limit_is_unavailable() {
    let server = upstream_answering(page(
        &vec![call("c-1", "2026-11-01T09:00:00+05:00"); 50],
        None,
    ))
    .await;
    let mut config = test_config(server.uri());
    config.max_page_bytes = 1024;
    let error = fetch_day(config).await.unwrap_err();
    assert!(error.reason.contains("larger than 1024 bytes"), "{error}");
}

#[tokio::test]
async fn a_5xx_is_retried_and_the_next_answer_used() {
    let server = MockServer::start().await;
    answer_first_get(&server, ResponseTemplate::new(502)).await;
    answer_gets(
        &server,
        page(&[call("c-1", "2026-11-01T09:00:00+05:00")], None),
    )
    .await;

    let records = fetch_day(test_config(server.uri())).await.unwrap();

    assert_eq!(records.len(), 1);
    assert_eq!(received(&server).await, 2);
}

#[tokio::test]
async fn a_5xx_throughout_is_unavailable_after_the_bounded_attempts() {
    let server = upstream_answering(ResponseTemplate::new(503)).await;
    let mut config = test_config(server.uri());
    config.max_retries = 2;

    let error = fetch_day(config).await.unwrap_err();

    assert!(error.reason.contains("after 3 attempt(s)"), "{error}");
    // The last attempt's failure is the reason's source.
    assert!(
        cause_chain(&error).ends_with("after 3 attempt(s): answered HTTP 503 Service Unavailable"),
        "{}",
        cause_chain(&error)
    );
    assert_eq!(received(&server).await, 3, "one attempt and two retries");
}

#[tokio::test]
async fn a_401_is_unavailable_after_exactly_one_request() {
    let server =
        upstream_answering(ResponseTemplate::new(401).set_body_json(json!({"error": "bad token"})))
            .await;

    let error = fetch_day(test_config(server.uri())).await.unwrap_err();

    assert!(error.reason.contains("401"), "{error}");
    assert_eq!(received(&server).await, 1, "a 4xx is never retried");
}

#[tokio::test]
async fn a_slow_page_is_retried_after_the_request_timeout() {
    let server = MockServer::start().await;
    answer_first_get(&server, page(&[], None).set_delay(Duration::from_secs(3))).await;
    answer_gets(
        &server,
        page(&[call("c-1", "2026-11-01T09:00:00+05:00")], None),
    )
    .await;
    let mut config = test_config(server.uri());
    config.request_timeout = Duration::from_millis(200);

    let records = fetch_day(config).await.unwrap();

    assert_eq!(records.len(), 1);
    assert_eq!(received(&server).await, 2);
}

#[tokio::test]
async fn a_hanging_upstream_is_unavailable_within_the_whole_fetch_deadline() {
    let server = upstream_answering(page(&[], None).set_delay(Duration::from_secs(30))).await;
    let mut config = test_config(server.uri());
    config.request_timeout = Duration::from_millis(400);
    config.max_retries = 10;
    config.fetch_timeout = Duration::from_millis(700);

    let started = Instant::now();
    let error = fetch_day(config).await.unwrap_err();
    let took = started.elapsed();

    assert!(error.reason.contains("longer than 700 ms"), "{error}");
    // The bound is the behaviour: the deadline plus a generous margin for a loaded machine.
    assert!(took < Duration::from_millis(700 + 2_000), "took {took:?}");
    assert!(
        received(&server).await <= 2,
        "cut off during the second attempt"
    );
}

#[tokio::test]
async fn a_connection_refused_is_unavailable() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let error = fetch_day(test_config(format!("http://127.0.0.1:{port}")))
        .await
        .unwrap_err();
    assert!(error.reason.contains("after 3 attempt(s)"), "{error}");
    // reqwest's error and every error under it, down to the refused connection.
    let chain = cause_chain(&error);
    assert!(
        chain.contains("after 3 attempt(s): could not connect: error sending request: "),
        "{chain}"
    );
    assert!(chain.contains("refused"), "{chain}");
    assert!(!chain.contains("from="), "no request URL: {chain}");
}

#[tokio::test]
async fn a_cursor_seen_twice_stops_with_unavailable() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(query_param_is_missing("cursor"))
        .respond_with(page(&[call("c-1", "2026-11-01T09:00:00+05:00")], Some("a")))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("cursor", "a"))
        .respond_with(page(&[call("c-2", "2026-11-01T09:10:00+05:00")], Some("b")))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("cursor", "b"))
        .respond_with(page(&[call("c-3", "2026-11-01T09:20:00+05:00")], Some("a")))
        .mount(&server)
        .await;

    let error = fetch_day(test_config(server.uri())).await.unwrap_err();

    assert!(error.reason.contains("cursor \"a\""), "{error}");
    assert_eq!(received(&server).await, 3);
}

#[tokio::test]
async fn the_token_never_appears_in_logs_or_errors() {
    let logs = CapturedLogs::start();
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(query_param_is_missing("cursor"))
        .respond_with(page(
            &[call("c-1", "2026-11-01T09:00:00+05:00")],
            Some("next"),
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("cursor", "next"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .mount(&server)
        .await;
    let mut config = test_config(server.uri());
    config.max_retries = 1;
    let platform = platform(config.clone());

    let error = platform
        .calls(range("2026-11-01", "2026-11-01"))
        .await
        .unwrap_err();
    let refused = fetch_day(test_config("http://127.0.0.1:1"))
        .await
        .unwrap_err();

    let everything = format!(
        "{} {error:?} {} {refused:?} {platform:?} {config:?} {}",
        cause_chain(&error),
        cause_chain(&refused),
        logs.text()
    );
    // The capture saw the failures, so the absence of the token below means something.
    assert!(
        everything.contains("call platform unavailable"),
        "{everything}"
    );
    assert!(everything.contains("retrying"), "{everything}");
    assert!(!everything.contains(TOKEN), "{everything}");
    assert!(!everything.contains("never-print-me"), "{everything}");
}

#[tokio::test]
async fn the_breaker_opens_after_repeated_failures_and_lets_a_probe_through_later() {
    let server = upstream_answering(ResponseTemplate::new(500)).await;
    let config = breaker_config(server.uri(), 2, Duration::from_millis(300));
    let platform = platform(config);
    let day = range("2026-11-01", "2026-11-01");

    platform.calls(day).await.unwrap_err();
    platform.calls(day).await.unwrap_err();
    let refused = platform.calls(day).await.unwrap_err();
    assert!(refused.reason.contains("circuit open"), "{refused}");
    let retry_in = refused.retry_in.unwrap();
    assert!(
        retry_in > Duration::ZERO && retry_in <= Duration::from_millis(300),
        "when the breaker lets a probe through: {retry_in:?}"
    );
    assert_eq!(received(&server).await, 2, "the open breaker sent nothing");

    tokio::time::sleep(Duration::from_millis(400)).await;
    server.reset().await;
    answer_gets(
        &server,
        page(&[call("c-1", "2026-11-01T09:00:00+05:00")], None),
    )
    .await;

    let probe = platform.calls(day).await.unwrap();
    assert_eq!(probe.len(), 1);
    assert_eq!(received(&server).await, 1, "the probe reached the upstream");
    platform.calls(day).await.unwrap();
    assert_eq!(received(&server).await, 2, "closed again after the probe");
}

#[tokio::test]
async fn a_failed_probe_keeps_the_breaker_open() {
    let server = upstream_answering(ResponseTemplate::new(500)).await;
    let config = breaker_config(server.uri(), 1, Duration::from_millis(200));
    let platform = platform(config);
    let day = range("2026-11-01", "2026-11-01");

    platform.calls(day).await.unwrap_err();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let probe = platform.calls(day).await.unwrap_err();
    assert!(!probe.reason.contains("circuit open"), "{probe}");
    let refused = platform.calls(day).await.unwrap_err();
    assert!(refused.reason.contains("circuit open"), "{refused}");
    assert_eq!(received(&server).await, 2);
}

#[tokio::test]
async fn a_429_is_backpressure_not_retried_and_carries_its_retry_after() {
    let (_, error) = backpressure_from(429, 3).await;
    assert!(error.reason.contains("429"), "{error}");
}

/// Fetches a day from an upstream answering `status` with `Retry-After: seconds`, and asserts it
/// is backpressure carrying that delay, after one request (left to the caller to slow down).
async fn backpressure_from(status: u16, seconds: u64) -> (MockServer, UpstreamError) {
    let server = upstream_answering(
        ResponseTemplate::new(status).insert_header("Retry-After", seconds.to_string().as_str()),
    )
    .await;
    let error = fetch_day(test_config(server.uri())).await.unwrap_err();
    assert_eq!(
        error.kind,
        UpstreamFailure::Backpressure {
            retry_after: Some(Duration::from_secs(seconds))
        },
        "{error}"
    );
    assert_eq!(
        received(&server).await,
        1,
        "left to the caller to slow down"
    );
    (server, error)
}

#[tokio::test]
async fn a_503_with_retry_after_is_backpressure_and_without_it_an_outage() {
    let (server, _) = backpressure_from(503, 2).await;

    server.reset().await;
    answer_gets(&server, ResponseTemplate::new(503)).await;
    let error = fetch_day(test_config(server.uri())).await.unwrap_err();
    assert_eq!(error.kind, UpstreamFailure::Unavailable, "{error}");
    assert!(
        error.reason.contains("after 3 attempt(s)"),
        "retried: {error}"
    );
}

#[tokio::test]
async fn backpressure_with_or_without_retry_after_never_opens_the_breaker() {
    let server = MockServer::start().await;
    let mut config = test_config(server.uri());
    config.breaker_threshold = 1;
    config.breaker_open_for = Duration::from_secs(60);
    let platform = platform(config);
    let day = range("2026-11-01", "2026-11-01");
    for retry_after in [Some("1"), None, Some("Wed, 21 Oct 2015 07:28:00 GMT")] {
        server.reset().await;
        let mut answer = ResponseTemplate::new(429);
        if let Some(value) = retry_after {
            answer = answer.insert_header("Retry-After", value);
        }
        answer_gets(&server, answer).await;
        for _ in 0..3 {
            let error = platform.calls(day).await.unwrap_err();
            assert!(
                matches!(error.kind, UpstreamFailure::Backpressure { .. }),
                "{error}"
            );
        }
    }
    server.reset().await;
    answer_gets(
        &server,
        page(&[call("c-1", "2026-11-01T09:00:00+05:00")], None),
    )
    .await;
    assert_eq!(platform.calls(day).await.unwrap().len(), 1, "still closed");
}

#[tokio::test]
async fn a_burst_of_fetches_failing_together_does_not_open_the_breaker_alone() {
    let server =
        upstream_answering(ResponseTemplate::new(500).set_delay(Duration::from_millis(100))).await;
    let config = breaker_config(server.uri(), 5, Duration::from_secs(60));
    let platform = std::sync::Arc::new(platform(config));
    // Eight fetches in flight together, all failing: one burst.
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let platform = std::sync::Arc::clone(&platform);
        burst.spawn(async move { platform.calls(range("2026-11-01", "2026-11-01")).await });
    }
    for result in burst.join_all().await {
        let error = result.unwrap_err();
        assert!(!error.reason.contains("circuit open"), "{error}");
    }
    let day = range("2026-11-01", "2026-11-01");
    let next = platform.calls(day).await.unwrap_err();
    assert!(
        !next.reason.contains("circuit open"),
        "a burst is one failure: {next}"
    );
    // The upstream stays down as new fetches are tried: the breaker opens.
    for _ in 0..3 {
        platform.calls(day).await.unwrap_err();
    }
    let refused = platform.calls(day).await.unwrap_err();
    assert!(refused.reason.contains("circuit open"), "{refused}");
}

/// `count` calls on 2026-11-01, numbered from `first`, each with an agent of its own when
/// `own_agents`.
fn numbered(first: usize, count: usize, own_agents: bool) -> Vec<serde_json::Value> {
    (first..first + count)
        .map(|n| {
            let mut call = call(&format!("c-{n}"), "2026-11-01T09:00:00+05:00");
            if own_agents {
                call["agent_number"] = json!(format!("a{n}"));
            }
            call
        })
        .collect()
}

#[tokio::test]
async fn an_endless_cursor_stops_at_the_page_bound_and_the_day_is_unusable() {
    let logs = CapturedLogs::start();
    let server = MockServer::start().await;
    // Every page has one new call and a new cursor, for ever.
    let pages = std::sync::atomic::AtomicUsize::new(0);
    answer_gets(&server, move |_: &wiremock::Request| {
        let n = pages.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        page(&numbered(n, 1, false), Some(&format!("after-{n}")))
    })
    .await;
    let mut config = test_config(server.uri());
    config.bounds.pages = 7;

    let error = fetch_day(config).await.unwrap_err();

    assert_eq!(error.kind, UpstreamFailure::Unusable, "{error}");
    assert!(
        error.reason.contains("more than 7 pages")
            && error
                .reason
                .contains("CALLSTATS_CALL_PLATFORM_MAX_PAGES_PER_DAY"),
        "{error}"
    );
    assert_eq!(received(&server).await, 7, "not one request past the bound");
    let logged = logs.text();
    assert!(
        logged.contains("WARN")
            && logged.contains("the window from 2026-11-01T00:00:00+05:00 holds more than 7 pages"),
        "{logged}"
    );
}

#[tokio::test]
async fn a_day_past_its_calls_or_agents_bound_is_unusable() {
    for (own_agents, bound, expected) in [
        (
            false,
            "calls",
            "more than 4 calls (CALLSTATS_CALL_DAY_MAX_CALLS)",
        ),
        (
            true,
            "agents",
            "more than 4 agents (CALLSTATS_CALL_DAY_MAX_AGENTS)",
        ),
    ] {
        let server = upstream_answering(page(&numbered(0, 5, own_agents), None)).await;
        let mut config = test_config(server.uri());
        assert_eq!(fetch_day(config.clone()).await.unwrap().len(), 5, "{bound}");
        match bound {
            "calls" => config.bounds.calls = 4,
            _ => config.bounds.agents = 4,
        }
        let error = fetch_day(config).await.unwrap_err();
        assert_eq!(error.kind, UpstreamFailure::Unusable, "{bound}");
        assert!(error.reason.contains(expected), "{error}");
    }
}

#[tokio::test]
async fn a_call_that_breaks_the_contract_makes_the_day_unusable_never_a_null_figure() {
    let server = MockServer::start().await;
    let mut huge = call("c-1", "2026-11-01T09:00:00+05:00");
    huge["duration_seconds"] = json!(1e308);
    answer_gets(&server, page(&[huge], None)).await;
    let error = fetch_day(test_config(server.uri())).await.unwrap_err();
    assert_eq!(error.kind, UpstreamFailure::Unusable);
    assert!(error.reason.contains("duration_seconds"), "{error}");

    server.reset().await;
    answer_gets(
        &server,
        page(&[call("c-1", "2026-11-01T23:59:60+05:00")], None),
    )
    .await;
    let records = fetch_day(test_config(server.uri())).await.unwrap();
    assert_eq!(
        records[0].started_at,
        time::macros::datetime!(2026-11-01 23:59:59 +5).unix_timestamp(),
        "a leap second is the second before it"
    );
}

#[tokio::test]
async fn waits_and_queues_are_read_through_the_client_and_absent_ones_are_none() {
    let server = MockServer::start().await;
    let mut queued = call("c-1", "2026-11-01T09:00:00+05:00");
    queued["wait_seconds"] = json!(12.5);
    queued["queue"] = json!("Qo'llab-quvvatlash · support");
    answer_gets(
        &server,
        page(&[queued, call("c-2", "2026-11-01T10:00:00+05:00")], None),
    )
    .await;
    let records = fetch_day(test_config(server.uri())).await.unwrap();
    assert_eq!(records[0].wait_seconds, Some(12.5));
    assert_eq!(
        records[0].queue.as_ref().map(|q| q.as_str()),
        Some("Qo'llab-quvvatlash · support")
    );
    assert_eq!(
        (records[1].wait_seconds, records[1].queue.as_ref()),
        (None, None)
    );
}

#[tokio::test]
async fn a_day_naming_more_queues_than_a_held_day_can_index_is_unusable() {
    let server = MockServer::start().await;
    let queues = callstats_domain::call_day::MAX_QUEUES_PER_DAY;
    let calls: Vec<serde_json::Value> = (0..=queues)
        .map(|n| {
            let mut call = call(&format!("c-{n}"), "2026-11-01T09:00:00+05:00");
            call["queue"] = json!(format!("q{}", n % (queues + 1)));
            call
        })
        .collect();
    answer_gets(&server, page(&calls, None)).await;
    let error = fetch_day(test_config(server.uri())).await.unwrap_err();
    assert_eq!(error.kind, UpstreamFailure::Unusable);
    assert!(error.reason.contains("more than 16383 queues"), "{error}");

    // One queue fewer is a day like any other.
    server.reset().await;
    answer_gets(&server, page(&calls[1..], None)).await;
    assert_eq!(
        fetch_day(test_config(server.uri())).await.unwrap().len(),
        queues
    );
}
