//! A short-lived cache of key look-ups in front of any key store, which also remembers each
//! key's last known state for when the store cannot be reached.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::access::{ApiKeyRecord, KeyDigest};
use callstats_domain::ports::{KeyLookup, KeyStore, StoreError};
use quick_cache::sync::Cache;

use crate::expiring::{Expiring, fresh};

/// The longest a key look-up may be reused: a revoked key stops working within this time.
pub const MAX_KEY_CACHE_TTL: Duration = Duration::from_secs(10);

/// How long after it was read a key's record still answers a look-up the store failed: a key
/// seen recently keeps working through a portal database outage of up to this long. Safe
/// because revoking a key needs that same database (docs/security.md, "The portal database
/// down").
pub const LAST_KNOWN_KEY_FOR: Duration = Duration::from_secs(600);

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
/// A look-up the store fails is answered from the key's record as last read, when that was
/// within [`LAST_KNOWN_KEY_FOR`], and that answer is reused like a look-up (never past the
/// bound); each such failure is counted in `callstats_key_lookup_failures_total`, by whether
/// the last known record answered it (`last_known`) or nothing could (`unavailable`).
///
/// After a look-up that found nothing it also reads the digests of every key, at most once per
/// interval, so that [`KeyStore::find_seen_key`] can tell a guess without a look-up.
pub struct KeyCache {
    inner: Arc<dyn KeyStore>,
    ttl: Duration,
    known: Cache<[u8; 32], Expiring<ApiKeyRecord>>,
    /// Every key read within [`LAST_KNOWN_KEY_FOR`], as read: kept apart from `known`, whose
    /// stale entries make way for the next look-up.
    last_known: Cache<[u8; 32], Expiring<ApiKeyRecord>>,
    unknown: Cache<[u8; 32], Expiring<()>>,
    /// Every key's digest, and when they were read.
    digests: std::sync::Mutex<Option<Expiring<Digests>>>,
    /// Held by the one read of the digests under way.
    reading_digests: tokio::sync::Mutex<()>,
}

impl KeyCache {
    /// What the cache knows of `digest`: `Some(found)` for a look-up it keeps (a known key, or
    /// a digest known to be unknown), `None` when only the store can tell.
    fn kept(&self, digest: &KeyDigest) -> Option<Option<ApiKeyRecord>> {
        if let Some(record) = fresh(&self.known, &digest.0) {
            return Some(Some(record));
        }
        fresh(&self.unknown, &digest.0).map(|()| None)
    }

    /// What [`KeyStore::find_seen_key`] would find, when the cache tells without the store: a
    /// key it keeps, a digest it knows to be unknown, or one not among every key's digests as
    /// read lately; `None` when only the store can tell.
    fn known_key(&self, digest: &KeyDigest) -> Option<KeyLookup> {
        match self.kept(digest) {
            Some(Some(key)) => Some(KeyLookup::Found(key)),
            Some(None) => Some(KeyLookup::Absent),
            None => self
                .recent_digests()
                .is_some_and(|digests| !digests.contains(&digest.0))
                .then_some(KeyLookup::Unseen),
        }
    }

