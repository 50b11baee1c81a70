//! In-process adapters: the response cache and quota counters a single replica uses when no
//! Redis is configured (and falls back to when Redis is unreachable), the in-process tier of
//! the call-day store, and a short-lived cache of key look-ups in front of any key store.
//!
//! The caches are `quick_cache` caches: a look-up is one hash of the key and a read lock
//! on one shard, with nothing recorded for later and no background work, because every request
//! makes three of them. Lifetimes are kept with the entries and checked when read; expired
//! entries make room like any other cold entry.
//!
//! Depends on the domain's ports only; never on the web layer, a database or Redis.

use std::collections::HashSet;
use std::convert::Infallible;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use callstats_domain::access::{ApiKeyRecord, KeyDigest, QuotaBucket, QuotaSubject};
use callstats_domain::calendar::Day;
use callstats_domain::call_day::CallDay;
use callstats_domain::limits::fits;
use callstats_domain::ports::{
    CallDayCache, KeyLookup, KeyStore, QuotaCounter, ResponseCache, StoreError,
};
use quick_cache::sync::Cache;
use quick_cache::{Equivalent, Weighter};

/// The longest a key look-up may be reused: a revoked key stops working within this time.
pub const MAX_KEY_CACHE_TTL: Duration = Duration::from_secs(10);

/// A cached value and the moment it stops being served.
#[derive(Clone)]
struct Expiring<T> {
    value: T,
    until: Instant,
}

impl<T> Expiring<T> {
    fn new(value: T, ttl: Duration) -> Self {
        let now = Instant::now();
        Self {
            value,
            until: now.checked_add(ttl).unwrap_or(now),
        }
    }

    fn is_fresh(&self) -> bool {
        Instant::now() < self.until
    }
}

/// The value under `key` while it is fresh. An expired entry reads as absent and is removed,
/// unless a fresh one has replaced it meanwhile.
fn fresh<K, Q, T, W>(cache: &Cache<K, Expiring<T>, W>, key: &Q) -> Option<T>
where
    K: Eq + Hash,
    Q: Hash + Equivalent<K> + ?Sized,
    T: Clone,
    W: Weighter<K, Expiring<T>> + Clone,
{
    let entry = cache.get(key)?;
    if entry.is_fresh() {
        return Some(entry.value);
    }
    cache.remove_if(key, |entry| !entry.is_fresh());
    None
}

/// What one entry costs besides its key's and value's heap bytes: the key and value structs and
/// the cache's own bookkeeping (quick_cache keeps each entry in a slot of a few words).
const ENTRY_OVERHEAD: usize = 96;

/// Weighs a cached response by the heap bytes it holds: its key, its body and the entry.
#[derive(Clone, Copy)]
struct BodyBytes;

impl Weighter<String, Expiring<Bytes>> for BodyBytes {
    fn weight(&self, key: &String, entry: &Expiring<Bytes>) -> u64 {
        let bytes = key
            .capacity()
            .saturating_add(entry.value.len())
            .saturating_add(ENTRY_OVERHEAD);
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }
}

/// About how many bytes an entry is expected to weigh, to size the cache's tables.
const TYPICAL_ENTRY_BYTES: u64 = 4 * 1024;

/// Response bytes kept in process memory, each for its own lifetime, bounded in total size
/// (cold entries go first).
#[derive(Clone)]
pub struct MemoryCache {
    entries: Arc<Cache<String, Expiring<Bytes>, BodyBytes>>,
}

impl MemoryCache {
    /// `max_bytes` bounds the sum of the cached keys and bodies.
    #[must_use]
    pub fn new(max_bytes: u64) -> Self {
        let items = usize::try_from((max_bytes / TYPICAL_ENTRY_BYTES).max(16)).unwrap_or(16);
        Self {
            entries: Arc::new(Cache::with_weighter(items, max_bytes.max(1), BodyBytes)),
        }
    }
}

#[async_trait]
impl ResponseCache for MemoryCache {
    async fn get(&self, key: &str) -> Option<Bytes> {
        fresh(&self.entries, key)
    }

    async fn put(&self, key: &str, value: Bytes, ttl: Duration) {
        self.entries
            .insert(key.to_owned(), Expiring::new(value, ttl));
    }
}

/// Weighs a kept call day by the heap bytes it holds.
#[derive(Clone, Copy)]
struct DayBytes;

impl Weighter<i64, Expiring<Arc<CallDay>>> for DayBytes {
    fn weight(&self, _day: &i64, entry: &Expiring<Arc<CallDay>>) -> u64 {
        u64::try_from(entry.value.size_bytes().saturating_add(ENTRY_OVERHEAD)).unwrap_or(u64::MAX)
    }
}

