//! Several replicas of the service in one process, each on its own loopback port, built with
//! [`callstats::app::Assembly`] exactly as `serve` builds them, sharing one portal store and
//! one Redis, with the synthetic call platform (`spawn_sim`) as their upstream. Everything
//! goes over real HTTP.
//!
//! The Redis tests use the shared test Redis (`CALLSTATS_TEST_REDIS_URL`, a key prefix per
//! test) or a private `redis-server` they stop and start; they skip without Redis unless
//! `CALLSTATS_TEST_REQUIRE_SERVICES=1`.

mod call_days;
mod guessing;
mod live;
mod metrics;
mod outage;
mod proxy;
use crate::support::serve;
mod shared;
mod single_flight;

use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use callstats::app::{Assembly, Upstream};
use callstats::commands::keys::issue;
use callstats_callplatform::HttpPlatformConfig;
use callstats_domain::access::ApiKeySecret;
use callstats_domain::scope::ScopeSet;
use callstats_redis::RedisSettings;
use callstats_redis::testing::{shared_redis_url, unique_prefix};
use callstats_sim::{RunningSim, SimOptions, spawn_sim};
use callstats_store::Store;
use callstats_store::config::Access;
use callstats_store::keys::NewKey;
use callstats_store::testing::TestDatabase;
use serve::serve;
use time::OffsetDateTime;

/// A cached endpoint answered from the upstream (10-minute lifetime).
const SUMMARY: &str = "/api/v1/calls/summary?start=2026-11-02";

/// One running replica.
struct Replica {
    base: String,
    handle: ServerHandle,
}

impl Replica {
    /// A replica on a free loopback port: the service as `serve` assembles it, on a read-only
    /// store of `db`, with `redis` (or the in-process cache and quota) and `upstream`.
    fn start(db: &TestDatabase, redis: Option<RedisSettings>, upstream: &str) -> Self {
        Self::start_with(db, redis, upstream, |_| {})
    }

    /// [`Replica::start`], with `adjust` changing the assembly first.
    fn start_with(
        db: &TestDatabase,
        redis: Option<RedisSettings>,
        upstream: &str,
        adjust: impl FnOnce(&mut Assembly),
    ) -> Self {
        let mut service = Assembly {
            redis,
            ..serve::assembly(
                db.store(Access::ReadOnly),
                Upstream::Http(HttpPlatformConfig::new(upstream, None)),
            )
        };
        adjust(&mut service);
        let (base, handle) = serve(service, 1);
        Self { base, handle }
    }

    async fn stop(self) {
        self.handle.stop(false).await;
    }
}

/// What a replica answered.
struct Answer {
    status: u16,
    cache: Option<String>,
    remaining: Option<u64>,
    body: bytes::Bytes,
}

/// Two replicas sharing one store, one Redis and one upstream, and an HTTP client.
struct Cluster {
    replicas: [Replica; 2],
    sim: RunningSim,
    client: reqwest::Client,
}

impl Cluster {
    async fn start(db: &TestDatabase, redis: &RedisSettings) -> Self {
        let sim = spawn_sim(SimOptions::default()).unwrap();
        let replicas = [
            Replica::start(db, Some(redis.clone()), &sim.base_url()),
            Replica::start(db, Some(redis.clone()), &sim.base_url()),
        ];
        Self {
            replicas,
            sim,
            client: client(),
        }
    }

    /// `GET path` on replica `index` with `key`.
    async fn get(&self, index: usize, path: &str, key: &ApiKeySecret) -> Answer {
        get(&self.client, &self.replicas[index].base, path, key).await
    }

    async fn stop(self) {
        let [a, b] = self.replicas;
        a.stop().await;
        b.stop().await;
        self.sim.stop().await;
    }
}

fn client() -> reqwest::Client {
    callstats_callplatform::install_crypto_provider();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn get(client: &reqwest::Client, base: &str, path: &str, key: &ApiKeySecret) -> Answer {
    let response = client
        .get(format!("{base}{path}"))
        .bearer_auth(key.expose())
        .send()
        .await
        .unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    };
    let cache = header("x-cache");
    let remaining = header("x-ratelimit-remaining").map(|value| value.parse().unwrap());
    Answer {
        status: response.status().as_u16(),
        cache,
        remaining,
        body: response.bytes().await.unwrap(),
    }
}

/// Two replicas on the shared test Redis (under a prefix of their own), the admin store and a
/// key with the `calls` scope and `rate_limit` requests a minute, with its id; `None` when the
/// test skips for want of Redis.
async fn on_shared_redis(
    db: &TestDatabase,
    test: &str,
    rate_limit: u32,
) -> Option<(Cluster, Store, ApiKeySecret, i64)> {
    let url = shared_redis_url()?;
    let admin = admin(db).await;
    let (key, id) = key(&admin, "calls", rate_limit).await;
    let cluster = Cluster::start(db, &redis_settings(&url, test)).await;
    Some((cluster, admin, key, id))
}

/// Redis settings of one test: its own key prefix, and a short rest after a failure.
fn redis_settings(url: &str, test: &str) -> RedisSettings {
    RedisSettings {
        prefix: unique_prefix(test),
        retry_after: Duration::from_millis(200),
        ..RedisSettings::new(url)
    }
}

/// The migrated read-write store of `db`, for issuing and revoking keys.
async fn admin(db: &TestDatabase) -> Store {
    db.migrated_store().await
}

/// Issues a key with `scopes` and `rate_limit` requests a minute; returns it and its id.
async fn key(admin: &Store, scopes: &str, rate_limit: u32) -> (ApiKeySecret, i64) {
    let new = NewKey::new("partner", ScopeSet::parse_list(scopes).unwrap())
        .unwrap()
        .rate_limit(rate_limit)
        .unwrap();
    let (secret, listing) = issue(admin, &new, OffsetDateTime::now_utc()).await.unwrap();
    (secret, listing.id)
}

/// Waits, when needed, until the current UTC minute has at least `needed` left, so that a
/// quota window does not roll over in the middle of a check.
async fn with_minute_left(needed: Duration) {
    let now = OffsetDateTime::now_utc();
    let into_minute = Duration::from_secs(u64::from(now.second()))
        + Duration::from_nanos(u64::from(now.nanosecond()));
    if Duration::from_secs(60).saturating_sub(into_minute) < needed {
        tokio::time::sleep(Duration::from_secs(60) - into_minute + Duration::from_millis(50)).await;
    }
}

/// Polls `check` every 100 ms until it holds, failing with `what` after `limit`.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
