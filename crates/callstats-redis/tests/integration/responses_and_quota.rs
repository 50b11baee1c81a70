//! The response cache, the quota and the compute lock: lifetimes, prefixes, round trips per
//! request, outages, passwords and TLS.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use callstats_domain::access::{QuotaBucket, QuotaSubject};
use callstats_domain::ports::{Found, QuotaCounter, RequestLedger, ResponseCache};
use callstats_redis::testing::{
    PrivateRedis, assert_expires_within, connection, shared_redis_url, unique_prefix,
};
use callstats_redis::{Redis, RedisCache, RedisQuota, RedisSettings};
use time::OffsetDateTime;

fn settings(url: &str, test: &str) -> RedisSettings {
    RedisSettings {
        prefix: unique_prefix(test),
        retry_after: Duration::from_millis(300),
        ..RedisSettings::new(url)
    }
}

/// One Redis at `url` and the cache and quota adapters on it, as a replica builds them.
fn adapters(settings: RedisSettings) -> (Arc<Redis>, RedisCache, RedisQuota) {
    let shared = Redis::new(settings).unwrap();
    let cache = RedisCache::new(Arc::clone(&shared));
    let quota = RedisQuota::new(Arc::clone(&shared));
    (shared, cache, quota)
}

fn bucket(subject: i64) -> QuotaBucket {
    QuotaBucket::new(&QuotaSubject::Key(subject), OffsetDateTime::now_utc())
}

#[tokio::test]
async fn cached_bytes_live_for_their_ttl_under_the_prefix() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let settings = settings(&url, "cache-ttl");
    let prefix = settings.prefix.clone();
    let cache = RedisCache::new(Redis::new(settings).unwrap());
    cache
        .put(
            "v1/operators",
            Bytes::from_static("{\"name\":\"Oʻtkir\"}".as_bytes()),
            Duration::from_millis(700),
        )
        .await;
    assert_eq!(
        cache.get("v1/operators").await.unwrap(),
        Bytes::from_static("{\"name\":\"Oʻtkir\"}".as_bytes())
    );
    assert_expires_within(&url, &format!("{prefix}cache:v1/operators"), 700).await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(cache.get("v1/operators").await, None);
}

#[tokio::test]
async fn quota_is_shared_by_every_replica_and_expires_after_its_window() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let settings = settings(&url, "quota-shared");
    let prefix = settings.prefix.clone();
    let replica_a = RedisQuota::new(Redis::new(settings.clone()).unwrap());
    let replica_b = RedisQuota::new(Redis::new(settings).unwrap());
    let bucket = bucket(7);
    let counts = [
        replica_a.increment(&bucket).await,
        replica_b.increment(&bucket).await,
        replica_a.increment(&bucket).await,
        replica_b.increment(&bucket).await,
    ];
    assert_eq!(counts, [1, 2, 3, 4]);
    let ttl: i64 = redis::cmd("TTL")
        .arg(format!("{prefix}quota:{}", bucket.name()))
        .query_async(&mut connection(&url).await)
        .await
        .unwrap();
    assert!(
        ttl > 0 && ttl <= i64::from(bucket.seconds_left) + 5,
        "TTL {ttl} for {} seconds left",
        bucket.seconds_left
    );
}

#[tokio::test]
async fn prefixes_keep_deployments_apart() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let one = RedisQuota::new(Redis::new(settings(&url, "prefix-one")).unwrap());
    let other = RedisQuota::new(Redis::new(settings(&url, "prefix-two")).unwrap());
    let bucket = bucket(1);
    assert_eq!(one.increment(&bucket).await, 1);
    assert_eq!(one.increment(&bucket).await, 2);
    assert_eq!(other.increment(&bucket).await, 1);
    let cache_one = RedisCache::new(Redis::new(settings(&url, "prefix-three")).unwrap());
    let cache_other = RedisCache::new(Redis::new(settings(&url, "prefix-four")).unwrap());
    cache_one
        .put("k", Bytes::from_static(b"1"), Duration::from_secs(5))
        .await;
    assert_eq!(cache_other.get("k").await, None);
}

#[tokio::test]
async fn one_replica_at_a_time_holds_an_entrys_compute_lock() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let settings = settings(&url, "lock");
    let replica_a = RedisCache::new(Redis::new(settings.clone()).unwrap());
    let replica_b = RedisCache::new(Redis::new(settings).unwrap());
    assert!(
        replica_a
            .try_lock("v1/operators", Duration::from_secs(5))
            .await
    );
    assert!(
        !replica_b
            .try_lock("v1/operators", Duration::from_secs(5))
            .await
    );
    replica_b.unlock("v1/operators").await;
    assert!(
        !replica_b
            .try_lock("v1/operators", Duration::from_secs(5))
            .await,
        "only the holder releases"
    );
    replica_a.unlock("v1/operators").await;
    assert!(
        replica_b
            .try_lock("v1/operators", Duration::from_secs(5))
            .await
    );
    assert!(
        replica_a
            .try_lock("v1/scripts/stats?limit=20", Duration::from_millis(200))
            .await
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        replica_b
            .try_lock("v1/scripts/stats?limit=20", Duration::from_secs(5))
            .await,
        "a lock expires by itself"
    );
}

