use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

use actix_web::test::TestRequest;

use crate::helpers::*;

#[actix_web::test]
async fn malformed_parameters_are_400_naming_the_parameter() {
    let scopes = "calls,operators,scripts,kpi:aggregate";
    let (_, key, service) = TestApp::new().serve(scopes, 1000).await;
    let cases = [
        ("/api/v1/calls/summary", "missing query parameter 'start'"),
        ("/api/v1/calls/agents", "missing query parameter 'start'"),
        (
            "/api/v1/calls/summary?start=2026-02-30",
            "invalid query parameter 'start' \"2026-02-30\"",
        ),
        (
            "/api/v1/calls/summary?start=2026-11-05&end=2026-11-04",
            "query parameter 'end' (2026-11-04) is before",
        ),
        (
            "/api/v1/calls/summary?start=2026-11-05&direction=Inbound",
            "invalid query parameter 'direction'",
        ),
        (
            "/api/v1/calls/summary?start=2026-11-05&direction=",
            "query parameter 'direction' is empty",
        ),
        (
            "/api/v1/calls/agents?start=2026-11-05&direction=sideways",
            "invalid query parameter 'direction'",
        ),
        (
            "/api/v1/calls/summary?start=2026-11-05&start=2026-11-06",
            "query parameter 'start' is given more than once",
        ),
        ("/api/v1/schedule", "missing query parameter 'month'"),
        (
            "/api/v1/schedule?month=2026-13",
            "invalid query parameter 'month' \"2026-13\"",
        ),
        (
            "/api/v1/kpi/2026-00",
            "invalid path segment 'month' \"2026-00\"",
        ),
        (
            "/api/v1/scripts/stats?limit=0",
            "invalid query parameter 'limit' \"0\"",
        ),
        (
            "/api/v1/scripts/stats?limit=101",
            "invalid query parameter 'limit'",
        ),
        (
            "/api/v1/scripts/stats?limit=",
            "query parameter 'limit' is empty",
        ),
        (
            "/api/v1/calls/summary?start=%E2%80%8B2026-11-05",
            "invalid query parameter 'start'",
        ),
    ];
    // The parameters of each /calls endpoint: the endpoint, its query, the error's start.
    let calls = [
        (
            "summary",
            "sl_threshold=0",
            "invalid query parameter 'sl_threshold'",
        ),
        (
            "summary",
            "sl_threshold=3601",
            "invalid query parameter 'sl_threshold'",
        ),
        (
            "summary",
            "sl_threshold=2.5",
            "invalid query parameter 'sl_threshold'",
        ),
        ("summary", "queue=", "query parameter 'queue' is empty"),
        ("summary", "compare=", "query parameter 'compare' is empty"),
        (
            "summary",
            "compare=previous_month",
            "invalid query parameter 'compare'",
        ),
        (
            "summary",
            "compare=Previous_week",
            "invalid query parameter 'compare'",
        ),
        (
            "intervals",
            "interval=45",
            "invalid query parameter 'interval'",
        ),
        (
            "intervals",
            "interval=",
            "query parameter 'interval' is empty",
        ),
        (
            "intervals",
            "interval=PT30M",
            "invalid query parameter 'interval'",
        ),
        (
            "intervals",
            "direction=Inbound",
            "invalid query parameter 'direction'",
        ),
        (
            "intervals",
            "sl_threshold=0",
            "invalid query parameter 'sl_threshold'",
        ),
        ("intervals", "queue=", "query parameter 'queue' is empty"),
        (
            "trend",
            "granularity=year",
            "invalid query parameter 'granularity'",
        ),
        (
            "trend",
            "granularity=",
            "query parameter 'granularity' is empty",
        ),
        (
            "trend",
            "granularity=Week",
            "invalid query parameter 'granularity'",
        ),
        (
            "trend",
            "short_abandon=601",
            "invalid query parameter 'short_abandon'",
        ),
        ("trend", "queue=", "query parameter 'queue' is empty"),
    ]
    .map(|(endpoint, query, message)| {
        let uri = format!("/api/v1/calls/{endpoint}?start=2026-11-02&{query}");
        (uri, message)
    });
    // And the start and end they share.
    let periods = ["intervals", "trend"].into_iter().flat_map(|endpoint| {
        let uri = |query: &str| format!("/api/v1/calls/{endpoint}{query}");
        [
            (uri(""), "missing query parameter 'start'"),
            (
                uri("?start=2026-11-03&end=2026-11-02"),
                "query parameter 'end' (2026-11-02) is before",
            ),
            (
                uri("?start=2026-02-30"),
                "invalid query parameter 'start' \"2026-02-30\"",
            ),
        ]
    });
    let cases = cases.map(|(uri, message)| (uri.to_owned(), message));
    for (uri, message) in cases.into_iter().chain(calls).chain(periods) {
        let answer = ask(&service, &uri, &key).await;
        assert_eq!(answer.status, 400, "{uri}");
        let error = answer.error();
        assert!(error.starts_with(message), "{uri}: {error}");
        assert_eq!(
            answer.header("content-type"),
            "application/json; charset=utf-8"
        );
        assert_eq!(answer.header("x-cache"), "MISS");
    }
}

