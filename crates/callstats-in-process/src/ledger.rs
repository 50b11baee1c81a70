//! Admission's count and cache read in process memory, in one call.

use async_trait::async_trait;
use callstats_domain::access::QuotaBucket;
use callstats_domain::ports::{Found, RequestLedger};

use crate::{MemoryCache, MemoryQuota};

/// The [`RequestLedger`] of a replica without Redis: the request counted in the replica's
/// quota counters and its answer read from its response cache, the in-process counterpart of
/// the Redis ledger's one round trip.
#[derive(Clone)]
pub struct MemoryLedger {
    quota: MemoryQuota,
    cache: MemoryCache,
}

impl MemoryLedger {
    /// Counts in `quota` and reads `cache`: the same counters and cache the rest of the
    /// replica uses (both are handles to shared maps).
    #[must_use]
    pub const fn new(quota: MemoryQuota, cache: MemoryCache) -> Self {
        Self { quota, cache }
    }
}

#[async_trait]
impl RequestLedger for MemoryLedger {
    async fn count<'a>(
        &self,
        window: &QuotaBucket,
        days: Option<&'a QuotaBucket>,
        answer: Option<&'a str>,
    ) -> Found {
        Found {
            requests: self.quota.add_one(window),
            days_used: days.map_or(0, |days| self.quota.count_of(days)),
            answer: answer.and_then(|key| self.cache.fresh_body(key)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use callstats_domain::access::QuotaSubject;
    use callstats_domain::ports::{QuotaCounter, ResponseCache};
    use time::macros::datetime;

    use super::*;

    #[tokio::test]
    async fn it_counts_in_the_shared_counters_and_reads_the_shared_cache() {
        let now = datetime!(2026-11-21 06:15:30 UTC);
        let window = QuotaBucket::new(&QuotaSubject::Key(1), now);
        let days = QuotaBucket::new(&QuotaSubject::KeyDays(1), now);
        let (quota, cache) = (MemoryQuota::new(), MemoryCache::new(1 << 20));
        let ledger = MemoryLedger::new(quota.clone(), cache.clone());
        quota.increment(&window).await;
        assert_eq!(quota.add_within(&days, 9, 100).await, Ok(9));
        cache
            .put(
                "v1/operators",
                Bytes::from_static(b"{}"),
                Duration::from_secs(60),
            )
            .await;
        assert_eq!(
            ledger
                .count(&window, Some(&days), Some("v1/operators"))
                .await,
            Found {
                requests: 2,
                days_used: 9,
                answer: Some(Bytes::from_static(b"{}")),
            }
        );
        assert_eq!(
            quota.peek(&window).await,
            2,
            "counted where the rest counts"
        );
        assert_eq!(quota.peek(&days).await, 9, "the day budget only read");
        // Nothing asked, nothing read: /ping, without a day budget; an answer not cached.
        assert_eq!(
            ledger.count(&window, None, None).await,
            Found {
                requests: 3,
                days_used: 0,
                answer: None,
            }
        );
        assert_eq!(
            ledger
                .count(&window, None, Some("v1/schedule"))
                .await
                .answer,
            None
        );
    }
}