    /// `ttl` is capped at [`MAX_KEY_CACHE_TTL`].
    #[must_use]
    pub fn new(inner: Arc<dyn KeyStore>, ttl: Duration) -> Self {
        Self {
            inner,
            ttl: ttl.min(MAX_KEY_CACHE_TTL),
            known: Cache::new(KNOWN_KEYS),
            last_known: Cache::new(KNOWN_KEYS),
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

/// Counts a look-up the store failed, by what answered it.
fn count_failure(answer: &'static str) {
    metrics::counter!("callstats_key_lookup_failures_total", "answer" => answer).increment(1);
}

/// Shows `callstats_key_lookup_failures_total` at 0 from the start (call it once the metrics
/// recorder is installed), so that the first failures of an outage are an increase the
/// `CallstatsPortalDatabaseDown` alert sees.
pub fn report_no_key_lookup_failures_yet() {
    for answer in ["last_known", "unavailable"] {
        metrics::counter!("callstats_key_lookup_failures_total", "answer" => answer).absolute(0);
    }
}

#[async_trait]
impl KeyStore for KeyCache {
    async fn find_key(&self, digest: &KeyDigest) -> Result<Option<ApiKeyRecord>, StoreError> {
        loop {
            if let Some(found) = self.kept(digest) {
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
            let found = match self.inner.find_key(digest).await {
                Ok(found) => found,
                Err(err) => {
                    let Some(last) = self.last_known.get(&digest.0).filter(Expiring::is_fresh)
                    else {
                        count_failure("unavailable");
                        return Err(err);
                    };
                    count_failure("last_known");
                    // Reused like a look-up, so the failing store is asked once an interval,
                    // not once a request; never past the bound.
                    let _ =
                        guard.insert(Expiring::new(last.value.clone(), self.ttl).not_after(&last));
                    return Ok(Some(last.value));
                }
            };
            match &found {
                Some(record) => {
                    self.last_known
                        .insert(digest.0, Expiring::new(record.clone(), LAST_KNOWN_KEY_FOR));
                    let _ = guard.insert(Expiring::new(record.clone(), self.ttl));
                }
                None => {
                    self.last_known.remove(&digest.0);
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
        // What the cache knows is the answer: looked up once (not again by `find_key`).
        if let Some(known) = self.known_key(digest) {
            return Ok(known);
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
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, SharedString, Unit};

    use callstats_domain::access::ApiKeySecret;
    use callstats_domain::ports::MockKeyStore;
    use callstats_domain::scope::ScopeSet;

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
    async fn what_it_knows_at_once_is_what_find_seen_key_would_find_without_the_store() {
        let known = ApiKeySecret::from_random_bytes(&[5; 32]).digest();
        let guess = ApiKeySecret::from_random_bytes(&[6; 32]).digest();
        let later = ApiKeySecret::from_random_bytes(&[7; 32]).digest();
        let mut store = holding(&[known]);
        store
            .expect_find_key()
            .withf(move |digest| *digest == known)
            .times(1)
            .returning(|_| Ok(Some(record())));
        store.expect_find_key().times(1).returning(|_| Ok(None));
        let cache = KeyCache::new(Arc::new(store), Duration::from_secs(10));
        assert_eq!(cache.known_key(&known), None, "not looked up yet");
        assert_eq!(cache.find_key(&known).await.unwrap(), Some(record()));
        assert_eq!(cache.known_key(&known), Some(KeyLookup::Found(record())));
        // A miss reads every key's digest: a digest not among them is told apart at once.
        assert_eq!(cache.find_key(&guess).await.unwrap(), None);
        assert_eq!(cache.known_key(&guess), Some(KeyLookup::Absent));
        assert_eq!(cache.known_key(&later), Some(KeyLookup::Unseen));
        assert_eq!(
            cache.find_seen_key(&later).await.unwrap(),
            KeyLookup::Unseen
        );
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
        let created = Arc::new(AtomicBool::new(false));
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

    /// The counts of `callstats_key_lookup_failures_total` by its `answer` label, for the
    /// thread it is made the recorder of.
    #[derive(Default)]
    struct Failures(std::sync::Mutex<std::collections::BTreeMap<String, Arc<AtomicU64>>>);

    impl Failures {
        fn counted(&self) -> Vec<(String, u64)> {
            let counters = self.0.lock().unwrap();
            counters
                .iter()
                .map(|(answer, count)| (answer.clone(), count.load(Ordering::SeqCst)))
                .collect()
        }
    }

    impl metrics::Recorder for Failures {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            assert_eq!(key.name(), "callstats_key_lookup_failures_total");
            let answer = key.labels().find(|label| label.key() == "answer").unwrap();
            let mut counters = self.0.lock().unwrap();
            let count = counters.entry(answer.value().to_owned()).or_default();
            Counter::from_arc(Arc::clone(count))
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    /// A store that knows `digest`'s key until `down` is set, then fails every look-up.
    fn failing_when(down: &Arc<AtomicBool>, found: usize) -> MockKeyStore {
        let mut store = MockKeyStore::new();
        let down = Arc::clone(down);
        store.expect_find_key().times(found).returning(move |_| {
            if down.load(Ordering::SeqCst) {
                Err(StoreError::new("connection refused"))
            } else {
                Ok(Some(record()))
            }
        });
        store
    }

    #[tokio::test]
    async fn a_key_read_before_the_store_failed_is_answered_from_its_last_known_state() {
        let failures = Failures::default();
        let _recorder = metrics::set_default_local_recorder(&failures);
        let digest = ApiKeySecret::from_random_bytes(&[8; 32]).digest();
        let down = Arc::new(AtomicBool::new(false));
        let cache = KeyCache::new(Arc::new(failing_when(&down, 2)), Duration::from_millis(1));
        assert_eq!(cache.find_key(&digest).await.unwrap(), Some(record()));
        down.store(true, Ordering::SeqCst);
        // Past the look-up's reuse: only the store could tell, and it fails.
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(cache.known_key(&digest), None);
        assert_eq!(
            cache.find_seen_key(&digest).await.unwrap(),
            KeyLookup::Found(record())
        );
        assert_eq!(failures.counted(), [("last_known".to_owned(), 1)]);
    }

    #[tokio::test]
    async fn a_last_known_answer_is_reused_like_a_look_up_and_never_past_its_bound() {
        let failures = Failures::default();
        let _recorder = metrics::set_default_local_recorder(&failures);
        let digest = ApiKeySecret::from_random_bytes(&[9; 32]).digest();
        let down = Arc::new(AtomicBool::new(true));
        // Asked twice: once for the first request, once after the bound.
        let cache = KeyCache::new(Arc::new(failing_when(&down, 2)), Duration::from_secs(10));
        // Read 20 ms before the bound ends.
        cache
            .last_known
            .insert(digest.0, Expiring::new(record(), Duration::from_millis(20)));
        for _ in 0..3 {
            assert_eq!(cache.find_key(&digest).await.unwrap(), Some(record()));
        }
        assert_eq!(cache.known_key(&digest), Some(KeyLookup::Found(record())));
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            cache.known_key(&digest),
            None,
            "reused no longer than the last known state lasts, though the reuse is 10 s"
        );
        assert!(cache.find_key(&digest).await.is_err());
        assert_eq!(
            failures.counted(),
            [("last_known".to_owned(), 1), ("unavailable".to_owned(), 1)]
        );
    }

    #[tokio::test]
    async fn the_last_known_state_is_the_latest_read_a_revocation_included() {
        let digest = ApiKeySecret::from_random_bytes(&[10; 32]).digest();
        let revoked = ApiKeyRecord {
            revoked_at: Some(time::OffsetDateTime::UNIX_EPOCH),
            ..record()
        };
        let mut store = holding(&[]);
        let mut reads = 0;
        let answer = revoked.clone();
        store.expect_find_key().times(3).returning(move |_| {
            reads += 1;
            match reads {
                1 => Ok(Some(record())),
                2 => Ok(Some(answer.clone())),
                _ => Err(StoreError::new("connection refused")),
            }
        });
        let cache = KeyCache::new(Arc::new(store), Duration::from_millis(1));
        for expected in [record(), revoked.clone(), revoked] {
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert_eq!(cache.find_key(&digest).await.unwrap(), Some(expected));
        }
    }

    #[tokio::test]
    async fn a_key_the_store_no_longer_has_has_no_last_known_state() {
        let digest = ApiKeySecret::from_random_bytes(&[11; 32]).digest();
        let mut store = holding(&[]);
        let mut reads = 0;
        store.expect_find_key().times(3).returning(move |_| {
            reads += 1;
            match reads {
                1 => Ok(Some(record())),
                2 => Ok(None),
                _ => Err(StoreError::new("connection refused")),
            }
        });
        let cache = KeyCache::new(Arc::new(store), Duration::from_millis(1));
        assert_eq!(cache.find_key(&digest).await.unwrap(), Some(record()));
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(cache.find_key(&digest).await.unwrap(), None);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(cache.find_key(&digest).await.is_err());
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
