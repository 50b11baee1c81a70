use std::sync::atomic::Ordering;

use actix_web::test::TestRequest;
use time::macros::datetime;

use crate::helpers::*;

#[actix_web::test]
async fn ping_accepts_both_header_forms_and_reports_the_key() {
    let (_, key, service) = TestApp::new().serve("calls,kpi:detail", 120).await;
    let bearer = ask(&service, "/api/v1/ping", &key).await;
    assert_eq!(bearer.status, 200);
    assert_eq!(
        bearer.json(),
        serde_json::json!({
            "ok": true, "key_name": "partner-1", "scopes": ["calls", "kpi:aggregate", "kpi:detail"],
            "rate_limit_per_minute": 120,
            "available_scopes": ["calls", "kpi:aggregate", "kpi:detail", "operators", "scripts"],
            "server_time": "2026-11-21T06:15:30.000Z"
        })
    );
    let header = send(&service, get_with_api_key("/api/v1/ping", &key.secret)).await;
    assert_eq!(header.status, 200);
    assert_eq!(header.header("x-cache"), "MISS", "/ping is never cached");
}

#[actix_web::test]
async fn missing_invalid_conflicting_expired_and_revoked_keys_are_401() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, None);
    let other = app.key(2, "calls", 120, None);
    let expired = app.key(3, "calls", 120, None);
    app.edit_key(&expired, |k| {
        k.expires_at = Some(datetime!(2026-11-01 00:00 UTC));
    });
    let revoked = app.key(4, "calls", 120, None);
    app.edit_key(&revoked, |k| {
        k.revoked_at = Some(datetime!(2026-11-20 00:00 UTC));
    });
    let service = app.service().await;

    let cases = [
        (TestRequest::get().uri("/api/v1/ping"), "missing API key"),
        (
            TestRequest::get()
                .uri("/api/v1/ping")
                .insert_header(("Authorization", "Bearer cs_nope")),
            "invalid API key",
        ),
        (
            TestRequest::get().uri("/api/v1/ping").insert_header((
                "Authorization",
                "Bearer cs_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            )),
            "invalid API key",
        ),
        (
            get("/api/v1/ping", &key).insert_header(("X-API-Key", other.secret.as_str())),
            "conflicting API keys",
        ),
        (get("/api/v1/ping", &expired), "API key expired"),
        (get("/api/v1/ping", &revoked), "API key revoked"),
    ];
    for (request, message) in cases {
        let answer = send(&service, request).await;
        assert_eq!(answer.status, 401, "{message}");
        assert!(answer.error().starts_with(message), "{}", answer.json());
        assert_eq!(
            answer.header("x-ratelimit-limit"),
            "60",
            "anonymous quota headers on a 401"
        );
    }
}

#[actix_web::test]
async fn a_key_header_sent_twice_is_401_whatever_its_values_and_their_order() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    let (valid, bearer) = (key.secret.as_str(), format!("Bearer {}", key.secret));
    let cases = [
        ("X-API-Key", [valid, "garbage"]),
        ("X-API-Key", ["garbage", valid]),
        ("X-API-Key", [valid, valid]),
        ("Authorization", [bearer.as_str(), "Bearer garbage"]),
        ("Authorization", ["Bearer garbage", bearer.as_str()]),
        ("Authorization", [bearer.as_str(), bearer.as_str()]),
        // A gateway's Basic beside the partner's Bearer is two Authorization fields too.
        (
            "Authorization",
            ["Basic Z2F0ZXdheTpzZWNyZXQ=", bearer.as_str()],
        ),
    ];
    for (name, values) in cases {
        let request = values.iter().fold(
            TestRequest::get().uri("/api/v1/calls/summary?start=2026-11-20"),
            |request, value| request.append_header((name, *value)),
        );
        let answer = send(&service, request).await;
        assert_eq!(answer.status, 401, "{name}: {values:?}");
        assert_eq!(
            answer.json()["error"],
            format!("more than one '{name}' header: send the API key in one header field"),
            "{name}: {values:?}"
        );
        assert_eq!(answer.header("x-ratelimit-limit"), "60", "anonymous quota");
    }
    // Once each, the same key in both headers is still read.
    let once = get("/api/v1/ping", &key).insert_header(("X-API-Key", valid));
    assert_eq!(send(&service, once).await.status, 200);
}

