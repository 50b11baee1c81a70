//! Redis taken away under two running replicas, then given back.

use std::time::Duration;

use callstats_redis::testing::PrivateRedis;
use callstats_store::backend_tests;

use crate::replicas::{Cluster, SUMMARY, admin, eventually, key, redis_settings, with_minute_left};

const LIMIT: u32 = 1000;

backend_tests! {
    async fn without_redis_requests_succeed_uncached_and_counted_per_replica_then_share_again(db: &TestDatabase) {
        let Some(mut redis) = PrivateRedis::start() else { return };
        let admin = admin(db).await;
        let (key, _) = key(&admin, "calls", LIMIT).await;
        let cluster = Cluster::start(db, &redis_settings(&redis.url(), "outage")).await;
        let shared = cluster.get(0, SUMMARY, &key).await;
        assert_eq!((shared.status, shared.cache.as_deref()), (200, Some("MISS")));
        assert_eq!(cluster.get(1, SUMMARY, &key).await.cache.as_deref(), Some("HIT"));

        with_minute_left(Duration::from_secs(20)).await;
        redis.stop();
        let limit = u64::from(LIMIT);
        for (replica, remaining) in [(0, limit - 1), (0, limit - 2), (1, limit - 1), (1, limit - 2)] {
            let answer = cluster.get(replica, SUMMARY, &key).await;
            assert_eq!(answer.status, 200, "replica {replica} without Redis");
            assert_eq!(answer.cache.as_deref(), Some("MISS"), "cache bypassed");
            // The same answer, computed again; only `as_of` may differ: a replica that fetched
            // the days itself says when it did.
            assert_eq!(without_as_of(&answer.body), without_as_of(&shared.body), "the same answer, computed again");
            assert_eq!(answer.remaining, Some(remaining), "replica {replica} counts in process");
        }

        let readiness = cluster.get(0, "/readyz", &key).await;
        assert_eq!(readiness.status, 503, "an orchestrator can tell Redis is gone");
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&readiness.body).unwrap(),
            serde_json::json!({"status": "unavailable", "reason": "redis unreachable"})
        );

        redis.spawn().unwrap();
        let (both, secret) = (&cluster, &key);
        // The Redis given back is empty: the answer is computed again (`as_of` aside, the same).
        let expected = without_as_of(&shared.body);
        eventually(Duration::from_secs(10), "both replicas back on the shared cache", move || {
            let expected = expected.clone();
            async move {
                let a = both.get(0, SUMMARY, secret).await;
                let b = both.get(1, SUMMARY, secret).await;
                assert_eq!((a.status, b.status), (200, 200));
                assert_eq!((without_as_of(&a.body), without_as_of(&b.body)), (expected.clone(), expected));
                a.cache.as_deref() == Some("HIT") && b.cache.as_deref() == Some("HIT")
            }
        })
        .await;
        assert_eq!(cluster.get(1, "/readyz", &key).await.status, 200);
        with_minute_left(Duration::from_secs(5)).await;
        let a = cluster.get(0, "/api/v1/ping", &key).await.remaining.unwrap();
        let b = cluster.get(1, "/api/v1/ping", &key).await.remaining.unwrap();
        assert_eq!(b + 1, a, "one shared count again");
        cluster.stop().await;
    }
}

/// An answer's JSON without its `as_of`.
fn without_as_of(body: &[u8]) -> serde_json::Value {
    let mut json: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert!(json["as_of"].is_string(), "{json}");
    json.as_object_mut().unwrap().remove("as_of");
    json
}
