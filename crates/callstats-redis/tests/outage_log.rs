//! An outage is logged once when it starts and once when it ends, not once per request. A test
//! binary of its own, because log capture is process-wide.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use callstats_domain::access::{QuotaBucket, QuotaSubject};
use callstats_domain::ports::{QuotaCounter, ResponseCache};
use callstats_redis::testing::PrivateRedis;
use callstats_redis::{Redis, RedisCache, RedisQuota, RedisSettings};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn count(&self, needle: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .matches(needle)
            .count()
    }
}

#[tokio::test]
async fn an_outage_is_logged_once_when_it_starts_and_once_when_it_ends() {
    let logs = Captured::default();
    let writer = logs.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();
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
    assert_eq!(
        logs.count("Redis unreachable"),
        1,
        "one warning for the whole outage"
    );

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
    assert_eq!(logs.count("Redis is reachable again"), 1);
    assert_eq!(logs.count("Redis unreachable"), 1);
}