#[actix_web::test]
async fn a_key_pinned_to_a_domain_refuses_other_origins_with_403() {
    let app = TestApp::new();
    let key = app.key(1, "calls", 120, Some("dash.example.uz"));
    let service = app.service().await;
    let evil = send(
        &service,
        get("/api/v1/ping", &key).insert_header(("Origin", "https://evil.example")),
    )
    .await;
    assert_eq!(evil.status, 403);
    assert_eq!(
        evil.json(),
        serde_json::json!({"error": "origin not allowed"})
    );
    let own = send(
        &service,
        get("/api/v1/ping", &key).insert_header(("Origin", "https://Dash.Example.uz")),
    )
    .await;
    assert_eq!(own.status, 200);
    let backend = ask(&service, "/api/v1/ping", &key).await;
    assert_eq!(backend.status, 200, "no Origin: a partner's backend");
}

#[actix_web::test]
async fn a_key_without_the_scope_gets_403_naming_it() {
    let (app, key, service) = TestApp::new().serve("calls", 120).await;
    for (uri, scope) in [
        ("/api/v1/kpi/months", "kpi:aggregate"),
        ("/api/v1/kpi/2026-11", "kpi:aggregate"),
        ("/api/v1/operators", "operators"),
        ("/api/v1/schedule?month=2026-11", "operators"),
        ("/api/v1/scripts/stats", "scripts"),
    ] {
        let answer = ask(&service, uri, &key).await;
        assert_eq!(answer.status, 403, "{uri}");
        assert_eq!(answer.json()["required_scope"], scope, "{uri}");
    }
    let operators = app.key(2, "operators", 120, None);
    let answer = ask(
        &service,
        "/api/v1/calls/summary?start=2026-11-02",
        &operators,
    )
    .await;
    assert_eq!(answer.json()["required_scope"], "calls");
}

#[actix_web::test]
async fn scope_is_checked_before_parameters() {
    let (_, key, service) = TestApp::new().serve("operators", 120).await;
    let answer = ask(&service, "/api/v1/calls/summary?start=garbage", &key).await;
    assert_eq!(answer.status, 403);
}

#[actix_web::test]
async fn quota_refuses_the_request_after_the_limit_until_the_next_minute() {
    let (app, key, service) = TestApp::new().serve("calls", 3).await;
    let remaining: Vec<String> = {
        let mut seen = Vec::new();
        for _ in 0..3 {
            let answer = ask(&service, "/api/v1/ping", &key).await;
            assert_eq!(answer.status, 200);
            assert_eq!(answer.header("x-ratelimit-limit"), "3");
            assert_eq!(answer.header("x-ratelimit-reset"), "30");
            seen.push(answer.header("x-ratelimit-remaining").to_owned());
        }
        seen
    };
    assert_eq!(remaining, ["2", "1", "0"]);
    let over = ask(&service, "/api/v1/ping", &key).await;
    assert_eq!(over.status, 429);
    assert_eq!(over.header("retry-after"), "60");
    assert_eq!(over.header("x-ratelimit-remaining"), "0");
    assert!(over.error().contains("rate limit of 3"));
    // Every request counts, whatever its status: even one the scope check would refuse.
    assert_eq!(ask(&service, "/api/v1/operators", &key).await.status, 429);

    app.clock.set(datetime!(2026-11-21 06:16:00 UTC));
    let next = ask(&service, "/api/v1/ping", &key).await;
    assert_eq!(next.status_with("x-ratelimit-remaining"), (200, "2"));
}

