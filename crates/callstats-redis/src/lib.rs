//! Redis adapters, so that several replicas share one response cache and one quota: a
//! partner's 120 requests a minute are 120 in total, and a cached answer is the same bytes
//! whichever replica serves it.
//!
//! Redis is an accelerator, never a dependency: every call has a short deadline, and while
//! Redis is unreachable the cache is bypassed (a miss) and quotas are counted in process. One
//! warning is logged when an outage starts and one line when it ends; after a failure Redis is
//! left alone for a moment, then tried again, so the service returns to it by itself.
//!
//! Depends on the domain's ports and the in-process adapters; never on the web layer or the
//! portal database.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use callstats_domain::access::QuotaBucket;
use callstats_domain::ports::{Found, QuotaCounter, RequestLedger, ResponseCache};
use callstats_in_process::MemoryQuota;
use callstats_infra::breaker::{Breaker, Permit, Transition};
use callstats_infra::redact;
use redis::aio::ConnectionManager;

/// Declares an adapter holding the shared connection and its own lock token (`lock_token`), so
/// the adapters that lock in Redis are built the same way.
macro_rules! token_adapter {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone)]
        pub struct $name {
            redis: Arc<Redis>,
            /// Names this adapter's locks and claims (Redis keeps it; nothing reads it but an
            /// operator).
            token: String,
        }

        impl $name {
            /// The adapter on `redis`, under its key prefix (replicas sharing a prefix share it).
            #[must_use]
            pub fn new(redis: Arc<Redis>) -> Self {
                Self {
                    redis,
                    token: $crate::lock_token(),
                }
            }
        }
    };
}

mod call_days;
mod lease;
mod live;
#[cfg(feature = "testing")]
pub mod testing;

pub use call_days::RedisCallDays;
pub use lease::RedisLease;
pub use live::{RedisLiveRelay, RedisStreamSlots};

/// How to reach Redis. `Debug` shows the URL redacted.
#[derive(Clone)]
pub struct RedisSettings {
    /// `redis://host:port[/db]`.
    pub url: String,
    /// Prepended to every key, so deployments (and tests) sharing a Redis stay apart.
    pub prefix: String,
    /// Deadline of one Redis call; past it the call counts as failed.
    pub timeout: Duration,
    /// After a failure, how long to leave Redis alone before trying again.
    pub retry_after: Duration,
}

impl RedisSettings {
    pub const DEFAULT_PREFIX: &str = "callstats:";

    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: Self::DEFAULT_PREFIX.into(),
            timeout: Duration::from_millis(250),
            retry_after: Duration::from_secs(1),
        }
    }
}

impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSettings")
            .field("url", &redact::url(&self.url))
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("retry_after", &self.retry_after)
            .finish()
    }
}

/// The URL could not be used; it is shown redacted (`redact::url`).
#[derive(Debug, thiserror::Error)]
#[error("invalid Redis URL {url}: {reason}")]
pub struct InvalidRedisUrl {
    url: String,
    reason: String,
}

impl InvalidRedisUrl {
    fn new(url: &str, error: &redis::RedisError) -> Self {
        Self {
            url: redact::url(url),
            reason: error.to_string(),
        }
    }
}

/// One lazily connected, self-reconnecting connection shared by the adapters, with the
/// outage bookkeeping.
pub struct Redis {
    connection: ConnectionManager,
    /// What opens the dedicated connections that a shared one cannot be (pub/sub).
    client: redis::Client,
    settings: RedisSettings,
    /// Open after one failed round trip: Redis is not tried again for `retry_after`, then one
    /// probe goes.
    breaker: Breaker,
}