#[actix_web::test]
async fn months_without_a_published_sheet_or_shift_are_404() {
    let (_, key, service) = TestApp::new().serve("kpi:detail", 120).await;
    let draft_only = ask(&service, "/api/v1/kpi/2026-10", &key).await;
    let expected = "no published KPI sheet for 2026-10";
    assert_eq!(
        (draft_only.status, draft_only.error()),
        (404, expected.into())
    );
    let unknown_shift = ask(&service, "/api/v1/kpi/2026-11?shift=evening", &key).await;
    let expected = "no published KPI sheet for 2026-11 with shift 'evening'; shifts published for 2026-11: 'day', 'night'";
    assert_eq!(
        (unknown_shift.status, unknown_shift.error()),
        (404, expected.into())
    );
    assert_eq!(unknown_shift.header("x-ratelimit-limit"), "120");
}

#[actix_web::test]
async fn upstream_and_database_failures_are_503_with_their_messages() {
    let (app, key, service) = TestApp::new().serve("calls,operators", 120).await;
    app.platform.down.store(true, Ordering::SeqCst);
    let unavailable = |error: &str| (503, serde_json::json!({ "error": error }));
    let upstream = ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    assert_eq!(
        (upstream.status, upstream.json()),
        unavailable("the upstream call platform is unavailable")
    );
    let roster = ask(&service, "/api/v1/operators", &key).await;
    assert_eq!(
        roster.status, 200,
        "other endpoints are unaffected by the upstream"
    );
    app.store.down.store(true, Ordering::SeqCst);
    let database = ask(&service, "/api/v1/schedule?month=2026-11", &key).await;
    assert_eq!(
        (database.status, database.json()),
        unavailable("portal database unavailable")
    );
}

#[actix_web::test]
async fn a_failing_handler_answers_500_json_and_the_server_keeps_serving() {
    let (app, key, service) = TestApp::new().serve("operators", 120).await;
    assert_eq!(ask(&service, "/api/v1/ping", &key).await.status, 200);
    app.store.panics.store(true, Ordering::SeqCst);
    let failed = ask(&service, "/api/v1/schedule?month=2026-11", &key).await;
    assert_eq!(
        (failed.status, failed.json()),
        (500, serde_json::json!({"error": "internal server error"}))
    );
    // The request was admitted before the handler failed: its headers say so.
    assert_eq!(failed.header("x-ratelimit-remaining"), "118");
    let reset = failed.header("x-ratelimit-reset");
    assert_eq!(
        failed.header("ratelimit"),
        format!("\"minute\";r=118;t={reset}, \"days\";r=124;t={reset}")
    );
    assert_eq!(failed.header("cache-status"), "callstats; fwd=miss");
    assert_eq!(failed.header("cache-control"), "no-store");
    app.store.panics.store(false, Ordering::SeqCst);
    assert_eq!(
        ask(&service, "/api/v1/schedule?month=2026-11", &key)
            .await
            .status,
        200
    );
}

/// Every log line of this test binary: a global subscriber, because tracing caches whether a
/// call site is enabled process-wide, which a thread's own subscriber cannot rely on while
/// other tests run. Tests find their lines by request id. It is tracing-subscriber's fmt layer,
/// as the service's text format is (`callstats::logging`), which quotes text fields
/// (`request_id="…"`).
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().unwrap().flush()
    }
}

