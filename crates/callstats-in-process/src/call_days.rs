//! The in-process tier of the call-day store.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::calendar::Day;
use callstats_domain::call_day::CallDay;
use callstats_domain::ports::CallDayCache;
use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::expiring::{ENTRY_OVERHEAD, Expiring, Shards, bounded, fresh};

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
        Self {
            days: Arc::new(bounded(max_bytes, TYPICAL_DAY_BYTES, DayBytes, Shards::One)),
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

#[cfg(test)]
mod tests {
    use super::*;

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
            wait_seconds: None,
            queue: None,
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
    async fn days_that_fit_in_the_bound_are_all_kept_however_they_hash() {
        // 35 days of 10,000 calls (about 160 KB each) in a bound 10 % above their sum: split
        // into shards, each with its share of the bound, some shard would draw more than its
        // share and evict.
        let days: Vec<Arc<CallDay>> = (0..35).map(|n| call_day(20_000 + n, 10_000)).collect();
        let sum: usize = days
            .iter()
            .map(|day| day.size_bytes() + ENTRY_OVERHEAD)
            .sum();
        let tier = MemoryCallDays::new(u64::try_from(sum + sum / 10).unwrap());
        for day in &days {
            tier.put(Arc::clone(day), Duration::from_secs(60)).await;
        }
        let wanted: Vec<Day> = days.iter().map(|day| day.day()).collect();
        let kept = tier.get(&wanted).await;
        assert!(
            kept.iter().all(Option::is_some),
            "{} kept",
            kept.iter().flatten().count()
        );
    }
}
