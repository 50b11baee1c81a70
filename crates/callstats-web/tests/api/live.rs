//! /calls/live (docs/behaviour.md, "Live"): the JSON answer, its lifetime and errors, and the
//! stream.

use std::pin::Pin;
use std::sync::atomic::Ordering;

use actix_web::body::MessageBody;
use actix_web::test::TestRequest;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::helpers::*;

const LIVE: &str = "/api/v1/calls/live";

/// The keys of a JSON object, in the order written.
fn keys(value: &Value) -> Vec<&str> {
    let object = value.as_object().unwrap();
    object.keys().map(String::as_str).collect()
}

#[actix_web::test]
async fn the_live_figures_name_every_field_in_order_with_names_from_the_roster() {
    let (_, key, service) = TestApp::new().serve("calls", 100).await;
    let answer = ask(&service, LIVE, &key).await;
    assert_eq!(answer.status, 200);
    let body = answer.json();
    assert_eq!(
        keys(&body),
        ["as_of", "timezone", "totals", "queues", "agents"]
    );
    assert_eq!(body["as_of"], "2026-11-21T06:15:00.000Z");
    assert_eq!(body["timezone"], "+05:00");
    assert_eq!(
        body["totals"],
        json!({"waiting": 2, "oldest_wait_seconds": 41.25, "agents_available": 1,
               "agents_on_call": 1, "agents_wrap_up": 0, "agents_away": 1})
    );
    assert_eq!(
        keys(&body["totals"]),
        [
            "waiting",
            "oldest_wait_seconds",
            "agents_available",
            "agents_on_call",
            "agents_wrap_up",
            "agents_away"
        ]
    );
    // By callers waiting, then name; an agent's call counts for its queue.
    assert_eq!(
        body["queues"],
        json!([
            {"queue": "sales", "waiting": 2, "oldest_wait_seconds": 41.25, "agents_on_call": 1},
            {"queue": "support", "waiting": 0, "oldest_wait_seconds": null, "agents_on_call": 0},
        ])
    );
    // By agent number; named from the roster, or by number when it has no such operator.
    assert_eq!(
        body["agents"],
        json!([
            {"agent_number": "101", "name": "Oʻtkir Karimov", "state": "available",
             "since": "2026-11-21T06:12:00.000Z", "queue": null},
            {"agent_number": "102", "name": "O'tkir Rahimov", "state": "on_call",
             "since": "2026-11-21T06:12:00.000Z", "queue": "sales"},
            {"agent_number": "999", "name": "999", "state": "away",
             "since": "2026-11-21T06:12:00.000Z", "queue": null},
        ])
    );
}

#[actix_web::test]
async fn within_five_seconds_the_bytes_are_the_same_and_a_validator_gets_a_304() {
    let (app, key, service) = TestApp::new().serve("calls", 100).await;
    let first = ask(&service, LIVE, &key).await;
    assert_eq!(first.header("x-cache"), "MISS");
    assert_eq!(first.header("cache-control"), "private, max-age=5");
    *app.platform.live.lock().unwrap() = Some(live_snapshot(7));
    let second = ask(&service, LIVE, &key).await;
    assert_eq!(second.header("x-cache"), "HIT");
    assert_eq!(second.body, first.body);
    let etag = first.header("etag");
    let revalidated = send(
        &service,
        get(LIVE, &key).insert_header(("If-None-Match", etag)),
    )
    .await;
    assert_eq!(revalidated.status, 304);
    // Past the lifetime (the response cache keeps time with the system's clock, the figures
    // with the service's), the figures are asked again.
    tokio::time::sleep(std::time::Duration::from_millis(5_100)).await;
    app.clock.advance(std::time::Duration::from_secs(6));
    let third = ask(&service, LIVE, &key).await;
    assert_eq!(third.header("x-cache"), "MISS");
    assert_eq!(third.json()["totals"]["waiting"], 7);
    assert_eq!(app.platform.live_polls.load(Ordering::SeqCst), 2);
}