/// About how much a kept day weighs (a weekday of 5,000 calls), to size the cache's tables.
const TYPICAL_DAY_BYTES: u64 = 80 * 1024;

/// The in-process tier of the call-day store: days by their number, each for its own lifetime,
/// bounded in total size (cold days go first). Every request over the same days shares the
/// same entries; nothing is copied out.
#[derive(Clone)]
pub struct MemoryCallDays {
    days: Arc<Cache<i64, Expiring<Arc<CallDay>>, DayBytes>>,
}

impl MemoryCallDays {
    /// `max_bytes` bounds the sum of the kept days' sizes.
    #[must_use]
    pub fn new(max_bytes: u64) -> Self {
        let items = usize::try_from((max_bytes / TYPICAL_DAY_BYTES).max(16)).unwrap_or(16);
        Self {
            days: Arc::new(Cache::with_weighter(items, max_bytes.max(1), DayBytes)),
        }
    }
}

#[async_trait]
impl CallDayCache for MemoryCallDays {
    async fn get(&self, days: &[Day]) -> Vec<Option<Arc<CallDay>>> {
        days.iter()
            .map(|day| fresh(&self.days, &day.number()))
            .collect()
    }

    async fn put(&self, day: Arc<CallDay>, ttl: Duration) {
        self.days
            .insert(day.day().number(), Expiring::new(day, ttl));
    }
}

/// How many quota counters are kept at most (keys and client addresses active in recent
/// minutes); the least used go first past it.
const QUOTA_COUNTERS: usize = 200_000;

/// Per-window request counters in process memory, one per subject and minute.
#[derive(Clone)]
pub struct MemoryQuota {
    counters: Arc<Cache<(QuotaSubject, i64), Arc<AtomicU64>>>,
}

impl Default for MemoryQuota {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryQuota {
    #[must_use]
    pub fn new() -> Self {
        Self {
            counters: Arc::new(Cache::new(QUOTA_COUNTERS)),
        }
    }

    /// The bucket's count so far, without adding to it.
    #[must_use]
    pub fn peek_now(&self, bucket: &QuotaBucket) -> u64 {
        self.counters
            .get(&(bucket.subject, bucket.minute))
            .map_or(0, |counter| counter.load(Ordering::Relaxed))
    }

    /// Adds one request and returns the bucket's count, without awaiting anything.
    #[must_use]
    pub fn increment_now(&self, bucket: &QuotaBucket) -> u64 {
        self.counter(bucket)
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1)
    }

    /// [`QuotaCounter::add_within`], without awaiting anything.
    pub fn add_within_now(
        &self,
        bucket: &QuotaBucket,
        amount: u64,
        limit: u64,
    ) -> Result<u64, u64> {
        let counter = self.counter(bucket);
        counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
                fits(count, amount, limit).then(|| count.saturating_add(amount))
            })
            .map(|before| before.saturating_add(amount))
    }

    fn counter(&self, bucket: &QuotaBucket) -> Arc<AtomicU64> {
        let key = (bucket.subject, bucket.minute);
        let Ok(counter) = self
            .counters
            .get_or_insert_with(&key, || Ok::<_, Infallible>(Arc::default()));
        counter
    }
}

#[async_trait]
impl QuotaCounter for MemoryQuota {
    async fn increment(&self, bucket: &QuotaBucket) -> u64 {
        self.increment_now(bucket)
    }

    async fn peek(&self, bucket: &QuotaBucket) -> u64 {
        self.peek_now(bucket)
    }

    async fn add_within(&self, bucket: &QuotaBucket, amount: u64, limit: u64) -> Result<u64, u64> {
        self.add_within_now(bucket, amount, limit)
    }
}

/// How many known keys are kept at most.
const KNOWN_KEYS: usize = 100_000;
/// How many unknown digests are remembered at most: kept apart from the known keys, so a flood
/// of guessed keys cannot push a partner's key out.
const UNKNOWN_KEYS: usize = 100_000;

/// The digests of every key.
type Digests = Arc<HashSet<[u8; 32]>>;