#[actix_web::test]
async fn requests_without_a_valid_key_spend_the_per_ip_quota_and_get_429_past_it() {
    let (_, key, service) = TestApp::new().serve("calls", 120).await;
    for _ in 0..60 {
        let guess = send(&service, get_with_api_key("/api/v1/ping", "guess")).await;
        assert_eq!(guess.status, 401);
    }
    let blocked = send(&service, get_with_api_key("/api/v1/ping", "guess")).await;
    assert_eq!(blocked.status, 429);
    assert_eq!(blocked.header("retry-after"), "60");
    let valid = ask(&service, "/api/v1/ping", &key).await;
    assert_eq!(
        valid.status, 200,
        "a valid key is never held back by the anonymous quota"
    );
}

#[actix_web::test]
async fn behind_a_trusted_proxy_the_quota_follows_the_forwarded_client() {
    let app = TestApp::with(portal(), FakePlatform::default(), true);
    let service = app.service().await;
    for _ in 0..60 {
        let request = TestRequest::get()
            .uri("/api/v1/ping")
            .insert_header(("X-Forwarded-For", "198.51.100.7, 10.0.0.1"));
        assert_eq!(send(&service, request).await.status, 401);
    }
    let same = TestRequest::get()
        .uri("/api/v1/ping")
        .insert_header(("X-Forwarded-For", "198.51.100.7"));
    assert_eq!(send(&service, same).await.status, 429);
    let other = TestRequest::get()
        .uri("/api/v1/ping")
        .insert_header(("X-Forwarded-For", "198.51.100.8"));
    assert_eq!(
        send(&service, other).await.status,
        401,
        "another client has its own quota"
    );
}

#[actix_web::test]
async fn without_a_trusted_proxy_forwarded_headers_are_ignored() {
    let app = TestApp::new();
    let service = app.service().await;
    for i in 0..61 {
        let request = TestRequest::get()
            .uri("/api/v1/ping")
            .insert_header(("X-Forwarded-For", format!("198.51.100.{i}")));
        let answer = send(&service, request).await;
        assert_eq!(answer.status, if i < 60 { 401 } else { 429 });
    }
}

#[actix_web::test]
async fn a_revoked_key_stops_working_within_ten_seconds() {
    let (app, key, service) = TestApp::new().serve("calls", 120).await;
    assert_eq!(ask(&service, "/api/v1/ping", &key).await.status, 200);
    app.edit_key(&key, |k| {
        k.revoked_at = Some(datetime!(2026-11-21 06:15:31 UTC));
    });
    app.clock.set(datetime!(2026-11-21 06:15:32 UTC));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(11);
    loop {
        let answer = ask(&service, "/api/v1/ping", &key).await;
        if answer.status == 401 {
            assert_eq!(answer.json()["error"], "API key revoked");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "revoked key still accepted after 10 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

#[actix_web::test]
async fn a_flood_of_guessed_keys_from_one_address_costs_the_database_no_look_up_per_guess() {
    let (app, key, service) = TestApp::new().serve("calls", 120).await;
    for n in 0..2_000_u32 {
        let mut bytes = [0xa5_u8; 32];
        bytes[..4].copy_from_slice(&n.to_le_bytes());
        let guess = callstats_domain::access::ApiKeySecret::from_random_bytes(&bytes);
        let answer = send(&service, get_with_api_key("/api/v1/ping", guess.expose())).await;
        assert_eq!(answer.status, if n < 60 { 401 } else { 429 }, "guess {n}");
    }
    let lookups = app.store.key_lookups.load(Ordering::SeqCst);
    assert!(lookups <= 70, "{lookups} key look-ups for 2,000 guesses");
    let valid = ask(&service, "/api/v1/ping", &key).await;
    assert_eq!(
        valid.status, 200,
        "a valid key from the same address still passes"
    );
}
