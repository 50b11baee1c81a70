//! A short-lived cache of key look-ups in front of any key store.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::access::{ApiKeyRecord, KeyDigest};
use callstats_domain::ports::{KeyLookup, KeyStore, KnownKeys, StoreError};
use quick_cache::sync::Cache;

use crate::expiring::{Expiring, fresh};

/// The longest a key look-up may be reused: a revoked key stops working within this time.
pub const MAX_KEY_CACHE_TTL: Duration = Duration::from_secs(10);

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
    fn kept(&self, digest: &KeyDigest) -> Option<Option<ApiKeyRecord>> {
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

impl KnownKeys for KeyCache {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

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
