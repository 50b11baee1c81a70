//! The edges of authentication partners meet behind gateways and in browsers: an
//! `Authorization` that is not `Bearer` beside `X-API-Key`, and a valid key refused for its
//! Origin, which counts against no quota (docs/behaviour.md, "Keys and access" and "Quota").

use callstats_store::backend_tests;
use serde_json::json;

use crate::e2e::helpers::*;

/// What a gateway in front of the service may add: its own Basic credentials.
const GATEWAY_BASIC: &str = "Basic Z2F0ZXdheTpnYXRld2F5LXNlY3JldA==";

backend_tests! {
    async fn a_basic_authorization_beside_a_valid_x_api_key_is_ignored(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.key_with("behind-gateway", "operators", |k| k.rate_limit(10).unwrap()).await;
        let mut remaining = Vec::new();
        for path in ["/ping", "/operators"] {
            let answer = app
                .get_with(path, &[("Authorization", GATEWAY_BASIC), ("X-API-Key", &key.secret)])
                .await;
            assert_eq!(answer.status, 200, "{path}: {}", answer.text());
            answer.assert_common_headers(path);
            assert_eq!(answer.header("x-ratelimit-limit"), "10", "{path}: the key's quota");
            remaining.push(answer.header("x-ratelimit-remaining").to_owned());
        }
        assert_eq!(remaining, ["9", "8"]);
        assert_eq!(
            app.get_with("/ping", &[("Authorization", GATEWAY_BASIC), ("X-API-Key", &key.secret)])
                .await
                .json()["key_name"],
            "behind-gateway"
        );

        // Without X-API-Key, a Basic header is still no credential; a Bearer one still must
        // agree with X-API-Key.
        let basic_alone = app.get_with("/ping", &[("Authorization", GATEWAY_BASIC)]).await;
        assert_eq!(basic_alone.status, 401, "{}", basic_alone.text());
        assert!(basic_alone.error().starts_with("malformed Authorization header"), "{}", basic_alone.error());
        let other = app.key("other", "operators").await;
        let other_bearer = format!("Bearer {}", other.secret);
        let conflicting = app
            .get_with("/ping", &[("Authorization", &other_bearer), ("X-API-Key", &key.secret)])
            .await;
        assert_eq!(conflicting.status, 401);
        assert!(conflicting.error().starts_with("conflicting API keys"), "{}", conflicting.error());
        app.stop().await;
    }

    async fn a_valid_key_refused_for_its_origin_is_always_403_and_counts_against_no_quota(db: &TestDatabase) {
        let app = spawn_app_with(db, Spawn { anon_rate_limit: 3, ..Spawn::default() }).await;
        let key = app
            .key_with("pinned", "operators", |k| k.rate_limit(10).unwrap().origin("dash.example.uz").unwrap())
            .await;
        let bearer = format!("Bearer {}", key.secret);
        let own = [("Authorization", bearer.as_str()), ("Origin", "https://dash.example.uz")];
        let evil = [("Authorization", bearer.as_str()), ("Origin", "https://evil.example")];

        let first = app.get_with("/operators", &own).await;
        assert_eq!((first.status, first.header("x-ratelimit-remaining")), (200, "9"), "{}", first.text());
        // Twice the anonymous quota of the address: still 403 every time, never 429.
        for attempt in 1..=6 {
            let refused = app.get_with("/operators", &evil).await;
            assert_eq!(refused.status, 403, "attempt {attempt}: {}", refused.text());
            assert_eq!(refused.json(), json!({"error": "origin not allowed"}));
            refused.assert_common_headers("origin 403");
            assert!(refused.headers.get("retry-after").is_none(), "attempt {attempt}");
            assert_eq!(
                (refused.header("x-ratelimit-limit"), refused.header("x-ratelimit-remaining")),
                ("10", "9"),
                "attempt {attempt}: the key's window, not counted"
            );
        }
        let after = app.get_with("/operators", &own).await;
        assert_eq!(after.status, 200, "{}", after.text());
        assert_eq!(after.header("x-ratelimit-remaining"), "8", "the refusals did not count");
        let guess = app.get_with("/ping", &[("X-API-Key", "guess")]).await;
        assert_eq!(
            (guess.status, guess.header("x-ratelimit-limit"), guess.header("x-ratelimit-remaining")),
            (401, "3", "2"),
            "nor against the address's anonymous quota"
        );
        app.stop().await;
    }

    async fn a_key_over_its_quota_refused_for_its_origin_is_still_403(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app
            .key_with("pinned-small", "operators", |k| k.rate_limit(2).unwrap().origin("dash.example.uz").unwrap())
            .await;
        for _ in 0..3 {
            app.get("/operators", &key).await;
        }
        let bearer = format!("Bearer {}", key.secret);
        let refused = app
            .get_with("/operators", &[("Authorization", &bearer), ("Origin", "https://evil.example")])
            .await;
        assert_eq!(refused.status, 403, "the Origin answers before the quota: {}", refused.text());
        assert!(refused.headers.get("retry-after").is_none());
        assert_eq!((refused.header("x-ratelimit-limit"), refused.header("x-ratelimit-remaining")), ("2", "0"));
        app.stop().await;
    }
}