#[actix_web::test]
async fn no_live_figures_is_a_404_and_a_platform_down_a_503_never_stale() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 100, None);
    *app.platform.live.lock().unwrap() = None;
    let service = app.service().await;
    let absent = ask(&service, LIVE, &key).await;
    assert_eq!(absent.status, 404);
    assert_eq!(
        absent.json(),
        json!({"error": "the call platform does not report live figures"})
    );
    assert_eq!(send(&service, live_stream(&key)).await.status, 404);

    let app = TestApp::new();
    let key = app.key(1, "calls", 100, None);
    app.platform.down.store(true, Ordering::SeqCst);
    let service = app.service().await;
    let down = ask(&service, LIVE, &key).await;
    assert_eq!(down.status, 503);
    assert_eq!(down.header("retry-after"), "10");
    assert_eq!(
        down.json(),
        json!({"error": "the upstream call platform is unavailable"})
    );
    assert_eq!(send(&service, live_stream(&key)).await.status, 503);
    // Not kept: once the platform answers, so does the service.
    app.platform.down.store(false, Ordering::SeqCst);
    app.clock.advance(std::time::Duration::from_secs(3));
    assert_eq!(ask(&service, LIVE, &key).await.status, 200);
}

#[actix_web::test]
async fn csv_alone_is_a_406_naming_json_and_the_stream() {
    let (_, key, service) = TestApp::new().serve("calls", 100).await;
    let answer = send(
        &service,
        get(LIVE, &key).insert_header(("Accept", "text/csv")),
    )
    .await;
    assert_eq!(answer.status, 406);
    assert!(
        answer
            .error()
            .ends_with("application/json, text/event-stream"),
        "{}",
        answer.json()
    );
}

fn live_stream(key: &Key) -> TestRequest {
    get(LIVE, key).insert_header(("Accept", "text/event-stream"))
}

/// The next chunk of a streamed body.
async fn next_chunk<B: MessageBody>(body: &mut Pin<Box<B>>) -> Bytes {
    let chunk = std::future::poll_fn(|cx| body.as_mut().poll_next(cx)).await;
    match chunk {
        Some(Ok(bytes)) => bytes,
        Some(Err(_)) => panic!("the body failed"),
        None => panic!("the stream ended"),
    }
}

/// The fields of one event (or comment) as `name: value` lines.
fn lines(chunk: &Bytes) -> Vec<String> {
    std::str::from_utf8(chunk)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[actix_web::test]
async fn the_stream_starts_with_retry_and_the_figures_as_the_json_answer_has_them() {
    let (_, key, service) = TestApp::new().serve("calls", 100).await;
    let json_body = ask(&service, LIVE, &key).await.body;
    let response = actix_web::test::call_service(
        &service,
        live_stream(&key)
            .insert_header(("Last-Event-ID", "1"))
            .peer_addr(CLIENT.parse().unwrap())
            .to_request(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(header("content-type"), "text/event-stream");
    assert_eq!(header("cache-control"), "no-store");
    // It counted as one request.
    assert_eq!(header("x-ratelimit-remaining"), "98");
    let mut body = Box::pin(response.into_body());
    let mut text = String::new();
    while !text.contains("data: ") {
        text.push_str(std::str::from_utf8(&next_chunk(&mut body).await).unwrap());
    }
    assert!(text.starts_with("retry: 5000\n\n"), "{text:?}");
    let event: Vec<String> = lines(&Bytes::from(text))
        .into_iter()
        .skip_while(|line| !line.starts_with("event:") && !line.starts_with("id:"))
        .collect();
    assert!(event.iter().any(|line| line == "event: live"), "{event:?}");
    let id = event
        .iter()
        .find_map(|line| line.strip_prefix("id: "))
        .expect("an id");
    assert!(id.parse::<u64>().is_ok(), "{id}");
    let data = event
        .iter()
        .find_map(|line| line.strip_prefix("data: "))
        .expect("the data");
    assert_eq!(data.as_bytes(), &json_body[..]);
}

#[actix_web::test]
async fn a_key_holds_four_streams_and_the_fifth_is_a_429_saying_so() {
    let (app, key, service) = TestApp::new().serve("calls", 100).await;
    let mut open = Vec::new();
    for _ in 0..4 {
        let response = actix_web::test::call_service(
            &service,
            live_stream(&key)
                .peer_addr(CLIENT.parse().unwrap())
                .to_request(),
        )
        .await;
        assert_eq!(response.status(), 200);
        open.push(response);
    }
    let refused = send(&service, live_stream(&key)).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("retry-after"), "5");
    assert!(
        refused.error().contains("4 open live streams"),
        "{}",
        refused.json()
    );
    let problem = send(
        &service,
        live_stream(&key).append_header(("Accept", "application/problem+json")),
    )
    .await;
    assert_eq!(
        problem.json()["type"].as_str().unwrap().rsplit('/').next(),
        Some("too-many-streams")
    );
    // A key without the scope gets its 403, as on every /calls endpoint.
    let other = app.key(2, "operators", 100, None);
    assert_eq!(send(&service, live_stream(&other)).await.status, 403);
    drop(open);
}
