//! Two replicas, one store, one Redis: one quota, one cache, one revocation.

use std::time::{Duration, Instant};

use callstats_store::backend_tests;
use time::OffsetDateTime;

use crate::replicas::{SUMMARY, on_shared_redis, with_minute_left};

backend_tests! {
    async fn a_quota_of_5_refuses_the_6th_request_whichever_replica_it_hits(db: &TestDatabase) {
        let Some((cluster, _, key, _)) = on_shared_redis(db, "quota-5", 5).await else {
            return;
        };
        with_minute_left(Duration::from_secs(15)).await;

        let mut remaining = Vec::new();
        for request in 0..5 {
            let answer = cluster.get(request % 2, "/api/v1/ping", &key).await;
            assert_eq!(answer.status, 200, "request {}", request + 1);
            remaining.push(answer.remaining.unwrap());
        }
        assert_eq!(remaining, [4, 3, 2, 1, 0], "one count across both replicas");
        for replica in [1, 0] {
            let answer = cluster.get(replica, "/api/v1/ping", &key).await;
            assert_eq!(answer.status, 429, "replica {replica}");
            assert_eq!(answer.remaining, Some(0));
        }
        cluster.stop().await;
    }

    async fn a_miss_on_one_replica_is_a_hit_with_the_same_bytes_on_the_other(db: &TestDatabase) {
        let Some((cluster, _, key, _)) = on_shared_redis(db, "cache", 1000).await else {
            return;
        };

        let first = cluster.get(0, SUMMARY, &key).await;
        assert_eq!((first.status, first.cache.as_deref()), (200, Some("MISS")));
        let second = cluster.get(1, SUMMARY, &key).await;
        assert_eq!((second.status, second.cache.as_deref()), (200, Some("HIT")));
        assert_eq!(second.body, first.body);
        assert!(!first.body.is_empty());
        let again = cluster.get(0, SUMMARY, &key).await;
        assert_eq!((again.cache.as_deref(), &again.body), (Some("HIT"), &first.body));
        cluster.stop().await;
    }

    async fn a_revoked_key_stops_on_every_replica_within_10_seconds(db: &TestDatabase) {
        let Some((cluster, admin, key, id)) = on_shared_redis(db, "revoke", 1000).await else {
            return;
        };
        for replica in [0, 1] {
            assert_eq!(cluster.get(replica, "/api/v1/ping", &key).await.status, 200);
        }

        admin.revoke_keys(&id.to_string(), OffsetDateTime::now_utc()).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let statuses = [
                cluster.get(0, "/api/v1/ping", &key).await.status,
                cluster.get(1, "/api/v1/ping", &key).await.status,
            ];
            assert!(statuses.iter().all(|s| matches!(s, 200 | 401)), "{statuses:?}");
            if statuses == [401, 401] {
                break;
            }
            assert!(Instant::now() < deadline, "still accepted after 10 s: {statuses:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        cluster.stop().await;
    }
}
