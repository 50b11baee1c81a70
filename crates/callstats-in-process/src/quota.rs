//! Request counts and budgets in process memory.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use callstats_domain::access::{QuotaBucket, QuotaSubject};
use callstats_domain::limits::fits;
use callstats_domain::ports::QuotaCounter;
use quick_cache::sync::Cache;

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

    /// The bucket's count so far: [`QuotaCounter::peek`], for the in-process ledger too.
    pub(crate) fn count_of(&self, bucket: &QuotaBucket) -> u64 {
        self.counters
            .get(&(bucket.subject, bucket.minute))
            .map_or(0, |counter| counter.load(Ordering::Relaxed))
    }

    /// One request added to the bucket, and its count then: [`QuotaCounter::increment`], for
    /// the in-process ledger too.
    pub(crate) fn add_one(&self, bucket: &QuotaBucket) -> u64 {
        self.counter(bucket)
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1)
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
        self.add_one(bucket)
    }

    async fn peek(&self, bucket: &QuotaBucket) -> u64 {
        self.count_of(bucket)
    }

    async fn add_within(&self, bucket: &QuotaBucket, amount: u64, limit: u64) -> Result<u64, u64> {
        self.counter(bucket)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
                fits(count, amount, limit).then(|| count.saturating_add(amount))
            })
            .map(|before| before.saturating_add(amount))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callstats_domain::access::ClientAddress;
    use time::macros::datetime;

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
}
