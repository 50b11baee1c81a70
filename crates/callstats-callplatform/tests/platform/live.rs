//! The adapter's `/live` against a mock upstream: the answer read, 404 as "no live figures",
//! outages, its own breaker, every rule of the contract and its bounds, the token.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use callstats_callplatform::HttpPlatformConfig;
use callstats_callplatform::wire::live::MAX_LIVE_BYTES;
use callstats_domain::error::cause_chain;
use callstats_domain::live::{
    AgentState, LiveError, LiveSnapshot, MAX_LIVE_AGENTS, MAX_LIVE_QUEUES,
};
use callstats_domain::ports::{CallPlatform, UpstreamError, UpstreamFailure};
use serde_json::{Value, json};
use time::macros::datetime;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{
    TOKEN, answer_first_get, breaker_config, call, page, platform, range, test_config,
};

/// The contract's example answer.
fn good() -> Value {
    json!({
        "as_of": "2026-11-21T09:15:22+05:00",
        "queues": [
            {"queue": "sales", "waiting": 3, "oldest_wait_seconds": 41.5},
            {"queue": "support", "waiting": 0, "oldest_wait_seconds": null}
        ],
        "agents": [
            {"agent_number": "101", "state": "available",
             "since": "2026-11-21T09:10:00+05:00", "queue": null},
            {"agent_number": "102", "state": "on_call",
             "since": "2026-11-21T04:14:30.250Z", "queue": "sales"},
            {"agent_number": "103", "state": "wrap_up",
             "since": "2026-11-21T09:15:00+05:00"},
            {"agent_number": "104", "state": "away",
             "since": "2026-11-20T23:59:60+05:00", "queue": null}
        ]
    })
}

/// A server answering every `/live` with `response`.
async fn serving(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/live"))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

/// `/calls` on `server` answers one call on 2026-11-01.
async fn serve_one_call_on_calls(server: &MockServer) {
    Mock::given(method("GET"))
        .and(path("/calls"))
        .respond_with(page(&[call("c-1", "2026-11-01T09:00:00+05:00")], None))
        .mount(server)
        .await;
}

async fn read(config: HttpPlatformConfig) -> Result<LiveSnapshot, LiveError> {
    platform(config).live().await
}

/// The upstream error of an unavailable answer; fails the test on anything else.
fn unavailable(outcome: Result<LiveSnapshot, LiveError>) -> UpstreamError {
    match outcome {
        Err(LiveError::Unavailable(error)) => error,
        other => panic!("expected unavailable, got {other:?}"),
    }
}

/// Requests the mock received at `/live`.
async fn live_requests(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|request| request.url.path() == "/live")
        .count()
}

#[tokio::test]
async fn reads_the_live_answer_with_the_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/live"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(good()))
        .expect(1)
        .mount(&server)
        .await;
    // Without the token the mock answers 404, which would read as "not reported".

    let snapshot = read(test_config(server.uri())).await.unwrap();

    assert_eq!(snapshot.as_of(), datetime!(2026-11-21 09:15:22 +05:00));
    let queues: Vec<(&str, u32, Option<f64>)> = snapshot
        .queues()
        .iter()
        .map(|q| (q.queue.as_str(), q.waiting, q.oldest_wait_seconds))
        .collect();
    assert_eq!(queues, [("sales", 3, Some(41.5)), ("support", 0, None)]);
    let agents: Vec<(&str, AgentState, Option<&str>)> = snapshot
        .agents()
        .iter()
        .map(|a| {
            (
                a.agent_number.as_str(),
                a.state,
                a.queue.as_ref().map(|q| q.as_str()),
            )
        })
        .collect();
    assert_eq!(
        agents,
        [
            ("101", AgentState::Available, None),
            ("102", AgentState::OnCall, Some("sales")),
            ("103", AgentState::WrapUp, None),
            ("104", AgentState::Away, None),
        ]
    );
    let since: Vec<_> = snapshot.agents().iter().map(|a| a.since).collect();
    assert_eq!(since[1], datetime!(2026-11-21 09:14:30.25 +05:00));
    assert_eq!(
        since[3],
        datetime!(2026-11-20 23:59:59 +05:00),
        "a leap second is read as the second before it"
    );
}