async fn command_calls(url: &str, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut connection(url).await)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[tokio::test]
async fn a_quota_check_is_one_incr_and_one_expire() {
    let Some(redis) = PrivateRedis::start() else {
        return;
    };
    let quota = RedisQuota::new(Redis::new(RedisSettings::new(redis.url())).unwrap());
    let bucket = bucket(3);
    assert_eq!(quota.increment(&bucket).await, 1);
    let (incr, expire) = (
        command_calls(&redis.url(), "incr").await,
        command_calls(&redis.url(), "expire").await,
    );
    for _ in 0..10 {
        quota.increment(&bucket).await;
    }
    assert_eq!(command_calls(&redis.url(), "incr").await - incr, 10);
    assert_eq!(command_calls(&redis.url(), "expire").await - expire, 10);
}

#[tokio::test]
async fn counting_a_request_reads_its_cached_answer_in_the_same_pipeline() {
    let Some(redis) = PrivateRedis::start() else {
        return;
    };
    let (_, cache, quota) = adapters(RedisSettings::new(redis.url()));
    cache
        .put(
            "v1/operators",
            Bytes::from_static(b"{}"),
            Duration::from_secs(60),
        )
        .await;
    let bucket = bucket(4);
    let days = days_bucket(4);
    quota.add_within(&days, 31, 124).await.unwrap();
    let before: Vec<u64> = command_counts(["incr", "expire", "get"], &redis.url()).await;
    assert_eq!(
        quota
            .count(&bucket, Some(&days), Some("v1/operators"))
            .await,
        Found {
            requests: 1,
            days_used: 31,
            answer: Some(Bytes::from_static(b"{}"))
        }
    );
    assert_eq!(
        quota
            .count(&bucket, Some(&days), Some("v1/scripts/stats?limit=20"))
            .await,
        Found {
            requests: 2,
            days_used: 31,
            answer: None
        }
    );
    let after: Vec<u64> = command_counts(["incr", "expire", "get"], &redis.url()).await;
    let spent: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(
        spent,
        [2, 2, 4],
        "INCR, EXPIRE and a GET of the day budget and of the answer per request, nothing else"
    );
    // /ping reads no cache entry, and a service without a day budget no counter.
    assert_eq!(
        quota.count(&bucket, None, None).await,
        Found {
            requests: 3,
            days_used: 0,
            answer: None
        }
    );
    let last: Vec<u64> = command_counts(["incr", "expire", "get"], &redis.url()).await;
    assert_eq!(last[2], after[2], "no GET");
}

fn days_bucket(key: i64) -> QuotaBucket {
    QuotaBucket::new(&QuotaSubject::KeyDays(key), OffsetDateTime::now_utc())
}

#[tokio::test]
async fn two_replicas_share_one_day_budget_and_take_it_whole_or_not_at_all() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let settings = settings(&url, "day-budget");
    let prefix = settings.prefix.clone();
    let (_, _, one) = adapters(settings.clone());
    let (_, _, two) = adapters(settings);
    let days = days_bucket(11);
    assert_eq!(one.add_within(&days, 62, 124).await, Ok(62));
    assert_eq!(two.add_within(&days, 31, 124).await, Ok(93));
    assert_eq!(
        one.add_within(&days, 32, 124).await,
        Err(93),
        "32 more would be 125"
    );
    assert_eq!(two.peek(&days).await, 93, "a refusal adds nothing");
    assert_eq!(two.add_within(&days, 31, 124).await, Ok(124));
    let ttl: i64 = redis::cmd("TTL")
        .arg(format!("{prefix}quota:{}", days.name()))
        .query_async(&mut connection(&url).await)
        .await
        .unwrap();
    assert!(
        (1..=65).contains(&ttl),
        "the counter ends with its window: TTL {ttl}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_charges_from_two_replicas_never_exceed_the_budget() {
    let Some(url) = shared_redis_url() else {
        return;
    };
    let settings = settings(&url, "day-budget-race");
    let replicas = [adapters(settings.clone()).2, adapters(settings).2];
    let days = days_bucket(12);
    let charges: Vec<_> = (0..20)
        .map(|i| {
            let quota = replicas[i % 2].clone();
            tokio::spawn(async move { quota.add_within(&days, 31, 124).await.is_ok() })
        })
        .collect();
    let mut granted = 0;
    for charge in charges {
        granted += usize::from(charge.await.unwrap());
    }
    assert_eq!(granted, 4);
    assert_eq!(replicas[0].peek(&days).await, 124);
}