impl Redis {
    /// Prepares the connection; nothing is sent until the first call, so a Redis that is down
    /// at start-up does not stop the service.
    pub fn new(settings: RedisSettings) -> Result<Arc<Self>, InvalidRedisUrl> {
        // TLS (rediss://) uses the process's rustls provider: ring, as for the call platform
        // client. Err only means one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = redis::Client::open(settings.url.as_str())
            .map_err(|e| InvalidRedisUrl::new(&settings.url, &e))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(settings.timeout))
            .set_response_timeout(Some(settings.timeout))
            .set_number_of_retries(1)
            .set_max_delay(settings.retry_after);
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| InvalidRedisUrl::new(&settings.url, &e))?;
        Ok(Arc::new(Self {
            connection,
            client,
            breaker: Breaker::new(1, settings.retry_after),
            settings,
        }))
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.settings.prefix)
    }

    /// Runs one round trip, or `None` when Redis is resting after a failure, fails or is slow.
    async fn run<T: redis::FromRedisValue>(
        &self,
        what: &'static str,
        pipeline: &redis::Pipeline,
    ) -> Option<T> {
        let mut connection = self.connection.clone();
        self.guarded(what, pipeline.query_async::<T>(&mut connection))
            .await
    }

    /// Opens a dedicated pub/sub connection subscribed to the channel `name` (prefixed), or
    /// `None` when Redis is resting after a failure, fails or is slow to connect; counted and
    /// logged as a failed round trip is.
    async fn subscribe(&self, what: &'static str, name: &str) -> Option<redis::aio::PubSubStream> {
        let channel = self.key(name);
        self.guarded(what, async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok(pubsub.into_on_message())
        })
        .await
    }

    /// Runs `call` under the breaker and the deadline: its value, or `None` when Redis is
    /// resting after a failure, or `call` fails or is slow (counted, and logged once per outage).
    async fn guarded<T>(
        &self,
        what: &'static str,
        call: impl Future<Output = redis::RedisResult<T>>,
    ) -> Option<T> {
        let Ok(permit) = self.breaker.try_acquire() else {
            fell_back(what);
            return None;
        };
        let outcome = tokio::time::timeout(self.settings.timeout, call).await;
        match outcome {
            Ok(Ok(value)) => {
                if permit.success() == Transition::Closed {
                    tracing::info!("Redis is reachable again: shared cache and quota resumed");
                }
                Some(value)
            }
            Ok(Err(err)) => failed(what, &err.to_string(), permit),
            Err(_) => failed(what, "timed out", permit),
        }
    }

    /// Tries to take the lock `name` for `ttl` with `token`; `true` also when Redis cannot be
    /// reached (the caller's local single flight is then all there is).
    async fn try_lock(&self, what: &'static str, name: &str, token: &str, ttl: Duration) -> bool {
        let millis = ttl.as_millis().max(1);
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("SET")
            .arg(self.key(name))
            .arg(token)
            .arg("NX")
            .arg("PX")
            .arg(millis);
        match self.run::<(Option<String>,)>(what, &pipeline).await {
            Some((taken,)) => taken.is_some(),
            None => true,
        }
    }

    /// Gives up the lock `name` if it still holds `token`.
    async fn unlock(&self, what: &'static str, name: &str, token: &str) {
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("EVAL")
            .arg(UNLOCK)
            .arg(1)
            .arg(self.key(name))
            .arg(token)
            .ignore();
        let _: Option<()> = self.run(what, &pipeline).await;
    }

    /// Stores `value` under `name` for `ttl`.
    async fn set(&self, what: &'static str, name: &str, value: &[u8], ttl: Duration) {
        let millis = ttl.as_millis().max(1);
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("SET")
            .arg(self.key(name))
            .arg(value)
            .arg("PX")
            .arg(millis)
            .ignore();
        let _: Option<()> = self.run(what, &pipeline).await;
    }

    /// Whether the last call failed (for readiness reporting).
    #[must_use]
    pub fn is_down(&self) -> bool {
        self.breaker.is_open()
    }

    /// One PING, for readiness checks; not subject to the resting period.
    pub async fn ping(&self) -> Result<(), String> {
        let mut connection = self.connection.clone();
        match tokio::time::timeout(
            self.settings.timeout,
            redis::cmd("PING").query_async::<String>(&mut connection),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err("timed out".into()),
        }
    }
}

/// Counts a call answered without Redis (failed, slow, or skipped while Redis rests), so
/// dashboards see an outage's extent and not only its start.
fn fell_back(what: &'static str) {
    metrics::counter!("callstats_redis_fallbacks_total", "operation" => what).increment(1);
}

