//! The shared tier of the call-day store against a real Redis: days read in one round trip,
//! lifetimes, locks, entries it cannot read, and a Redis that goes away.

use std::sync::Arc;
use std::time::{Duration, Instant};

use callstats_domain::calendar::Day;
use callstats_domain::call_day::CallDay;
use callstats_domain::model::{AgentNumber, CallRecord};
use callstats_domain::params::Direction;
use callstats_domain::ports::CallDayCache;
use callstats_domain::tz;
use callstats_redis::testing::{
    PrivateRedis, assert_expires_within, connection, shared_redis_url, unique_prefix,
};
use callstats_redis::{Redis, RedisCallDays, RedisSettings};

fn day(raw: &str) -> Day {
    Day::parse(raw).unwrap()
}

fn kept(raw: &str) -> Arc<CallDay> {
    let day = day(raw);
    let midnight = tz::local_midnight_unix(day.date());
    let records = (0..50_i64).map(|n| CallRecord {
        direction: if n % 3 == 0 {
            Direction::Outbound
        } else {
            Direction::Inbound
        },
        agent_number: (n % 7 != 0).then(|| AgentNumber::new(&format!("{}", 101 + n % 5)).unwrap()),
        started_at: midnight + n * 1_700,
        duration_seconds: 60.25 + f64::from(u32::try_from(n).unwrap()),
        wait_seconds: None,
        queue: None,
    });
    Arc::new(CallDay::from_records(day, 1_790_000_000, records))
}

/// Another replica's tier on `prefix`.
fn replica(url: &str, prefix: String) -> RedisCallDays {
    RedisCallDays::new(
        Redis::new(RedisSettings {
            prefix,
            ..RedisSettings::new(url)
        })
        .unwrap(),
    )
}

fn tier(url: &str, test: &str) -> (RedisCallDays, String) {
    let settings = RedisSettings {
        prefix: unique_prefix(test),
        retry_after: Duration::from_millis(200),
        ..RedisSettings::new(url)
    };
    let prefix = settings.prefix.clone();
    (RedisCallDays::new(Redis::new(settings).unwrap()), prefix)
}

#[tokio::test]
async fn days_are_shared_whole_for_their_ttl_and_read_together() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let (replica_a, prefix) = tier(&url, "days-shared");
    let replica_b = replica(&url, prefix.clone());
    replica_a
        .put(kept("2026-11-01"), Duration::from_millis(800))
        .await;
    replica_a
        .put(kept("2026-11-03"), Duration::from_secs(60))
        .await;
    let read = replica_b
        .get(&[day("2026-11-01"), day("2026-11-02"), day("2026-11-03")])
        .await;
    assert_eq!(read.len(), 3);
    assert_eq!(read[0].as_deref(), Some(&*kept("2026-11-01")));
    assert_eq!(read[1], None);
    assert_eq!(read[2].as_deref(), Some(&*kept("2026-11-03")));
    assert_expires_within(&url, &format!("{prefix}day:2026-11-01"), 800).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(replica_b.get(&[day("2026-11-01")]).await, vec![None]);
}

#[tokio::test]
async fn an_entry_it_cannot_read_is_a_miss_and_is_overwritten() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let (tier, prefix) = tier(&url, "days-corrupt");
    let mut connection = connection(&url).await;
    for (key, value) in [
        ("day:2026-11-01", b"\x01not postcard at all".as_slice()),
        ("day:2026-11-02", b"\x09a future version".as_slice()),
        ("day:2026-11-03", b"".as_slice()),
    ] {
        let _: () = redis::cmd("SET")
            .arg(format!("{prefix}{key}"))
            .arg(value)
            .query_async(&mut connection)
            .await
            .unwrap();
    }
    let days = [day("2026-11-01"), day("2026-11-02"), day("2026-11-03")];
    assert_eq!(tier.get(&days).await, vec![None, None, None]);
    tier.put(kept("2026-11-01"), Duration::from_secs(60)).await;
    assert_eq!(
        tier.get(&days[..1]).await[0].as_deref(),
        Some(&*kept("2026-11-01"))
    );
}

#[tokio::test]
async fn one_replica_at_a_time_holds_a_days_fetch_lock() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let (replica_a, prefix) = tier(&url, "days-lock");
    let replica_b = replica(&url, prefix);
    let day = day("2026-11-01");
    assert!(replica_a.try_lock(day, Duration::from_secs(5)).await);
    assert!(!replica_b.try_lock(day, Duration::from_secs(5)).await);
    replica_b.unlock(day).await;
    assert!(
        !replica_b.try_lock(day, Duration::from_secs(5)).await,
        "only the holder releases"
    );
    replica_a.unlock(day).await;
    assert!(replica_b.try_lock(day, Duration::from_millis(200)).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        replica_a.try_lock(day, Duration::from_secs(5)).await,
        "a lock expires by itself"
    );
}

#[tokio::test]
async fn without_redis_every_day_misses_at_once_and_locks_are_granted() {
    let Some(mut redis) = PrivateRedis::start() else {
        return;
    };
    let tier = RedisCallDays::new(
        Redis::new(RedisSettings {
            retry_after: Duration::from_millis(200),
            ..RedisSettings::new(redis.url())
        })
        .unwrap(),
    );
    tier.put(kept("2026-11-01"), Duration::from_secs(60)).await;
    assert!(tier.get(&[day("2026-11-01")]).await[0].is_some());
    redis.stop();
    let started = Instant::now();
    assert_eq!(
        tier.get(&[day("2026-11-01"), day("2026-11-02")]).await,
        vec![None, None]
    );
    assert!(
        tier.try_lock(day("2026-11-01"), Duration::from_secs(5))
            .await
    );
    tier.put(kept("2026-11-02"), Duration::from_secs(60)).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "no fetch waits long on a dead Redis"
    );
}
