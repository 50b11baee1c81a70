//! Problem details (RFC 9457) on request: every error the service answers, as
//! `application/problem+json` when `Accept` prefers it and as `{"error": …}` otherwise; every
//! `type` resolves.

use std::sync::atomic::Ordering;

use actix_web::test::TestRequest;
use callstats_web::problem::Problem;
use serde_json::{Value, json};

use crate::helpers::*;

const PROBLEM_JSON: &str = "application/problem+json";

/// `request` with `Accept: accept`.
fn accepting(request: TestRequest, accept: &str) -> TestRequest {
    request.insert_header(("Accept", accept))
}

/// What each kind of failing request is: its problem type and a request that makes it. Built
/// again for each `Accept` (a request is used once).
fn failing(keys: &Keys) -> Vec<(Problem, TestRequest)> {
    vec![
        (
            Problem::BadRequest,
            get("/api/v1/calls/summary?start=2026-02-30", &keys.every),
        ),
        (
            Problem::Unauthorized,
            TestRequest::get().uri("/api/v1/operators"),
        ),
        (
            Problem::MissingScope,
            get("/api/v1/operators", &keys.nothing),
        ),
        (
            Problem::OriginNotAllowed,
            get("/api/v1/operators", &keys.pinned)
                .insert_header(("Origin", "https://evil.example")),
        ),
        (Problem::NotFound, get("/api/v1/kpi/2026-08", &keys.every)),
        (Problem::NotFound, get("/api/v1/nope", &keys.every)),
        (
            Problem::MethodNotAllowed,
            TestRequest::post()
                .uri("/api/v1/ping")
                .insert_header(("X-API-Key", keys.every.secret.as_str())),
        ),
        (
            Problem::UriTooLong,
            get(
                &format!("/api/v1/ping?pad={}", "a".repeat(9 * 1024)),
                &keys.every,
            ),
        ),
        (
            Problem::HeadersTooLarge,
            get("/api/v1/ping", &keys.every).insert_header(("x-padding", "b".repeat(17 * 1024))),
        ),
        (
            Problem::ContentTooLarge,
            get("/api/v1/ping", &keys.every).insert_header(("content-length", "100000")),
        ),
        (Problem::RateLimited, get("/api/v1/ping", &keys.spent)),
    ]
}

struct Keys {
    every: Key,
    nothing: Key,
    pinned: Key,
    spent: Key,
}

fn keys(app: &TestApp) -> Keys {
    Keys {
        every: app.key(1, "calls,kpi:detail,operators,scripts", 10_000, None),
        nothing: app.key(2, "", 10_000, None),
        pinned: app.key(3, "operators", 10_000, Some("dashboard.partner.example")),
        spent: app.key(4, "calls", 1, None),
    }
}

/// Checks that `answer` is the problem details of `problem`, with the `{error}` answer's
/// status and members.
fn assert_problem(answer: &Answer, problem: Problem, plain: &Answer) {
    let context = format!("{problem:?}: {:?}", answer.body);
    assert_eq!(answer.status, plain.status, "{context}");
    assert_eq!(answer.status, problem.status().as_u16(), "{context}");
    assert_eq!(answer.header("content-type"), PROBLEM_JSON, "{context}");
    let body = answer.json();
    let error = plain.json()["error"].clone();
    assert_eq!(
        body["type"],
        format!("/api/v1/problems/{}", problem.name()),
        "{context}"
    );
    assert_eq!(body["title"], problem.title(), "{context}");
    assert_eq!(body["status"], answer.status, "{context}");
    assert_eq!(body["detail"], error, "{context}");
    assert_eq!(body["error"], error, "{context}");
    assert_eq!(
        body.get("required_scope"),
        plain.json().get("required_scope"),
        "{context}"
    );
    // The same headers as the `{error}` answer, but the media type.
    for name in ["x-ratelimit-limit", "retry-after", "allow", "cache-control"] {
        assert_eq!(
            answer.headers.get(name),
            plain.headers.get(name),
            "{context}: {name}"
        );
    }
    for answer in [answer, plain] {
        assert!(
            answer
                .headers
                .get_all("vary")
                .any(|vary| vary.to_str().unwrap().contains("accept")),
            "{context}"
        );
    }
}

