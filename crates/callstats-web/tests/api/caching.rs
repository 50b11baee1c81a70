use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::helpers::*;

#[actix_web::test]
async fn a_repeated_request_is_a_hit_with_identical_bytes() {
    let (app, key, service) = TestApp::new().serve("calls,operators", 120).await;
    for uri in [
        "/api/v1/calls/summary?start=2026-11-02",
        "/api/v1/operators",
    ] {
        let first = ask(&service, uri, &key).await;
        let second = ask(&service, uri, &key).await;
        assert_eq!(first.status_with("x-cache"), (200, "MISS"), "{uri}");
        assert_eq!(second.status_with("x-cache"), (200, "HIT"), "{uri}");
        assert_eq!(first.body, second.body, "{uri}");
    }
    assert_eq!(app.fetches(), 1);
}

#[actix_web::test]
async fn defaults_and_unknown_parameters_share_one_entry_across_keys() {
    let (app, a, service) = TestApp::new().serve("calls", 120).await;
    let b = app.key(2, "calls", 120, None);
    let summary = |query: &str| format!("/api/v1/calls/summary?{query}");
    let first = ask(&service, &summary("start=2026-11-02&utm_source=x"), &a).await;
    let spelled_out = summary("direction=inbound&end=2026-11-02&start=2026-11-02");
    let second = ask(&service, &spelled_out, &b).await;
    assert_eq!(first.header("x-cache"), "MISS");
    assert_eq!(second.header("x-cache"), "HIT");
    assert_eq!(first.body, second.body);
}

#[actix_web::test]
async fn errors_are_never_cached() {
    let (app, key, service) = TestApp::new().serve("calls", 120).await;
    app.platform.down.store(true, Ordering::SeqCst);
    let failed = ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    assert_eq!(failed.status_with("x-cache"), (503, "MISS"));
    app.platform.down.store(false, Ordering::SeqCst);
    let recovered = ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    assert_eq!(recovered.status_with("x-cache"), (200, "MISS"));
}

#[actix_web::test]
async fn concurrent_misses_on_one_entry_are_computed_once() {
    let platform = FakePlatform {
        delay: Some(Duration::from_millis(200)),
        ..FakePlatform::with_calls()
    };
    let (app, key, service) = TestApp::with(portal(), platform, false)
        .serve("calls", 120)
        .await;
    let requests = (0..8).map(|_| ask(&service, "/api/v1/calls/agents?start=2026-11-02", &key));
    let answers = futures::future::join_all(requests).await;
    assert!(answers.iter().all(|a| a.status == 200));
    assert!(answers.windows(2).all(|w| w[0].body == w[1].body));
    assert_eq!(app.fetches(), 1);
}

#[actix_web::test]
async fn detail_and_aggregate_bodies_never_share_an_entry() {
    let (app, detail, service) = TestApp::new().serve("kpi:detail", 120).await;
    let aggregate = app.key(2, "kpi:aggregate", 120, None);
    let named = ask(&service, "/api/v1/kpi/2026-11", &detail).await;
    assert_eq!(named.json()["granularity"], "detail");
    let anonymous = ask(&service, "/api/v1/kpi/2026-11", &aggregate).await;
    assert_eq!(
        (
            anonymous.header("x-cache"),
            anonymous.json()["granularity"].as_str()
        ),
        ("MISS", Some("aggregate"))
    );
    let body = String::from_utf8(anonymous.body.to_vec()).unwrap();
    assert!(
        !body.contains("agent_number") && !body.contains("tkir"),
        "{body}"
    );
}

#[actix_web::test]
async fn a_clamped_range_shares_the_entry_of_its_dates_only_with_the_same_flag() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    let summary = |start: &str| format!("/api/v1/calls/summary?start={start}&end=2026-11-20");
    let long = ask(&service, &summary("2026-01-01"), &key).await;
    assert_eq!(long.json()["clamped"], true);
    assert_eq!(long.json()["period"]["start_date"], "2026-10-21");
    let again = ask(&service, &summary("2025-12-01"), &key).await;
    assert_eq!(again.header("x-cache"), "HIT");
    let exact = ask(&service, &summary("2026-10-21"), &key).await;
    assert_eq!(
        (exact.header("x-cache"), exact.json()["clamped"].as_bool()),
        ("MISS", Some(false))
    );
}
