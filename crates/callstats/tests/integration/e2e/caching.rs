use callstats_store::backend_tests;

use crate::e2e::helpers::*;

backend_tests! {
    async fn a_repeated_request_is_a_hit_with_identical_bytes(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.detail_key().await;
        for path in [
            format!("/calls/summary?start={DAY}"),
            format!("/calls/agents?start={DAY}&end=2026-10-07"),
            "/kpi/months".to_owned(),
            format!("/kpi/{MONTH}"),
            "/operators".to_owned(),
            format!("/schedule?month={MONTH}"),
            "/scripts/stats".to_owned(),
        ] {
            let first = app.get(&path, &key).await;
            let second = app.get(&path, &key).await;
            assert_eq!((first.status, first.header("x-cache")), (200, "MISS"), "{path}: {}", first.text());
            assert_eq!((second.status, second.header("x-cache")), (200, "HIT"), "{path}");
            assert_eq!(first.body, second.body, "{path}: identical bytes");
            second.assert_common_headers(&path);
        }
        for _ in 0..2 {
            assert_eq!(app.get("/ping", &key).await.header("x-cache"), "MISS", "/ping is never cached");
        }
        app.stop().await;
    }

    async fn defaults_clamping_and_unknown_parameters_share_an_entry_across_keys(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let a = app.key("a", "calls").await;
        let b = app.key("b", "calls").await;
        let first = app.get(&format!("/calls/summary?start={DAY}&utm_source=x"), &a).await;
        let second = app
            .get(&format!("/calls/summary?direction=inbound&end={DAY}&start={DAY}"), &b)
            .await;
        assert_eq!((first.header("x-cache"), second.header("x-cache")), ("MISS", "HIT"));
        assert_eq!(first.body, second.body);

        let long = app.get("/calls/summary?start=2026-01-01&end=2026-10-31", &a).await;
        assert_eq!(long.status, 200, "{}", long.text());
        assert_eq!(long.json()["clamped"], true);
        assert_eq!(long.json()["period"]["start_date"], "2026-10-01");
        let longer = app.get("/calls/summary?start=2025-06-01&end=2026-10-31", &b).await;
        assert_eq!((longer.header("x-cache"), longer.body == long.body), ("HIT", true));
        let exact = app.get("/calls/summary?start=2026-10-01&end=2026-10-31", &a).await;
        assert_eq!((exact.header("x-cache"), exact.json()["clamped"].as_bool()), ("MISS", Some(false)));
        app.stop().await;
    }

    async fn errors_are_never_cached(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let key = app.detail_key().await;
        for path in ["/schedule", "/kpi/2026-11", "/calls/summary?start=2026-02-30"] {
            for _ in 0..2 {
                let answer = app.get(path, &key).await;
                assert!(answer.status >= 400, "{path}");
                assert_eq!(answer.header("x-cache"), "MISS", "{path}");
            }
        }
        app.stop().await;
    }

    async fn detail_and_aggregate_views_never_share_an_entry(db: &TestDatabase) {
        let app = spawn_app(db).await;
        let detail = app.key("detail", "kpi:detail").await;
        let aggregate = app.key("aggregate", "kpi:aggregate").await;
        let named = app.get(&format!("/kpi/{MONTH}"), &detail).await;
        assert_eq!(named.json()["granularity"], "detail");
        let anonymous = app.get(&format!("/kpi/{MONTH}"), &aggregate).await;
        assert_eq!(
            (anonymous.header("x-cache"), anonymous.json()["granularity"].as_str()),
            ("MISS", Some("aggregate"))
        );
        app.stop().await;
    }
}