/// The calls of each command so far.
async fn command_counts(commands: [&str; 3], url: &str) -> Vec<u64> {
    let mut calls = Vec::new();
    for command in commands {
        calls.push(command_calls(url, command).await);
    }
    calls
}

#[tokio::test]
async fn without_redis_the_cache_misses_and_quota_counts_in_process_then_redis_comes_back() {
    let Some(mut redis) = PrivateRedis::start() else {
        return;
    };
    let (shared, cache, quota) = adapters(RedisSettings {
        retry_after: Duration::from_millis(200),
        ..RedisSettings::new(redis.url())
    });
    let bucket = bucket(9);
    cache
        .put("k", Bytes::from_static(b"shared"), Duration::from_secs(60))
        .await;
    assert_eq!(quota.increment(&bucket).await, 1);
    assert!(!shared.is_down());

    redis.stop();
    let started = Instant::now();
    assert_eq!(cache.get("k").await, None, "cache bypassed");
    assert_eq!(
        quota.increment(&bucket).await,
        1,
        "counted in process from zero"
    );
    assert_eq!(quota.increment(&bucket).await, 2);
    assert_eq!(
        quota.count(&bucket, None, Some("k")).await,
        Found {
            requests: 3,
            days_used: 0,
            answer: None
        },
        "counted in process, and the cache misses"
    );
    let days = days_bucket(9);
    assert_eq!(
        quota.add_within(&days, 100, 124).await,
        Ok(100),
        "the day budget too"
    );
    assert_eq!(quota.add_within(&days, 31, 124).await, Err(100));
    assert!(shared.is_down());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "no request waits long on a dead Redis"
    );

    redis.spawn().unwrap();
    cache
        .put("k2", Bytes::from_static(b"again"), Duration::from_secs(60))
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        cache
            .put("k2", Bytes::from_static(b"again"), Duration::from_secs(60))
            .await;
        if cache.get("k2").await.is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Redis not used again after it came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!shared.is_down());
    assert_eq!(
        quota.increment(&bucket).await,
        1,
        "a fresh Redis counts from zero again"
    );
}

#[tokio::test]
async fn a_redis_with_a_password_is_used_with_the_password_in_the_url() {
    let Some(redis) = PrivateRedis::start_with_password("s3cret/with?odd@chars") else {
        return;
    };
    // Reserved characters are percent-encoded in the URL, as in any URL.
    let url = redis
        .url()
        .replace("s3cret/with?odd@chars", "s3cret%2Fwith%3Fodd%40chars");
    let (shared, cache, quota) = adapters(RedisSettings::new(url.clone()));
    cache
        .put(
            "k",
            Bytes::from_static(b"behind a password"),
            Duration::from_secs(60),
        )
        .await;
    assert_eq!(
        cache.get("k").await,
        Some(Bytes::from_static(b"behind a password"))
    );
    assert_eq!(quota.increment(&bucket(11)).await, 1);
    assert!(!shared.is_down());

    // The wrong password: Redis refuses, the adapters degrade as for any outage.
    let wrong = Redis::new(RedisSettings::new(url.replace("s3cret", "wrong"))).unwrap();
    assert_eq!(RedisCache::new(Arc::clone(&wrong)).get("k").await, None);
    assert!(wrong.is_down());
}

#[tokio::test]
async fn a_redis_over_tls_is_used_with_a_rediss_url() {
    let Some(redis) = PrivateRedis::start_with_tls() else {
        return;
    };
    let (shared, cache, quota) = adapters(RedisSettings::new(redis.url()));
    cache
        .put(
            "k",
            Bytes::from_static(b"over TLS"),
            Duration::from_secs(60),
        )
        .await;
    assert_eq!(cache.get("k").await, Some(Bytes::from_static(b"over TLS")));
    assert_eq!(quota.increment(&bucket(12)).await, 1);
    assert!(!shared.is_down());
    // Plain text to a TLS-only port is refused, and the adapters degrade as for an outage.
    let plain = Redis::new(RedisSettings::new(
        redis
            .url()
            .replace("rediss://", "redis://")
            .replace("/#insecure", ""),
    ))
    .unwrap();
    assert_eq!(RedisCache::new(Arc::clone(&plain)).get("k").await, None);
    assert!(plain.is_down());
}