impl Logged {
    /// Everything logged so far.
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    /// The lines logged so far with `text`, for the request `answer` answered.
    fn lines_of(&self, answer: &Answer, text: &str) -> Vec<String> {
        let id = format!("request_id=\"{}\"", answer.header("x-request-id"));
        let of_the_request = |line: &&str| line.contains(text) && line.contains(&id);
        let log = self.text();
        log.lines()
            .filter(of_the_request)
            .map(str::to_owned)
            .collect()
    }
}

fn logged() -> &'static Logged {
    static LOGGED: OnceLock<Logged> = OnceLock::new();
    LOGGED.get_or_init(|| {
        let logged = Logged::default();
        let writer = logged.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone());
        tracing::subscriber::set_global_default(subscriber.finish())
            .expect("the only subscriber of this test binary");
        logged
    })
}

#[actix_web::test]
async fn a_failing_handler_is_logged_with_its_cause_and_the_request_id_of_the_answer() {
    let logged = logged();
    let (app, key, service) = TestApp::new().serve("operators", 120).await;
    app.store.panics.store(true, Ordering::SeqCst);
    let failed = ask(&service, "/api/v1/schedule?month=2026-11", &key).await;
    assert_eq!(failed.status, 500);
    assert!(!String::from_utf8_lossy(&failed.body).contains("store exploded"));
    // Other tests of this binary log their own failures: this one's carry its request id.
    let failure = logged.lines_of(&failed, "request handler failed");
    assert_eq!(failure.len(), 1, "{}", logged.text());
    for part in ["ERROR", "store exploded", "path=\"/api/v1/schedule\""] {
        assert!(failure[0].contains(part), "{part}: {}", failure[0]);
    }
    // The request line of the same request follows, with the same id and status.
    let requests = logged.lines_of(&failed, " request ");
    assert!(
        requests.iter().any(|line| line.contains("status=500")),
        "{}",
        logged.text()
    );
}

/// Paths of each kind (the API's, the document, operations) that answer GET alone.
const GET_ONLY: [&str; 5] = [
    "/api/v1/ping",
    "/api/v1/kpi/2026-11",
    "/api/v1/openapi.json",
    "/healthz",
    "/readyz",
];

#[actix_web::test]
async fn unknown_paths_are_404_and_other_methods_405_with_allow_get() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    let missing = ask(&service, "/api/v1/nope", &key).await;
    assert_eq!(
        (missing.status, missing.error()),
        (404, "no such endpoint: /api/v1/nope".to_owned())
    );
    assert_eq!(missing.header("x-ratelimit-limit"), "120");
    for uri in GET_ONLY {
        let post = get_with_api_key(uri, &key.secret).method(actix_web::http::Method::POST);
        let post = send(&service, post).await;
        assert_eq!(post.status_with("allow"), (405, "GET"), "{uri}");
        assert!(post.error().contains("use GET"));
    }
    let no_key = send(&service, TestRequest::delete().uri("/api/v1/ping")).await;
    assert_eq!(no_key.status, 401, "the key is checked first");
}

#[actix_web::test]
async fn a_cors_preflight_is_405_saying_cors_is_not_offered_without_a_key_on_any_path() {
    let app = TestApp::new();
    let pinned = app.key(1, "calls", 120, Some("dash.example"));
    let service = app.service().await;
    let preflight = |uri: &str| {
        TestRequest::default()
            .method(actix_web::http::Method::OPTIONS)
            .uri(uri)
            .insert_header(("Origin", "https://dash.example"))
            .insert_header(("Access-Control-Request-Method", "GET"))
            .insert_header(("Access-Control-Request-Headers", "x-api-key"))
    };
    for uri in [
        "/api/v1/calls/summary?start=2026-11-20",
        "/api/v1/kpi/2026-11",
        "/api/v1/nope",
        "/healthz",
    ] {
        let answer = send(&service, preflight(uri)).await;
        assert_eq!(answer.status_with("allow"), (405, "GET"), "{uri}");
        let error = answer.error();
        assert!(
            error.starts_with("CORS is not offered: API keys must be kept server-side"),
            "{error}"
        );
        assert_eq!(answer.header("cache-control"), "no-store");
        assert_eq!(
            answer.header("x-ratelimit-limit"),
            "60",
            "the address's quota"
        );
        assert!(
            answer
                .headers
                .keys()
                .all(|name| !name.as_str().starts_with("access-control-")),
            "{uri}: no CORS header promises what is not offered"
        );
    }
    // Without Access-Control-Request-Method an OPTIONS is any other method: the key first.
    let options = TestRequest::default()
        .method(actix_web::http::Method::OPTIONS)
        .uri("/api/v1/ping");
    assert_eq!(send(&service, options).await.status, 401);
    let with_key = get("/api/v1/ping", &pinned).method(actix_web::http::Method::OPTIONS);
    let with_key = send(&service, with_key).await;
    assert_eq!(
        (with_key.status, with_key.error()),
        (405, "method OPTIONS not allowed: use GET".to_owned())
    );
}

