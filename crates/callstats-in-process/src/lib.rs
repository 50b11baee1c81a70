//! In-process adapters: the response cache and quota counters (and admission's ledger over
//! both) a single replica uses when no Redis is configured (and falls back to when Redis is
//! unreachable), the in-process tier of the call-day store, a short-lived cache of key look-ups
//! in front of any key store (which answers from a key's last known state while the store
//! fails), and the lease, live relay and live stream slots of a replica alone.
//!
//! The caches are `quick_cache` caches: a look-up is one hash of the key and a read lock
//! on one shard, with nothing recorded for later and no background work, because every request
//! makes three of them. Lifetimes are kept with the entries and checked when read; expired
//! entries make room like any other cold entry.
//!
//! Depends on the domain's ports only; never on the web layer, a database or Redis.

mod call_days;
mod expiring;
mod key_cache;
mod lease;
mod ledger;
mod live;
mod quota;
mod response_cache;

pub use call_days::MemoryCallDays;
pub use key_cache::{
    KeyCache, LAST_KNOWN_KEY_FOR, MAX_KEY_CACHE_TTL, report_no_key_lookup_failures_yet,
};
pub use lease::SoleLease;
pub use ledger::MemoryLedger;
pub use live::{LocalLiveRelay, LocalStreamSlots};
pub use quota::MemoryQuota;
pub use response_cache::MemoryCache;
