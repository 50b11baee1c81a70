//! The response cache in process memory.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use callstats_domain::ports::ResponseCache;
use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::expiring::{ENTRY_OVERHEAD, Expiring, Shards, bounded, fresh};

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
        Self {
            entries: Arc::new(bounded(
                max_bytes,
                TYPICAL_ENTRY_BYTES,
                BodyBytes,
                Shards::Many,
            )),
        }
    }

    /// The body stored under `key` while its lifetime lasts: [`ResponseCache::get`], for the
    /// in-process ledger too.
    pub(crate) fn fresh_body(&self, key: &str) -> Option<Bytes> {
        fresh(&self.entries, key)
    }
}

#[async_trait]
impl ResponseCache for MemoryCache {
    async fn get(&self, key: &str) -> Option<Bytes> {
        self.fresh_body(key)
    }

    async fn put(&self, key: &str, value: Bytes, ttl: Duration) {
        self.entries
            .insert(key.to_owned(), Expiring::new(value, ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
