use std::time::{Duration, Instant};

use callstats_store::backend_tests;
use serde_json::json;
use time::OffsetDateTime;

use crate::e2e::helpers::*;

backend_tests! {
    async fn both_header_forms_authenticate_and_ping_reports_the_key(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.key_with("partner", "calls,kpi:aggregate", |k| k.rate_limit(30).unwrap()).await;
        let bearer = app.get("/ping", &key).await;
        assert_eq!(bearer.status, 200, "{}", bearer.text());
        let mut body = bearer.json();
        let server_time = body["server_time"].take();
        assert_eq!(
            body,
            json!({
                "ok": true, "key_name": "partner", "scopes": ["calls", "kpi:aggregate"],
                "rate_limit_per_minute": 30,
                "available_scopes": ["calls", "kpi:aggregate", "kpi:detail", "operators", "scripts"],
                "server_time": null
            })
        );
        let server_time = server_time.as_str().unwrap();
        assert!(server_time.len() == 24 && server_time.ends_with('Z'), "{server_time}");
        assert_eq!((bearer.header("x-ratelimit-limit"), bearer.header("x-ratelimit-remaining")), ("30", "29"));
        assert_eq!(bearer.header("x-cache"), "MISS", "/ping is never cached");

        let header = app.get_with("/ping", &[("X-API-Key", &key.secret)]).await;
        assert_eq!(header.status, 200);
        assert_eq!(header.header("x-ratelimit-remaining"), "28");
        assert_eq!(header.header("x-cache"), "MISS");
        app.stop().await;
    }

    async fn missing_unknown_conflicting_expired_and_revoked_keys_are_401(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.key("partner", "calls").await;
        let other = app.key("other", "calls").await;
        let expired = app
            .key_with("expired", "calls", |k| k.expires_at(OffsetDateTime::now_utc() - time::Duration::HOUR))
            .await;
        let revoked = app.key("revoked", "calls").await;
        app.admin.revoke_keys("revoked", OffsetDateTime::now_utc()).await.unwrap();
        let bearer = |secret: &str| format!("Bearer {secret}");
        let unknown = bearer("cs_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
        let (key_bearer, expired_bearer, revoked_bearer) =
            (bearer(&key.secret), bearer(&expired.secret), bearer(&revoked.secret));
        let cases: [(&[(&str, &str)], &str); 6] = [
            (&[], "missing API key"),
            (&[("Authorization", "Bearer cs_short")], "invalid API key"),
            (&[("X-API-Key", &unknown[7..])], "invalid API key"),
            (&[("Authorization", &key_bearer), ("X-API-Key", &other.secret)], "conflicting API keys"),
            (&[("Authorization", &expired_bearer)], "API key expired"),
            (&[("Authorization", &revoked_bearer)], "API key revoked"),
        ];
        for path in ["/ping".to_owned(), format!("/calls/summary?start={DAY}")] {
            for (headers, message) in cases {
                let answer = app.get_with(&path, headers).await;
                assert_eq!(answer.status, 401, "{path} {message}: {}", answer.text());
                assert!(answer.error().starts_with(message), "{path}: {}", answer.error());
                answer.assert_common_headers(message);
                assert_eq!(answer.header("x-ratelimit-limit"), "60", "the anonymous quota on a 401");
                assert!(!answer.text().contains(&key.secret) && !answer.text().contains(&expired.secret));
            }
        }
        app.stop().await;
    }

    async fn a_key_without_the_scope_gets_403_naming_it(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let scripts_only = app.key("scripts-only", "scripts").await;
        let calls_only = app.key("calls-only", "calls").await;
        for (path, key, scope) in [
            (format!("/calls/summary?start={DAY}"), &scripts_only, "calls"),
            (format!("/calls/agents?start={DAY}"), &scripts_only, "calls"),
            ("/calls/summary?start=garbage".to_owned(), &scripts_only, "calls"),
            ("/kpi/months".to_owned(), &calls_only, "kpi:aggregate"),
            (format!("/kpi/{MONTH}"), &calls_only, "kpi:aggregate"),
            ("/operators".to_owned(), &calls_only, "operators"),
            (format!("/schedule?month={MONTH}"), &calls_only, "operators"),
            ("/scripts/stats".to_owned(), &calls_only, "scripts"),
        ] {
            let answer = app.get(&path, key).await;
            assert_eq!(answer.status, 403, "{path}: {}", answer.text());
            answer.assert_common_headers(&path);
            assert_eq!(answer.json()["required_scope"], scope, "{path}");
            assert!(answer.error().contains(scope), "{path}: {}", answer.error());
        }
        app.stop().await;
    }

    async fn a_key_pinned_to_a_domain_refuses_other_origins(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app
            .key_with("pinned", "operators", |k| k.origin("dash.example.uz").unwrap())
            .await;
        let bearer = format!("Bearer {}", key.secret);
        let evil = app
            .get_with("/operators", &[("Authorization", &bearer), ("Origin", "https://evil.example")])
            .await;
        assert_eq!(evil.status, 403);
        assert_eq!(evil.json(), json!({"error": "origin not allowed"}));
        evil.assert_common_headers("origin 403");
        assert_eq!(
            (evil.header("x-ratelimit-limit"), evil.header("x-ratelimit-remaining")),
            ("120", "120"),
            "the key's window, not counted"
        );
        let lookalike = app
            .get_with("/operators", &[("Authorization", &bearer), ("Origin", "https://dash.example.uz.evil.example")])
            .await;
        assert_eq!(lookalike.status, 403);
        let own = app
            .get_with("/operators", &[("Authorization", &bearer), ("Origin", "https://Dash.Example.UZ:8443")])
            .await;
        assert_eq!(own.status, 200, "{}", own.text());
        let backend = app.get("/operators", &key).await;
        assert_eq!(backend.status, 200, "no Origin: a partner's backend");
        assert_eq!(backend.header("x-ratelimit-remaining"), "118", "only the two admitted requests counted");
        app.stop().await;
    }

    async fn quota_gives_429_with_retry_after_and_resets_at_the_next_utc_minute(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.key_with("small", "calls", |k| k.rate_limit(3).unwrap()).await;
        let mut remaining = Vec::new();
        for path in ["/ping", "/operators", "/calls/summary?start=bad"] {
            let answer = app.get(path, &key).await;
            assert!(matches!(answer.status, 200 | 400 | 403), "{path}: {}", answer.text());
            assert_eq!(answer.header("x-ratelimit-limit"), "3");
            remaining.push(answer.header("x-ratelimit-remaining").to_owned());
        }
        assert_eq!(remaining, ["2", "1", "0"], "every admitted request counts, whatever its status");
        for path in ["/ping".to_owned(), format!("/calls/summary?start={DAY}")] {
            let over = app.get(&path, &key).await;
            assert_eq!(over.status, 429, "{path}: {}", over.text());
            assert_eq!(over.header("retry-after"), "60");
            over.assert_common_headers("429");
            assert_eq!(over.header("x-ratelimit-remaining"), "0");
            assert!(over.error().contains("rate limit of 3"), "{}", over.error());
        }

        app.clock.advance_to_next_minute();
        let next = app.get("/ping", &key).await;
        assert_eq!((next.status, next.header("x-ratelimit-remaining")), (200, "2"), "a new window");
        let reset: u32 = next.header("x-ratelimit-reset").parse().unwrap();
        assert!(reset >= 55, "early in the new minute: {reset}");
        app.stop().await;
    }

    async fn requests_without_a_valid_key_spend_the_per_ip_quota(db: &TestDatabase) {
        let app = spawn_app_with(db, Spawn { anon_rate_limit: 3, ..Spawn::default() }).await;
        let key = app.key("partner", "calls").await;
        for _ in 0..3 {
            assert_eq!(app.get_with("/ping", &[("X-API-Key", "guess")]).await.status, 401);
        }
        let blocked = app.get_with("/ping", &[("X-API-Key", "guess")]).await;
        assert_eq!(blocked.status, 429, "{}", blocked.text());
        assert_eq!(blocked.header("retry-after"), "60");
        blocked.assert_common_headers("anonymous 429");
        let document = app.get_with("/openapi.json", &[]).await;
        assert_eq!(document.status, 429, "the document shares the per-IP quota");
        assert_eq!(app.get("/ping", &key).await.status, 200, "a valid key is never held back");
        app.stop().await;
    }

    async fn a_revoked_key_stops_working_within_ten_seconds(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.key("soon-revoked", "calls").await;
        assert_eq!(app.get("/ping", &key).await.status, 200);
        let revocation = app.admin.revoke_keys(&key.id.to_string(), OffsetDateTime::now_utc()).await.unwrap();
        assert_eq!(revocation.revoked.len(), 1);
        let revoked_at = Instant::now();
        loop {
            let answer = app.get("/ping", &key).await;
            if answer.status == 401 {
                assert_eq!(answer.error(), "API key revoked");
                break;
            }
            assert_eq!(answer.status, 200);
            assert!(revoked_at.elapsed() < Duration::from_secs(11), "revoked key still accepted after 10 s");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        app.stop().await;
    }
}