/// A portal store whose key look-ups are reused for a short while, so a busy key costs one
/// query per interval rather than one per request; concurrent look-ups of the same key make
/// one query. Keys found and digests found unknown are kept apart, each bounded; failed
/// look-ups are not kept. Everything else goes straight through.
///
/// After a look-up that found nothing it also reads the digests of every key, at most once per
/// interval, so that [`KeyStore::find_seen_key`] can tell a guess without a look-up.
pub struct KeyCache {
    inner: Arc<dyn KeyStore>,
    ttl: Duration,
    known: Cache<[u8; 32], Expiring<ApiKeyRecord>>,
    unknown: Cache<[u8; 32], Expiring<()>>,
    /// Every key's digest, and when they were read.
    digests: std::sync::Mutex<Option<Expiring<Digests>>>,
    /// Held by the one read of the digests under way.
    reading_digests: tokio::sync::Mutex<()>,
}

impl KeyCache {
    /// What the cache knows of `digest`: `Some(found)` for a look-up it keeps (a known key, or
    /// a digest known to be unknown), `None` when only the store can tell.
    fn known_key(&self, digest: &KeyDigest) -> Option<Option<ApiKeyRecord>> {
        if let Some(record) = fresh(&self.known, &digest.0) {
            return Some(Some(record));
        }
        fresh(&self.unknown, &digest.0).map(|()| None)
    }

    /// `ttl` is capped at [`MAX_KEY_CACHE_TTL`].
    #[must_use]
    pub fn new(inner: Arc<dyn KeyStore>, ttl: Duration) -> Self {
        Self {
            inner,
            ttl: ttl.min(MAX_KEY_CACHE_TTL),
            known: Cache::new(KNOWN_KEYS),
            unknown: Cache::new(UNKNOWN_KEYS),
            digests: std::sync::Mutex::new(None),
            reading_digests: tokio::sync::Mutex::new(()),
        }
    }

    /// The digests read at most `ttl` ago, if any.
    fn recent_digests(&self) -> Option<Digests> {
        self.digests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|read| read.is_fresh())
            .map(|read| Arc::clone(&read.value))
    }

    /// Reads every key's digest again unless that was done within `ttl` (one read at a time).
    /// A failed read is not kept: guesses are then looked up one by one, as without it.
    async fn read_digests(&self) {
        if self.recent_digests().is_some() {
            return;
        }
        let _reading = self.reading_digests.lock().await;
        if self.recent_digests().is_some() {
            return;
        }
        if let Ok(digests) = self.inner.key_digests().await {
            let digests = digests.into_iter().map(|digest| digest.0).collect();
            *self.digests.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(Expiring::new(Arc::new(digests), self.ttl));
        }
    }
}

#[async_trait]
impl KeyStore for KeyCache {
    async fn find_key(&self, digest: &KeyDigest) -> Result<Option<ApiKeyRecord>, StoreError> {
        loop {
            if let Some(found) = self.known_key(digest) {
                return Ok(found);
            }
            // One look-up per digest at a time: the others wait for its placeholder.
            let guard = match self.known.get_value_or_guard_async(&digest.0).await {
                Ok(entry) if entry.is_fresh() => return Ok(Some(entry.value)),
                Ok(_) => {
                    self.known.remove_if(&digest.0, |entry| !entry.is_fresh());
                    continue;
                }
                Err(guard) => guard,
            };
            // A look-up that ended while this one waited may have found the digest unknown.
            if fresh(&self.unknown, &digest.0).is_some() {
                return Ok(None);
            }
            let found = self.inner.find_key(digest).await?;
            match &found {
                Some(record) => {
                    let _ = guard.insert(Expiring::new(record.clone(), self.ttl));
                }
                None => {
                    self.unknown.insert(digest.0, Expiring::new((), self.ttl));
                    drop(guard);
                    // Someone is guessing, perhaps: know every key, so the next guesses can be
                    // told apart without a look-up each (see `find_seen_key`).
                    self.read_digests().await;
                }
            }
            return Ok(found);
        }
    }

    async fn key_digests(&self) -> Result<Vec<KeyDigest>, StoreError> {
        self.inner.key_digests().await
    }

