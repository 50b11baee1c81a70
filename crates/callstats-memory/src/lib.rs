//! In-process adapters: the response cache and quota counters a single replica uses when no
//! Redis is configured (and falls back to when Redis is unreachable), a short-lived cache of key
//! look-ups in front of any portal store, and the system clock.
//!
//! Depends on the domain's ports only; never on the web layer, a database or Redis.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use callstats_domain::access::{ApiKeyRecord, KeyDigest, QuotaBucket};
use callstats_domain::model::{CallScore, OffDayRecord, Operator, Script, Sheet, SheetContent};
use callstats_domain::params::{DateRange, Month};
use callstats_domain::ports::{Clock, PortalStore, QuotaCounter, ResponseCache, StoreError};
use moka::Expiry;

/// The longest a key look-up may be reused: a revoked key stops working within this time.
pub const MAX_KEY_CACHE_TTL: Duration = Duration::from_secs(10);

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> time::OffsetDateTime {
        time::OffsetDateTime::now_utc()
    }
}

#[derive(Clone)]
struct Entry {
    bytes: Bytes,
    ttl: Duration,
}

struct EntryExpiry;

impl Expiry<String, Entry> for EntryExpiry {
    fn expire_after_create(
        &self,
        _key: &String,
        entry: &Entry,
        _created_at: Instant,
    ) -> Option<Duration> {
        Some(entry.ttl)
    }

    fn expire_after_update(
        &self,
        _key: &String,
        entry: &Entry,
        _updated_at: Instant,
        _duration_until_expiry: Option<Duration>,
    ) -> Option<Duration> {
        Some(entry.ttl)
    }
}

/// Response bytes kept in process memory, each for its own lifetime, bounded in total size
/// (least recently used entries go first).
#[derive(Clone)]
pub struct MemoryCache {
    entries: moka::future::Cache<String, Entry>,
}

impl MemoryCache {
    /// `max_bytes` bounds the sum of the cached bodies.
    #[must_use]
    pub fn new(max_bytes: u64) -> Self {
        let entries = moka::future::Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|key: &String, entry: &Entry| {
                u32::try_from(key.len().saturating_add(entry.bytes.len())).unwrap_or(u32::MAX)
            })
            .expire_after(EntryExpiry)
            .build();
        Self { entries }
    }
}

#[async_trait]
impl ResponseCache for MemoryCache {
    async fn get(&self, key: &str) -> Option<Bytes> {
        self.entries.get(key).await.map(|entry| entry.bytes)
    }

    async fn put(&self, key: &str, value: Bytes, ttl: Duration) {
        self.entries
            .insert(key.to_owned(), Entry { bytes: value, ttl })
            .await;
    }
}

/// Per-window request counters in process memory. A bucket names its minute, so counters are
/// dropped a little after their window ends.
#[derive(Clone)]
pub struct MemoryQuota {
    counters: moka::sync::Cache<String, Arc<AtomicU64>>,
}

impl Default for MemoryQuota {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryQuota {
    #[must_use]
    pub fn new() -> Self {
        let counters = moka::sync::Cache::builder()
            .max_capacity(1_000_000)
            .time_to_live(Duration::from_secs(61))
            .build();
        Self { counters }
    }

    /// Adds one request and returns the bucket's count, without awaiting anything.
    #[must_use]
    pub fn increment_now(&self, bucket: &QuotaBucket) -> u64 {
        let counter = self
            .counters
            .get_with_by_ref(bucket.name.as_str(), || Arc::new(AtomicU64::new(0)));
        counter.fetch_add(1, Ordering::Relaxed) + 1
    }
}

#[async_trait]
impl QuotaCounter for MemoryQuota {
    async fn increment(&self, bucket: &QuotaBucket) -> u64 {
        self.increment_now(bucket)
    }
}

/// A portal store whose key look-ups are reused for a short while, so a busy key costs one
/// query per interval rather than one per request. Failed look-ups are not kept. Everything
/// else goes straight through.
pub struct KeyCache {
    inner: Arc<dyn PortalStore>,
    keys: moka::future::Cache<[u8; 32], Option<ApiKeyRecord>>,
}

impl KeyCache {
    /// `ttl` is capped at [`MAX_KEY_CACHE_TTL`].
    #[must_use]
    pub fn new(inner: Arc<dyn PortalStore>, ttl: Duration) -> Self {
        let keys = moka::future::Cache::builder()
            .max_capacity(100_000)
            .time_to_live(ttl.min(MAX_KEY_CACHE_TTL))
            .build();
        Self { inner, keys }
    }
}

#[async_trait]
impl PortalStore for KeyCache {
    async fn find_key(&self, digest: &KeyDigest) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.keys
            .try_get_with(digest.0, self.inner.find_key(digest))
            .await
            .map_err(|err| StoreError::new(err.cause.clone()))
    }

    async fn operators(&self) -> Result<Vec<Operator>, StoreError> {
        self.inner.operators().await
    }

    async fn off_days(&self, month: Month) -> Result<Vec<OffDayRecord>, StoreError> {
        self.inner.off_days(month).await
    }

    async fn published_sheets(&self, month: Option<Month>) -> Result<Vec<Sheet>, StoreError> {
        self.inner.published_sheets(month).await
    }

