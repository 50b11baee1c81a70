use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::helpers::*;

#[actix_web::test]
async fn a_repeated_request_is_a_hit_with_identical_bytes() {
    let app = TestApp::new();
    let key = app.key(1, "calls,operators", 120, None);
    let service = app.service().await;
    for uri in [
        "/api/v1/calls/summary?start=2026-11-02",
        "/api/v1/operators",
    ] {
        let first = ask(&service, uri, &key).await;
        let second = ask(&service, uri, &key).await;
        assert_eq!(
            (first.status, first.header("x-cache")),
            (200, "MISS"),
            "{uri}"
        );
        assert_eq!(
            (second.status, second.header("x-cache")),
            (200, "HIT"),
            "{uri}"
        );
        assert_eq!(first.body, second.body, "{uri}");
    }
    assert_eq!(app.platform.fetches.load(Ordering::SeqCst), 1);
}

#[actix_web::test]
async fn defaults_and_unknown_parameters_share_one_entry_across_keys() {
    let app = TestApp::new();
    let a = app.key(1, "calls", 120, None);
    let b = app.key(2, "calls", 120, None);
    let service = app.service().await;
    let first = ask(
        &service,
        "/api/v1/calls/summary?start=2026-11-02&utm_source=x",
        &a,
    )
    .await;
    let second = ask(
        &service,
        "/api/v1/calls/summary?direction=inbound&end=2026-11-02&start=2026-11-02",
        &b,
    )
    .await;
    assert_eq!(first.header("x-cache"), "MISS");
    assert_eq!(second.header("x-cache"), "HIT");
    assert_eq!(first.body, second.body);
}

#[actix_web::test]
async fn errors_are_never_cached() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
    app.platform.down.store(true, Ordering::SeqCst);
    let failed = ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    assert_eq!((failed.status, failed.header("x-cache")), (503, "MISS"));
    app.platform.down.store(false, Ordering::SeqCst);
    let recovered = ask(&service, "/api/v1/calls/summary?start=2026-11-02", &key).await;
    assert_eq!(
        (recovered.status, recovered.header("x-cache")),
        (200, "MISS")
    );
}

#[actix_web::test]
async fn concurrent_misses_on_one_entry_are_computed_once() {
    let platform = FakePlatform {
        calls: calls(),
        delay: Some(Duration::from_millis(200)),
        ..FakePlatform::default()
    };
    let app = TestApp::with(portal(), platform, false);
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
    let requests = (0..8).map(|_| ask(&service, "/api/v1/calls/agents?start=2026-11-02", &key));
    let answers = futures::future::join_all(requests).await;
    assert!(answers.iter().all(|a| a.status == 200));
    assert!(answers.windows(2).all(|w| w[0].body == w[1].body));
    assert_eq!(app.platform.fetches.load(Ordering::SeqCst), 1);
}

#[actix_web::test]
async fn detail_and_aggregate_bodies_never_share_an_entry() {
    let app = TestApp::new();
    let detail = app.key(1, "kpi:detail", 120, None);
    let aggregate = app.key(2, "kpi:aggregate", 120, None);
    let service = app.service().await;
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
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let service = app.service().await;
    let long = ask(
        &service,
        "/api/v1/calls/summary?start=2026-01-01&end=2026-11-20",
        &key,
    )
    .await;
    assert_eq!(long.json()["clamped"], true);
    assert_eq!(long.json()["period"]["start_date"], "2026-10-21");
    let again = ask(
        &service,
        "/api/v1/calls/summary?start=2025-12-01&end=2026-11-20",
        &key,
    )
    .await;
    assert_eq!(again.header("x-cache"), "HIT");
    let exact = ask(
        &service,
        "/api/v1/calls/summary?start=2026-10-21&end=2026-11-20",
        &key,
    )
    .await;
    assert_eq!(
        (exact.header("x-cache"), exact.json()["clamped"].as_bool()),
        ("MISS", Some(false))
    );
}