#[tokio::test]
async fn a_404_means_no_live_figures_and_never_opens_a_breaker() {
    let server = serving(ResponseTemplate::new(404)).await;
    serve_one_call_on_calls(&server).await;
    let mut config = test_config(server.uri());
    config.breaker_threshold = 1;
    let platform = platform(config);

    for _ in 0..3 {
        assert_eq!(platform.live().await, Err(LiveError::NotReported));
    }
    assert_eq!(
        live_requests(&server).await,
        3,
        "one request each, none held back"
    );
    let day = platform.calls(range("2026-11-01", "2026-11-01")).await;
    assert_eq!(day.unwrap().len(), 1, "the history is fetched as ever");
}

#[tokio::test]
async fn a_5xx_is_retried_then_unavailable() {
    let server = serving(ResponseTemplate::new(500)).await;
    let mut config = test_config(server.uri());
    config.max_retries = 2;

    let error = unavailable(read(config).await);

    assert_eq!(error.kind, UpstreamFailure::Unavailable);
    assert!(
        cause_chain(&error)
            .ends_with("after 3 attempt(s): answered HTTP 500 Internal Server Error"),
        "{}",
        cause_chain(&error)
    );
    assert_eq!(
        live_requests(&server).await,
        3,
        "one attempt and two retries"
    );
}

#[tokio::test]
async fn a_5xx_then_a_good_answer_gives_the_good_answer() {
    let server = MockServer::start().await;
    answer_first_get(&server, ResponseTemplate::new(502)).await;
    Mock::given(method("GET"))
        .and(path("/live"))
        .respond_with(ResponseTemplate::new(200).set_body_json(good()))
        .mount(&server)
        .await;

    let snapshot = read(test_config(server.uri())).await.unwrap();

    assert_eq!(snapshot.agents().len(), 4);
    assert_eq!(live_requests(&server).await, 2);
}

#[tokio::test]
async fn a_hanging_upstream_is_unavailable_within_one_request_timeout_retries_included() {
    let server = serving(
        ResponseTemplate::new(200)
            .set_body_json(good())
            .set_delay(Duration::from_secs(30)),
    )
    .await;
    let mut config = test_config(server.uri());
    config.request_timeout = Duration::from_millis(400);
    config.max_retries = 10;

    let started = Instant::now();
    let error = unavailable(read(config).await);
    let took = started.elapsed();

    assert_eq!(error.kind, UpstreamFailure::Unavailable);
    // The bound is the behaviour: the timeout plus a generous margin for a loaded machine.
    assert!(took < Duration::from_millis(400 + 2_000), "took {took:?}");
    assert_eq!(live_requests(&server).await, 1, "no time left for a retry");
}

#[tokio::test]
async fn a_connection_refused_is_unavailable() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let error = unavailable(read(test_config(format!("http://127.0.0.1:{port}"))).await);
    let chain = cause_chain(&error);
    assert!(chain.contains("could not connect"), "{chain}");
    assert!(chain.contains("refused"), "{chain}");
}

#[tokio::test]
async fn a_401_is_unavailable_not_unreported_after_one_request() {
    let server = serving(ResponseTemplate::new(401)).await;
    let error = unavailable(read(test_config(server.uri())).await);
    assert!(error.reason.contains("401"), "{error}");
    assert_eq!(live_requests(&server).await, 1, "a 4xx is never retried");
}