/// A failed round trip: counted, and logged once per outage (when it opens the breaker; a
/// failed probe is the same outage).
fn failed<T>(what: &'static str, cause: &str, permit: Permit<'_>) -> Option<T> {
    fell_back(what);
    if permit.failure() == Transition::Opened {
        tracing::warn!(
            operation = what,
            cause,
            "Redis unreachable: serving without the shared cache, counting quotas in process"
        );
    }
    None
}

/// Deletes a lock only if it still holds our token.
/// Holds the lease `KEYS[1]` for token `ARGV[1]` for `ARGV[2]` ms: renews it when the token
/// has it, takes it when nobody does; 1 when held, 0 otherwise.
const HOLD: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) elseif redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 else return 0 end";

const UNLOCK: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/// Names one adapter's locks, so it only ever releases its own: 128 random bits, because
/// replicas in containers share a PID (1) and build their adapters in the same order, so a
/// PID and a counter would name the same token in every replica.
fn lock_token() -> String {
    let mut bytes = [0_u8; 16];
    // Without the OS generator, the clock's nanoseconds still tell replicas apart.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

token_adapter! {
    /// The response cache in Redis: one `SET … PX` per miss, one `GET` per lookup, and a
    /// `SET NX PX` lock so that replicas missing the same entry compute it once.
    RedisCache
}

#[async_trait]
impl ResponseCache for RedisCache {
    async fn get(&self, key: &str) -> Option<Bytes> {
        let mut pipeline = redis::pipe();
        pipeline.get(self.redis.key(&cache_name(key)));
        self.redis
            .run::<(Option<Vec<u8>>,)>("cache read", &pipeline)
            .await
            .and_then(|(v,)| v)
            .map(Bytes::from)
    }

    async fn put(&self, key: &str, value: Bytes, ttl: Duration) {
        self.redis
            .set("cache write", &cache_name(key), &value, ttl)
            .await;
    }

    async fn try_lock(&self, key: &str, ttl: Duration) -> bool {
        self.redis
            .try_lock("cache lock", &format!("lock:{key}"), &self.token, ttl)
            .await
    }

    async fn unlock(&self, key: &str) {
        self.redis
            .unlock("cache unlock", &format!("lock:{key}"), &self.token)
            .await;
    }
}

/// Where the response cache keeps the entry `key`.
fn cache_name(key: &str) -> String {
    format!("cache:{key}")
}

/// Quota counters in Redis: `INCR` and `EXPIRE` pipelined in one round trip per request,
/// counted in process while Redis is unreachable. Counting a cacheable request also reads its
/// entry of the response cache in the same Redis ([`RedisCache`]) on that round trip, so a
/// cached answer costs one round trip, not two.
#[derive(Clone)]
pub struct RedisQuota {
    redis: Arc<Redis>,
    fallback: MemoryQuota,
}

impl RedisQuota {
    #[must_use]
    pub fn new(redis: Arc<Redis>) -> Self {
        Self {
            redis,
            fallback: MemoryQuota::new(),
        }
    }
}

impl RedisQuota {
    fn counter(&self, bucket: &QuotaBucket) -> String {
        self.redis.key(&format!("quota:{}", bucket.name()))
    }

    /// `INCR` and `EXPIRE` of the bucket's counter.
    fn incr(&self, bucket: &QuotaBucket) -> redis::Pipeline {
        let key = self.counter(bucket);
        let mut pipeline = redis::pipe();
        // A little past the window's end so a counter never vanishes while still in use.
        pipeline
            .cmd("INCR")
            .arg(&key)
            .expire(&key, i64::from(bucket.seconds_left) + 5)
            .ignore();
        pipeline
    }
}

#[async_trait]
impl QuotaCounter for RedisQuota {
    async fn increment(&self, bucket: &QuotaBucket) -> u64 {
        match self.redis.run::<(u64,)>("quota", &self.incr(bucket)).await {
            Some((count,)) => count,
            None => self.fallback.increment(bucket).await,
        }
    }

    async fn peek(&self, bucket: &QuotaBucket) -> u64 {
        let mut pipeline = redis::pipe();
        pipeline.get(self.counter(bucket));
        match self
            .redis
            .run::<(Option<u64>,)>("quota peek", &pipeline)
            .await
        {
            Some((count,)) => count.unwrap_or(0),
            None => self.fallback.peek(bucket).await,
        }
    }

    async fn add_within(&self, bucket: &QuotaBucket, amount: u64, limit: u64) -> Result<u64, u64> {
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("EVAL")
            .arg(ADD_WITHIN)
            .arg(1)
            .arg(self.counter(bucket))
            .arg(amount)
            .arg(limit)
            .arg(i64::from(bucket.seconds_left) + 5);
        match self.redis.run::<((bool, u64),)>("budget", &pipeline).await {
            Some(((true, count),)) => Ok(count),
            Some(((false, count),)) => Err(count),
            None => self.fallback.add_within(bucket, amount, limit).await,
        }
    }
}

#[async_trait]
impl RequestLedger for RedisQuota {
    /// `INCR` and `EXPIRE` of the request's window, then a `GET` of the day counter and of the
    /// answer when asked for, all on one round trip.
    async fn count<'a>(
        &self,
        window: &QuotaBucket,
        days: Option<&'a QuotaBucket>,
        answer: Option<&'a str>,
    ) -> Found {
        let mut pipeline = self.incr(window);
        if let Some(days) = days {
            pipeline.get(self.counter(days));
        }
        if let Some(answer) = answer {
            pipeline.get(self.redis.key(&cache_name(answer)));
        }
        let found = self
            .redis
            .run::<Vec<redis::Value>>("quota", &pipeline)
            .await
            .and_then(|values| read_found(values, days.is_some(), answer.is_some()));
        match found {
            Some(found) => found,
            // Redis unreachable: count in process; the cache misses anyway.
            None => Found {
                requests: self.fallback.increment(window).await,
                days_used: match days {
                    Some(days) => self.fallback.peek(days).await,
                    None => 0,
                },
                answer: None,
            },
        }
    }
}