#[actix_web::test]
async fn a_503_is_logged_once_with_its_cause_and_request_id_and_the_body_keeps_it_out() {
    let logged = logged();
    let (app, key, service) = TestApp::with(portal(), FakePlatform::failing(), false)
        .serve("calls,operators", 120)
        .await;
    let upstream = ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    app.store.down.store(true, Ordering::SeqCst);
    // The key is reused from the key cache; the roster read fails.
    let store = ask(&service, "/api/v1/operators", &key).await;
    for (answer, cause) in [
        (&upstream, "HTTP 502 from upstream"),
        (&store, "connection refused"),
    ] {
        assert_eq!(answer.status, 503);
        assert!(!String::from_utf8_lossy(&answer.body).contains(cause));
        let lines = logged.lines_of(answer, "dependency unavailable");
        assert_eq!(lines.len(), 1, "{}", logged.text());
        assert!(
            lines[0].contains("WARN") && lines[0].contains(cause),
            "{}",
            lines[0]
        );
    }
}

#[actix_web::test]
async fn the_503_line_of_a_failing_store_carries_every_error_under_it() {
    let logged = logged();
    let (app, key, service) = TestApp::new().serve("operators", 120).await;
    // The key is looked up once, then reused from the key cache; the roster read fails.
    assert_eq!(ask(&service, "/api/v1/ping", &key).await.status, 200);
    app.store.down.store(true, Ordering::SeqCst);
    let failed = ask(&service, "/api/v1/operators", &key).await;
    assert_eq!(failed.status, 503);
    let lines = logged.lines_of(&failed, "dependency unavailable");
    let line = lines.first().unwrap_or_else(|| panic!("{}", logged.text()));
    assert!(
        line.contains(
            "cause=\"portal database unavailable: portal store unavailable: query failed: \
             connection refused\""
        ),
        "the store's own error and the driver's under it: {line}"
    );
}

#[actix_web::test]
async fn an_adapters_warning_names_the_request_it_was_logged_for() {
    let logged = logged();
    let app = TestApp::with(portal(), FakePlatform::failing(), false);
    let (_, key, service) = app.serve("calls", 120).await;
    let failed = ask(&service, "/api/v1/calls/summary?start=2026-11-04", &key).await;
    assert_eq!(failed.status, 503);
    // The platform is asked in the day's fetch, a task of its own: the request's span went
    // with it.
    let span = format!(
        "request{{request_id=\"{}\"}}",
        failed.header("x-request-id")
    );
    let warnings = logged.lines_of(&failed, "fake call platform down");
    assert!(
        warnings
            .iter()
            .any(|line| line.contains("WARN") && line.contains(&span)),
        "{}",
        logged.text()
    );
}

#[actix_web::test]
async fn head_is_another_method_405_with_allow_get_and_unknown_paths_stay_404() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    for uri in GET_ONLY {
        let head = get(uri, &key).method(actix_web::http::Method::HEAD);
        let head = send(&service, head).await;
        assert_eq!(head.status_with("allow"), (405, "GET"), "{uri}");
    }
    for uri in ["/api/v1", "/api/v1/", "/api/v1ping", "/api/v1/ping/"] {
        let missing = ask(&service, uri, &key).await;
        assert_eq!(
            (missing.status, missing.error()),
            (404, format!("no such endpoint: {uri}")),
            "{uri}"
        );
    }
}