#[tokio::test]
async fn a_429_is_backpressure_with_its_retry_after_and_never_opens_the_breaker() {
    let server = serving(ResponseTemplate::new(429).insert_header("retry-after", "7")).await;
    let mut config = test_config(server.uri());
    config.breaker_threshold = 1;
    let platform = platform(config);

    for _ in 0..3 {
        let error = unavailable(platform.live().await);
        assert_eq!(
            error.kind,
            UpstreamFailure::Backpressure {
                retry_after: Some(Duration::from_secs(7))
            }
        );
    }
    assert_eq!(live_requests(&server).await, 3, "the breaker stayed closed");
}

#[tokio::test]
async fn live_has_a_breaker_of_its_own_that_opens_on_repeated_failures() {
    let server = serving(ResponseTemplate::new(500)).await;
    serve_one_call_on_calls(&server).await;
    let config = breaker_config(server.uri(), 2, Duration::from_millis(300));
    let platform = platform(config);
    let day = range("2026-11-01", "2026-11-01");

    unavailable(platform.live().await);
    unavailable(platform.live().await);
    let refused = unavailable(platform.live().await);
    assert!(refused.reason.contains("circuit open"), "{refused}");
    let retry_in = refused.retry_in.unwrap();
    assert!(retry_in > Duration::ZERO && retry_in <= Duration::from_millis(300));
    assert_eq!(
        live_requests(&server).await,
        2,
        "the open breaker sent nothing"
    );
    assert_eq!(
        platform.calls(day).await.unwrap().len(),
        1,
        "the /calls breaker is another"
    );

    tokio::time::sleep(Duration::from_millis(400)).await;
    server.reset().await;
    Mock::given(method("GET"))
        .and(path("/live"))
        .respond_with(ResponseTemplate::new(200).set_body_json(good()))
        .mount(&server)
        .await;
    platform.live().await.unwrap();
    platform.live().await.unwrap();
    assert_eq!(live_requests(&server).await, 2, "the probe closed it again");
}

