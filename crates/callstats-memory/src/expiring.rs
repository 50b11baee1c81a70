//! Entries that carry their own lifetime, checked when read.

use std::hash::Hash;
use std::time::{Duration, Instant};

use quick_cache::sync::Cache;
use quick_cache::{Equivalent, Weighter};

/// A cached value and the moment it stops being served.
#[derive(Clone)]
pub(crate) struct Expiring<T> {
    pub(crate) value: T,
    until: Instant,
}

impl<T> Expiring<T> {
    pub(crate) fn new(value: T, ttl: Duration) -> Self {
        let now = Instant::now();
        Self {
            value,
            until: now.checked_add(ttl).unwrap_or(now),
        }
    }

    pub(crate) fn is_fresh(&self) -> bool {
        Instant::now() < self.until
    }
}

/// A cache whose entries' weights (their heap bytes, by `weighter`) add up to at most
/// `max_bytes`; `typical_bytes`, an entry's usual weight, sizes its item count (at least 16).
pub(crate) fn bounded<K, T, W>(
    max_bytes: u64,
    typical_bytes: u64,
    weighter: W,
) -> Cache<K, Expiring<T>, W>
where
    K: Eq + Hash,
    T: Clone,
    W: Weighter<K, Expiring<T>> + Clone,
{
    let items = usize::try_from((max_bytes / typical_bytes).max(16)).unwrap_or(16);
    Cache::with_weighter(items, max_bytes.max(1), weighter)
}

/// The value under `key` while it is fresh. An expired entry reads as absent and is removed,
/// unless a fresh one has replaced it meanwhile.
pub(crate) fn fresh<K, Q, T, W>(cache: &Cache<K, Expiring<T>, W>, key: &Q) -> Option<T>
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
pub(crate) const ENTRY_OVERHEAD: usize = 96;