    async fn find_seen_key(&self, digest: &KeyDigest) -> Result<KeyLookup, StoreError> {
        let unseen = self.known_key(digest).is_none()
            && self
                .recent_digests()
                .is_some_and(|digests| !digests.contains(&digest.0));
        if unseen {
            return Ok(KeyLookup::Unseen);
        }
        Ok(match self.find_key(digest).await? {
            Some(key) => KeyLookup::Found(key),
            None => KeyLookup::Absent,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callstats_domain::access::{ApiKeySecret, ClientAddress};
    use callstats_domain::ports::MockKeyStore;
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
        assert!(
            cache.entries.weight() <= 10_000,
            "{}",
            cache.entries.weight()
        );
        assert!(cache.get("k99").await.is_some(), "the newest entry is kept");
    }

    fn call_day(number: i64, calls: usize) -> Arc<CallDay> {
        let day = Day::new(
            time::Date::from_julian_day(2_440_588 + i32::try_from(number).unwrap()).unwrap(),
        );
        let midnight = callstats_domain::tz::local_midnight_unix(day.date());
        let records = (0..calls).map(|n| callstats_domain::model::CallRecord {
            direction: callstats_domain::params::Direction::Inbound,
            agent_number: None,
            started_at: midnight + i64::try_from(n).unwrap(),
            duration_seconds: 1.0,
        });
        Arc::new(CallDay::from_records(day, 0, records))
    }

    #[tokio::test]
    async fn kept_days_are_shared_not_copied_and_expire_with_their_lifetime() {
        let tier = MemoryCallDays::new(1 << 20);
        let (a, b) = (call_day(20_000, 10), call_day(20_001, 10));
        tier.put(Arc::clone(&a), Duration::from_millis(80)).await;
        tier.put(Arc::clone(&b), Duration::from_secs(60)).await;
        let read = tier
            .get(&[a.day(), b.day(), call_day(20_002, 0).day()])
            .await;
        assert!(
            Arc::ptr_eq(read[0].as_ref().unwrap(), &a),
            "the same entry, not a copy"
        );
        assert!(read[2].is_none());
        tokio::time::sleep(Duration::from_millis(150)).await;
        let read = tier.get(&[a.day(), b.day()]).await;
        assert!(read[0].is_none(), "expired");
        assert!(read[1].is_some());
    }

    #[tokio::test]
    async fn kept_days_stay_within_their_byte_bound() {
        let tier = MemoryCallDays::new(200_000);
        for number in 0..40 {
            // About 16 KB each: 40 of them are three times the bound.
            tier.put(call_day(20_000 + number, 1_000), Duration::from_secs(60))
                .await;
        }
        assert!(tier.days.weight() <= 200_000, "{}", tier.days.weight());
        let newest = call_day(20_039, 0).day();
        assert!(
            tier.get(&[newest]).await[0].is_some(),
            "the newest day is kept"
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
    async fn a_budget_takes_what_fits_whole_or_nothing() {
        let quota = MemoryQuota::new();
        let days = QuotaBucket::new(
            &QuotaSubject::KeyDays(1),
            datetime!(2026-11-21 06:15:10 UTC),
        );
        assert_eq!(quota.add_within(&days, 31, 124).await, Ok(31));
        assert_eq!(quota.add_within(&days, 93, 124).await, Ok(124));
        assert_eq!(quota.add_within(&days, 1, 124).await, Err(124), "full");
        assert_eq!(quota.add_within(&days, 0, 124).await, Ok(124));
        assert_eq!(quota.peek(&days).await, 124, "a refusal adds nothing");
        let other = QuotaBucket::new(
            &QuotaSubject::KeyDays(2),
            datetime!(2026-11-21 06:15:10 UTC),
        );
        assert_eq!(quota.add_within(&other, 125, 124).await, Err(0));
        assert_eq!(quota.peek(&other).await, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_budget_charges_never_exceed_the_limit() {
        let quota = Arc::new(MemoryQuota::new());
        let days = QuotaBucket::new(
            &QuotaSubject::KeyDays(1),
            datetime!(2026-11-21 06:15:10 UTC),
        );
        let tasks: Vec<_> = (0..40)
            .map(|_| {
                let quota = Arc::clone(&quota);
                tokio::spawn(async move { quota.add_within(&days, 31, 124).await.is_ok() })
            })
            .collect();
        let mut granted = 0;
        for task in tasks {
            granted += usize::from(task.await.unwrap());
        }
        assert_eq!(granted, 4);
        assert_eq!(quota.peek(&days).await, 124);
    }

    #[tokio::test]
    async fn quota_counts_concurrent_requests_exactly() {
        let quota = Arc::new(MemoryQuota::new());
        let bucket = QuotaBucket::new(
            &QuotaSubject::Client(ClientAddress::Ip("203.0.113.9".parse().unwrap())),
            datetime!(2026-11-21 06:15:10 UTC),
        );
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let quota = Arc::clone(&quota);
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

    /// A store whose keys have these digests.
    fn holding(digests: &[KeyDigest]) -> MockKeyStore {
        let digests = digests.to_vec();
        let mut store = MockKeyStore::new();
        store
            .expect_key_digests()
            .returning(move || Ok(digests.clone()));
        store
    }

    #[tokio::test]
    async fn key_lookups_are_reused_within_the_ttl_and_refreshed_after() {
        let digest = ApiKeySecret::from_random_bytes(&[1; 32]).digest();
        let mut store = holding(&[digest]);
        store
            .expect_find_key()
            .times(2)
            .returning(|_| Ok(Some(record())));
        let cache = KeyCache::new(Arc::new(store), Duration::from_millis(100));
        for _ in 0..5 {
            assert_eq!(cache.find_key(&digest).await.unwrap(), Some(record()));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(cache.find_key(&digest).await.unwrap(), Some(record()));
    }

    #[tokio::test]
    async fn guessed_keys_never_push_a_known_key_out_and_are_told_apart_after_one_read() {
        let known = ApiKeySecret::from_random_bytes(&[4; 32]).digest();
        let mut store = MockKeyStore::new();
        // Every key's digest is read once in the interval, after the first guess.
        store
            .expect_key_digests()
            .times(1)
            .returning(move || Ok(vec![known]));
        store
            .expect_find_key()
            .withf(move |digest| *digest == known)
            .times(1)
            .returning(|_| Ok(Some(record())));
        store.expect_find_key().returning(|_| Ok(None));
        let cache = KeyCache::new(Arc::new(store), Duration::from_secs(10));
        assert_eq!(cache.find_key(&known).await.unwrap(), Some(record()));
        let guess = |n: u32| {
            let mut bytes = [0_u8; 32];
            bytes[..4].copy_from_slice(&n.to_le_bytes());
            bytes[31] = 0xff;
            KeyDigest(bytes)
        };
        assert_eq!(
            cache.find_seen_key(&guess(0)).await.unwrap(),
            KeyLookup::Absent,
            "nothing read yet: looked up"
        );
        // More guessed digests than the cache keeps keys.
        for n in 1..u32::try_from(KNOWN_KEYS + 20_000).unwrap() {
            assert_eq!(cache.find_key(&guess(n)).await.unwrap(), None);
        }
        assert_eq!(
            cache.find_seen_key(&guess(u32::MAX)).await.unwrap(),
            KeyLookup::Unseen,
            "not among the keys read: not looked up"
        );
        assert_eq!(
            cache.find_seen_key(&known).await.unwrap(),
            KeyLookup::Found(record())
        );
        assert_eq!(
            cache.find_key(&known).await.unwrap(),
            Some(record()),
            "still known, without a second query"
        );
    }

    #[tokio::test]
    async fn an_unknown_digest_is_remembered_only_briefly() {
        let created = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut store = MockKeyStore::new();
        store.expect_key_digests().returning(|| Ok(vec![]));
        let exists = Arc::clone(&created);
        store
            .expect_find_key()
            .times(2)
            .returning(move |_| Ok(exists.load(Ordering::SeqCst).then(record)));
        let cache = KeyCache::new(Arc::new(store), Duration::from_millis(100));
        let digest = ApiKeySecret::from_random_bytes(&[5; 32]).digest();
        assert_eq!(cache.find_key(&digest).await.unwrap(), None);
        created.store(true, Ordering::SeqCst);
        assert_eq!(cache.find_key(&digest).await.unwrap(), None, "remembered");
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(
            cache.find_key(&digest).await.unwrap(),
            Some(record()),
            "a key created after a miss works once the miss is forgotten"
        );
    }

    #[tokio::test]
    async fn failed_key_lookups_are_not_kept() {
        let digest = ApiKeySecret::from_random_bytes(&[2; 32]).digest();
        let mut store = holding(&[digest]);
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
        assert!(cache.find_key(&digest).await.is_err());
        assert_eq!(cache.find_key(&digest).await.unwrap(), None);
    }

    #[test]
    fn key_cache_ttl_is_capped_at_ten_seconds() {
        let cache = KeyCache::new(Arc::new(MockKeyStore::new()), Duration::from_secs(3600));
        assert_eq!(cache.ttl, MAX_KEY_CACHE_TTL);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_lookups_of_one_key_make_one_query() {
        let digest = ApiKeySecret::from_random_bytes(&[3; 32]).digest();
        let mut store = holding(&[digest]);
        store.expect_find_key().times(1).returning(|_| {
            // Long enough for every other look-up to arrive while this one runs.
            std::thread::sleep(Duration::from_millis(50));
            Ok(Some(record()))
        });
        let cache = Arc::new(KeyCache::new(Arc::new(store), Duration::from_secs(10)));
        let lookups: Vec<_> = (0..8)
            .map(|_| {
                let cache = Arc::clone(&cache);
                tokio::spawn(async move { cache.find_key(&digest).await })
            })
            .collect();
        for lookup in lookups {
            assert_eq!(lookup.await.unwrap().unwrap(), Some(record()));
        }
    }
}
