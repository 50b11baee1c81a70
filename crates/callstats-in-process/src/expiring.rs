//! Entries that carry their own lifetime, checked when read.

use std::hash::Hash;
use std::time::{Duration, Instant};

use quick_cache::sync::Cache;
use quick_cache::sync::DefaultLifecycle;
use quick_cache::{DefaultHashBuilder, Equivalent, OptionsBuilder, Weighter};

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

    /// The same, served no longer than `other`.
    #[must_use]
    pub(crate) fn not_after<U>(mut self, other: &Expiring<U>) -> Self {
        self.until = self.until.min(other.until);
        self
    }
}

/// How a cache is split into independently locked shards, each with its share of the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shards {
    /// quick_cache's default (four per core): for entries read on every request.
    Many,
    /// One: the whole bound for any entry. For large entries read a few times a request (call
    /// days of a large centre weigh up to a megabyte; split eight ways, a shard that drew more
    /// than its share of them would evict some while the others had room).
    One,
}

/// A cache whose entries' weights (their heap bytes, by `weighter`) add up to at most
/// `max_bytes`; `typical_bytes`, an entry's usual weight, sizes its item count (at least 16).
pub(crate) fn bounded<K, T, W>(
    max_bytes: u64,
    typical_bytes: u64,
    weighter: W,
    shards: Shards,
) -> Cache<K, Expiring<T>, W>
where
    K: Eq + Hash,
    T: Clone,
    W: Weighter<K, Expiring<T>> + Clone,
{
    let items = usize::try_from((max_bytes / typical_bytes).max(16)).unwrap_or(16);
    let mut options = OptionsBuilder::new();
    options
        .estimated_items_capacity(items)
        .weight_capacity(max_bytes.max(1));
    if shards == Shards::One {
        options.shards(1);
    }
    match options.build() {
        Ok(options) => Cache::with_options(
            options,
            weighter,
            DefaultHashBuilder::default(),
            DefaultLifecycle::default(),
        ),
        // Only an unusable setting fails, and none of these is.
        Err(_) => Cache::with_weighter(items, max_bytes.max(1), weighter),
    }
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
