//! Concurrent misses on one entry, spread over both replicas, reach the upstream once: each
//! replica computes an entry at most once locally, and the Redis lock leaves the computing to
//! one replica while the other waits for its bytes.

use std::time::Duration;

use callstats_store::backend_tests;
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::replicas::{Replica, SUMMARY, admin, client, get, key, redis_settings};

backend_tests! {
    async fn concurrent_misses_across_replicas_fetch_the_upstream_once(db: &TestDatabase) {
        let Some(url) = callstats_redis::testing::shared_redis_url() else { return };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", 1_000).await;
        let upstream = MockServer::start().await;
        let page = json!({
            "calls": [{"id": "c-1", "direction": "inbound", "agent_number": "101",
                       "started_at": "2026-11-02T10:00:00+05:00", "duration_seconds": 60.0}],
            "next_cursor": null
        });
        // Slow enough that every request below arrives while the first fetch is under way.
        Mock::given(method("GET"))
            .and(path("/calls"))
            .respond_with(ResponseTemplate::new(200).set_body_json(page).set_delay(Duration::from_millis(600)))
            .mount(&upstream)
            .await;
        let redis = redis_settings(&url, "single-flight");
        let replicas = [
            Replica::start(db, Some(redis.clone()), &upstream.uri()),
            Replica::start(db, Some(redis), &upstream.uri()),
        ];
        let client = client();
        let answers = futures::future::join_all(
            (0..8).map(|i| get(&client, &replicas[i % 2].base, SUMMARY, &key)),
        )
        .await;
        assert!(answers.iter().all(|a| a.status == 200), "every request answered");
        assert!(answers.windows(2).all(|w| w[0].body == w[1].body), "the same bytes everywhere");
        let fetches = upstream.received_requests().await.unwrap().len();
        assert_eq!(fetches, 1, "8 concurrent misses on 2 replicas fetched the upstream {fetches} times");
        let [a, b] = replicas;
        a.stop().await;
        b.stop().await;
    }
}