#[actix_web::test]
async fn every_error_is_problem_details_when_accept_prefers_them_and_error_otherwise() {
    let app = TestApp::new();
    let keys = keys(&app);
    let service = app.service().await;
    // Spend the one request of the spent key.
    assert_eq!(ask(&service, "/api/v1/ping", &keys.spent).await.status, 200);
    let plain_answers = {
        let mut answers = Vec::new();
        for (problem, request) in failing(&keys) {
            answers.push((problem, send(&service, request).await));
        }
        answers
    };
    for accept in [
        PROBLEM_JSON,
        "application/json, application/problem+json",
        "application/problem+json;q=0.9, application/json;q=0.9, */*;q=0.1",
        "text/html;q=0.9, application/problem+json",
    ] {
        let asked = failing(&keys);
        for ((problem, request), (_, plain)) in asked.into_iter().zip(&plain_answers) {
            assert_eq!(
                plain.header("content-type"),
                "application/json; charset=utf-8"
            );
            assert!(plain.json().get("type").is_none(), "{problem:?}");
            let answer = send(&service, accepting(request, accept)).await;
            assert_problem(&answer, problem, plain);
        }
    }
    // Not preferred: the `{error}` form.
    for accept in [
        "application/json",
        "*/*",
        "application/json, application/problem+json;q=0.5",
        "application/problem+json;q=0",
        "not a media type",
    ] {
        let answer = send(
            &service,
            accepting(get("/api/v1/nope", &keys.every), accept),
        )
        .await;
        assert_eq!(
            (answer.status, answer.header("content-type")),
            (404, "application/json; charset=utf-8"),
            "{accept}"
        );
        assert_eq!(
            answer.json(),
            json!({"error": "no such endpoint: /api/v1/nope"})
        );
    }
}

#[actix_web::test]
async fn failures_of_dependencies_and_handlers_are_problem_details_too() {
    let (app, key, service) = TestApp::new().serve("calls,operators", 10_000).await;
    let request = |uri: &str| accepting(get(uri, &key), PROBLEM_JSON);
    let summary = "/api/v1/calls/summary?start=2026-11-02";
    let schedule = "/api/v1/schedule?month=2026-11";

    app.platform.down.store(true, Ordering::SeqCst);
    let plain = ask(&service, summary, &key).await;
    let answer = send(&service, request(summary)).await;
    assert_problem(&answer, Problem::UpstreamUnavailable, &plain);
    app.platform.down.store(false, Ordering::SeqCst);

    app.store.down.store(true, Ordering::SeqCst);
    let plain = ask(&service, schedule, &key).await;
    let answer = send(&service, request(schedule)).await;
    assert_problem(&answer, Problem::StoreUnavailable, &plain);
    app.store.down.store(false, Ordering::SeqCst);

    app.store.panics.store(true, Ordering::SeqCst);
    let plain = ask(&service, schedule, &key).await;
    let answer = send(&service, request(schedule)).await;
    assert_problem(&answer, Problem::Internal, &plain);
}

#[actix_web::test]
async fn every_problem_type_resolves_without_a_key_and_an_unknown_one_is_404() {
    let app = TestApp::new();
    let service = app.service().await;
    for problem in Problem::ALL {
        let uri = format!("/api/v1/problems/{}", problem.name());
        let answer = send(&service, TestRequest::get().uri(&uri)).await;
        assert_eq!(answer.status, 200, "{uri}");
        let body: Value = answer.json();
        assert_eq!(body["type"], uri);
        assert_eq!(body["title"], problem.title());
        assert_eq!(body["status"], problem.status().as_u16());
        assert!(!body["description"].as_str().unwrap().is_empty());
        // Counted against the client address's quota, like the document.
        assert!(answer.headers.get("x-ratelimit-limit").is_some(), "{uri}");
    }
    let unknown = send(
        &service,
        accepting(
            TestRequest::get().uri("/api/v1/problems/nope"),
            PROBLEM_JSON,
        ),
    )
    .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["type"], "/api/v1/problems/not-found");
}