#[tokio::test]
async fn failing_day_fetches_leave_live_readable() {
    let server = serving(ResponseTemplate::new(200).set_body_json(good())).await;
    Mock::given(method("GET"))
        .and(path("/calls"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let mut config = test_config(server.uri());
    config.max_retries = 0;
    config.breaker_threshold = 1;
    let platform = platform(config);
    let day = range("2026-11-01", "2026-11-01");

    platform.calls(day).await.unwrap_err();
    let refused = platform.calls(day).await.unwrap_err();
    assert!(refused.reason.contains("circuit open"), "{refused}");
    platform.live().await.unwrap();
}

#[tokio::test]
async fn an_answer_that_breaks_a_rule_is_unavailable_after_one_request() {
    let long = json!("x".repeat(65));
    // Each case: the contract's example with the value at a JSON pointer replaced (or, with
    // `None`, removed), and what the reason names.
    let cases: [(&str, Option<Value>, &str); 20] = [
        ("/as_of", Some(json!("2026-11-21 09:15:22")), "as_of"),
        ("/as_of", Some(Value::Null), "JSON"),
        ("/agents/0/state", Some(json!("lunch")), "state \"lunch\""),
        ("/agents/0/state", Some(json!("ON_CALL")), "state"),
        ("/agents/0/since", Some(json!("09:10")), "since"),
        ("/queues/1/waiting", Some(json!(-1)), "waiting -1"),
        ("/queues/1/waiting", Some(json!(0.5)), "JSON"),
        (
            "/queues/0/oldest_wait_seconds",
            Some(json!(86_400.5)),
            "from 0 to 86400",
        ),
        (
            "/queues/0/oldest_wait_seconds",
            Some(json!(-0.1)),
            "from 0 to 86400",
        ),
        ("/queues/0/oldest_wait_seconds", Some(json!("NaN")), "JSON"),
        (
            "/queues/1/oldest_wait_seconds",
            Some(json!(0.0)),
            "exactly when someone waits",
        ),
        (
            "/queues/0/oldest_wait_seconds",
            Some(Value::Null),
            "exactly when someone waits",
        ),
        ("/queues/0/queue", Some(long.clone()), "queue"),
        ("/queues/0/queue", Some(json!("")), "queue"),
        ("/agents/1/queue", Some(json!("sa\u{1b}les")), "agents[1]"),
        ("/agents/0/agent_number", Some(long), "agent_number"),
        (
            "/agents/0/agent_number",
            Some(json!("10 1")),
            "agent_number",
        ),
        (
            "/agents/1/agent_number",
            Some(json!("101")),
            "listed more than once",
        ),
        (
            "/queues/1/queue",
            Some(json!("sales")),
            "listed more than once",
        ),
        ("/agents", None, "JSON"),
    ];
    let server = MockServer::start().await;
    for (pointer, value, expected) in cases {
        let mut body = good();
        match value {
            Some(value) => *body.pointer_mut(pointer).unwrap() = value,
            None => {
                body.as_object_mut().unwrap().remove(&pointer[1..]);
            }
        }
        server.reset().await;
        Mock::given(method("GET"))
            .and(path("/live"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&server)
            .await;
        let error = unavailable(read(test_config(server.uri())).await);
        assert_eq!(error.kind, UpstreamFailure::Unusable, "{pointer}");
        let chain = cause_chain(&error);
        assert!(chain.contains(expected), "{pointer}: {chain}");
        assert_eq!(live_requests(&server).await, 1, "{pointer}: not retried");
    }
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_unavailable() {
    let server = serving(ResponseTemplate::new(200).set_body_string("<html>live</html>")).await;
    let error = unavailable(read(test_config(server.uri())).await);
    assert!(error.reason.contains("not the contract's JSON"), "{error}");
}

/// An answer with `queues` queues and `agents` agents, every one valid.
fn sized(queues: usize, agents: usize) -> Value {
    json!({
        "as_of": "2026-11-21T09:15:22+05:00",
        "queues": (0..queues)
            .map(|i| json!({"queue": format!("queue-{i}"), "waiting": 1, "oldest_wait_seconds": 2.5}))
            .collect::<Vec<_>>(),
        "agents": (0..agents)
            .map(|i| json!({"agent_number": format!("{i}"), "state": "on_call",
                            "since": "2026-11-21T09:10:00+05:00", "queue": "queue-0"}))
            .collect::<Vec<_>>(),
    })
}

#[tokio::test]
async fn answers_hold_at_most_5000_agents_and_1000_queues() {
    let at_bounds =
        serving(ResponseTemplate::new(200).set_body_json(sized(MAX_LIVE_QUEUES, MAX_LIVE_AGENTS)))
            .await;
    let snapshot = read(test_config(at_bounds.uri())).await.unwrap();
    assert_eq!(
        (snapshot.queues().len(), snapshot.agents().len()),
        (1_000, 5_000)
    );

    for (body, expected) in [
        (sized(MAX_LIVE_QUEUES + 1, 1), "1001 queues"),
        (sized(1, MAX_LIVE_AGENTS + 1), "5001 agents"),
    ] {
        let server = serving(ResponseTemplate::new(200).set_body_json(body)).await;
        let error = unavailable(read(test_config(server.uri())).await);
        assert!(error.reason.contains(expected), "{error}");
    }
}

#[tokio::test]
async fn a_body_past_its_bound_is_unavailable() {
    // A valid answer, padded with whitespace past the bound.
    let mut body = good().to_string();
    body.push_str(&" ".repeat(MAX_LIVE_BYTES + 1 - body.len()));
    let server = serving(ResponseTemplate::new(200).set_body_string(body)).await;
    let error = unavailable(read(test_config(server.uri())).await);
    assert!(
        error
            .reason
            .contains(&format!("larger than {MAX_LIVE_BYTES} bytes")),
        "{error}"
    );

    let mut fits = good().to_string();
    fits.push_str(&" ".repeat(MAX_LIVE_BYTES - fits.len()));
    let server = serving(ResponseTemplate::new(200).set_body_string(fits)).await;
    read(test_config(server.uri())).await.unwrap();
}
