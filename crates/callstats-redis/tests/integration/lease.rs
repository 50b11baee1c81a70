//! The warmer's lease against a real Redis: one holder at a time, renewed by its holder, free
//! once given up or expired; a Redis that cannot be reached holds it for everyone.

use std::time::Duration;

use callstats_domain::ports::Lease;
use callstats_redis::testing::{PrivateRedis, shared_redis_url, unique_prefix};
use callstats_redis::{Redis, RedisLease, RedisSettings};

/// Two replicas' leases of one name on one prefix.
fn leases(url: &str, prefix: &str) -> [RedisLease; 2] {
    let replica = || {
        let settings = RedisSettings {
            prefix: prefix.to_owned(),
            retry_after: Duration::from_millis(200),
            ..RedisSettings::new(url)
        };
        RedisLease::new(Redis::new(settings).unwrap(), "warmer")
    };
    [replica(), replica()]
}

#[tokio::test]
async fn one_holder_at_a_time_renewed_until_given_up_or_expired() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let [a, b] = leases(&url, &unique_prefix("lease"));
    let ttl = Duration::from_millis(600);
    assert!(a.hold(ttl).await, "free: taken");
    assert!(!b.hold(ttl).await, "held by the other");
    // Renewed by its holder past the first lifetime: still the other's to wait for.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(a.hold(ttl).await, "renewed");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!b.hold(ttl).await, "renewed, not expired");
    // Given up: the other takes it; the first cannot give up what it no longer holds.
    a.release().await;
    assert!(b.hold(ttl).await);
    a.release().await;
    assert!(!a.hold(ttl).await, "still the second's");
    // A holder that stops renewing loses it when it expires.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(a.hold(ttl).await, "expired: taken");
}

#[tokio::test]
async fn without_redis_every_replica_holds_it() {
    let Some(mut redis) = PrivateRedis::start() else {
        return;
    };
    let [a, b] = leases(&redis.url(), &unique_prefix("lease-outage"));
    assert!(a.hold(Duration::from_secs(5)).await);
    assert!(!b.hold(Duration::from_secs(5)).await);
    redis.stop();
    assert!(
        b.hold(Duration::from_secs(5)).await,
        "each warms its own days"
    );
}
