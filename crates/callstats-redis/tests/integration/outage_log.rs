//! An outage is logged once when it starts and once when it ends, not once per request. Only the
//! lines logged inside this test's span count (tracing-test), so other tests' outages stay out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use callstats_domain::access::{QuotaBucket, QuotaSubject};
use callstats_domain::ports::{QuotaCounter, ResponseCache};
use callstats_redis::testing::PrivateRedis;
use callstats_redis::{Redis, RedisCache, RedisQuota, RedisSettings};
use tracing_test::traced_test;

/// Checks, for `logs_assert`, that exactly one line contains `needle`.
fn once(needle: &'static str) -> impl Fn(&[&str]) -> Result<(), String> {
    move |lines| match lines.iter().filter(|line| line.contains(needle)).count() {
        1 => Ok(()),
        n => Err(format!("{needle:?} logged {n} times, not once")),
    }
}

#[tokio::test]
#[traced_test]
async fn an_outage_is_logged_once_when_it_starts_and_once_when_it_ends() {
    let Some(mut redis) = PrivateRedis::start() else {
        return;
    };
    let shared = Redis::new(RedisSettings {
        retry_after: Duration::from_millis(30),
        ..RedisSettings::new(redis.url())
    })
    .unwrap();
    let (cache, quota) = (
        RedisCache::new(Arc::clone(&shared)),
        RedisQuota::new(Arc::clone(&shared)),
    );
    let bucket = QuotaBucket::new(&QuotaSubject::Key(1), time::OffsetDateTime::now_utc());
    assert_eq!(quota.increment(&bucket).await, 1);

    redis.stop();
    for _ in 0..20 {
        quota.increment(&bucket).await;
        cache.get("k").await;
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    assert!(shared.is_down());
    // One warning for the whole outage.
    logs_assert(once("Redis unreachable"));

    redis.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while shared.is_down() {
        assert!(
            Instant::now() < deadline,
            "Redis not used again after it came back"
        );
        quota.increment(&bucket).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for _ in 0..5 {
        quota.increment(&bucket).await;
    }
    logs_assert(once("Redis is reachable again"));
    logs_assert(once("Redis unreachable"));
}