/// The answers of [`RedisQuota`]'s ledger pipeline, in its order; `None` if one does not read
/// as what it should be.
fn read_found(values: Vec<redis::Value>, days: bool, answer: bool) -> Option<Found> {
    let mut values = values.into_iter();
    let requests: u64 = redis::from_redis_value(values.next()?).ok()?;
    let days_used = if days {
        redis::from_redis_value::<Option<u64>>(values.next()?)
            .ok()?
            .unwrap_or(0)
    } else {
        0
    };
    let answer = if answer {
        redis::from_redis_value::<Option<Vec<u8>>>(values.next()?)
            .ok()?
            .map(Bytes::from)
    } else {
        None
    };
    Some(Found {
        requests,
        days_used,
        answer,
    })
}

/// Adds `ARGV[1]` to the counter `KEYS[1]` if it stays within `ARGV[2]`, and sets its expiry
/// (`ARGV[3]` seconds); answers whether it added, and the count then
/// (`callstats_domain::limits::fits`, in Lua).
const ADD_WITHIN: &str = "\
local count = tonumber(redis.call('GET', KEYS[1]) or '0') \
if count + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return {0, count} end \
count = redis.call('INCRBY', KEYS[1], ARGV[1]) \
redis.call('EXPIRE', KEYS[1], ARGV[3]) \
return {1, count}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_url_is_never_shown_with_its_password() {
        let settings = RedisSettings::new("redis://:S3cret@cache:6379/not-a-db");
        assert!(!format!("{settings:?}").contains("S3cret"));
        let Err(error) = Redis::new(settings) else {
            panic!("a database that is not a number is refused");
        };
        let shown = error.to_string();
        assert!(shown.contains("redis://***@cache:6379/not-a-db"), "{shown}");
        assert!(!shown.contains("S3cret"), "{shown}");
    }

    #[test]
    fn every_adapter_gets_its_own_random_lock_token() {
        let tokens: std::collections::HashSet<String> = (0..100).map(|_| lock_token()).collect();
        assert_eq!(tokens.len(), 100);
        assert!(
            tokens
                .iter()
                .all(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit())),
            "{tokens:?}"
        );
        let pid = std::process::id().to_string();
        assert!(
            tokens.iter().all(|t| !t.starts_with(&format!("{pid}-"))),
            "nothing a replica shares"
        );
    }
}