    async fn sheet_content(&self, sheet_id: i64) -> Result<Option<SheetContent>, StoreError> {
        self.inner.sheet_content(sheet_id).await
    }

    async fn scripts(&self) -> Result<Vec<Script>, StoreError> {
        self.inner.scripts().await
    }

    async fn call_scores(&self, range: DateRange) -> Result<Vec<CallScore>, StoreError> {
        self.inner.call_scores(range).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callstats_domain::access::{ApiKeySecret, QuotaSubject};
    use callstats_domain::ports::MockPortalStore;
    use callstats_domain::scope::ScopeSet;
    use time::macros::datetime;

    #[tokio::test]
    async fn cache_returns_stored_bytes_until_their_lifetime_ends() {
        let cache = MemoryCache::new(1 << 20);
        cache
            .put("a", Bytes::from_static(b"{}"), Duration::from_millis(80))
            .await;
        cache
            .put("b", Bytes::from_static(b"[]"), Duration::from_secs(60))
            .await;
        assert_eq!(cache.get("a").await, Some(Bytes::from_static(b"{}")));
        assert_eq!(cache.get("missing").await, None);
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(cache.get("a").await, None, "expired");
        assert_eq!(
            cache.get("b").await,
            Some(Bytes::from_static(b"[]")),
            "other lifetimes are independent"
        );
    }

    #[tokio::test]
    async fn cache_stays_within_its_byte_bound() {
        let cache = MemoryCache::new(10_000);
        for i in 0..100 {
            cache
                .put(
                    &format!("k{i}"),
                    Bytes::from(vec![b'x'; 1_000]),
                    Duration::from_secs(60),
                )
                .await;
        }
        cache.entries.run_pending_tasks().await;
        assert!(
            cache.entries.weighted_size() <= 10_000,
            "{}",
            cache.entries.weighted_size()
        );
    }

    #[tokio::test]
    async fn quota_counts_per_bucket() {
        let quota = MemoryQuota::new();
        let now = datetime!(2026-11-21 06:15:10 UTC);
        let a = QuotaBucket::new(&QuotaSubject::Key(1), now);
        let b = QuotaBucket::new(&QuotaSubject::Key(2), now);
        let next_minute =
            QuotaBucket::new(&QuotaSubject::Key(1), datetime!(2026-11-21 06:16:00 UTC));
        assert_eq!(quota.increment(&a).await, 1);
        assert_eq!(quota.increment(&a).await, 2);
        assert_eq!(quota.increment(&b).await, 1);
        assert_eq!(quota.increment(&next_minute).await, 1);
    }

    #[tokio::test]
    async fn quota_counts_concurrent_requests_exactly() {
        let quota = Arc::new(MemoryQuota::new());
        let bucket = QuotaBucket::new(
            &QuotaSubject::Client("203.0.113.9".into()),
            datetime!(2026-11-21 06:15:10 UTC),
        );
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let (quota, bucket) = (Arc::clone(&quota), bucket.clone());
                tokio::spawn(async move { quota.increment(&bucket).await })
            })
            .collect();
        let mut counts = Vec::new();
        for task in tasks {
            counts.push(task.await.unwrap());
        }
        counts.sort_unstable();
        assert_eq!(counts, (1..=50).collect::<Vec<u64>>());
    }

    fn record() -> ApiKeyRecord {
        ApiKeyRecord {
            id: 1,
            name: "k".into(),
            scopes: ScopeSet::all(),
            rate_limit_per_minute: 120,
            allowed_origin: None,
            expires_at: None,
            revoked_at: None,
        }
    }

    #[tokio::test]
    async fn key_lookups_are_reused_within_the_ttl_and_refreshed_after() {
        let mut store = MockPortalStore::new();
        store
            .expect_find_key()
            .times(2)
            .returning(|_| Ok(Some(record())));
        let cache = KeyCache::new(Arc::new(store), Duration::from_millis(100));
        let digest = ApiKeySecret::from_random_bytes(&[1; 32]).digest();
        for _ in 0..5 {
            assert_eq!(cache.find_key(&digest).await.unwrap(), Some(record()));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(cache.find_key(&digest).await.unwrap(), Some(record()));
    }

    #[tokio::test]
    async fn failed_key_lookups_are_not_kept() {
        let mut store = MockPortalStore::new();
        let mut calls = 0;
        store.expect_find_key().times(2).returning(move |_| {
            calls += 1;
            if calls == 1 {
                Err(StoreError::new("down"))
            } else {
                Ok(None)
            }
        });
        let cache = KeyCache::new(Arc::new(store), Duration::from_secs(10));
        let digest = ApiKeySecret::from_random_bytes(&[2; 32]).digest();
        assert!(cache.find_key(&digest).await.is_err());
        assert_eq!(cache.find_key(&digest).await.unwrap(), None);
    }

    #[test]
    fn key_cache_ttl_is_capped_at_ten_seconds() {
        let cache = KeyCache::new(Arc::new(MockPortalStore::new()), Duration::from_secs(3600));
        assert_eq!(cache.keys.policy().time_to_live(), Some(MAX_KEY_CACHE_TTL));
    }
}
