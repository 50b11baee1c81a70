//! How fresh and how final a period's call figures are (docs/behaviour.md, "Freshness"): when
//! the platform was last asked for the oldest of its days, and from which date on the figures
//! may still change.

use crate::calendar::{self, DateRange, Day};
use crate::call_day::{Held, HeldDay};
use crate::model::QueueName;
use crate::params::{Direction, ServiceRules};

/// The freshness fields of /calls/summary and /calls/agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freshness {
    /// The oldest fetch time among the period's days that have begun (UTC, to the
    /// millisecond): every figure reflects the platform at least as of then. `None` when no day
    /// of the period has begun.
    pub as_of: Option<String>,
    /// The first date of the period whose figures may still change (the earliest day not
    /// fetched settled: not yet settled, or not begun). `None` when every day is settled.
    pub provisional_from: Option<Day>,
}

/// The freshness of `range` answered from `days`, any held copies of the days: their calls,
/// or their rollups (days outside the range are ignored; a day of the range missing from them
/// counts as not settled).
#[must_use]
pub fn freshness<T: HeldDay, D: AsRef<T>>(range: &DateRange, days: &[D]) -> Freshness {
    let mut oldest: Option<i64> = None;
    let mut provisional_from = None;
    for date in range.iter_days() {
        let held = days.iter().map(AsRef::as_ref).find(|day| day.day() == date);
        if let Some(day) = held
            && day.held() != Held::NotBegun
        {
            let fetched = day.fetched_at_ms();
            oldest = Some(oldest.map_or(fetched, |oldest| oldest.min(fetched)));
        }
        if provisional_from.is_none() && held.is_none_or(|day| day.held() != Held::Settled) {
            provisional_from = Some(date);
        }
    }
    Freshness {
        as_of: oldest.and_then(calendar::utc_millis_of),
        provisional_from,
    }
}

/// What an answer of service figures over a period was measured over and by, and how fresh its
/// days were: what every such answer states around its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measurement {
    /// The dates used (after the endpoint's clamp).
    pub range: DateRange,
    pub direction: Direction,
    pub rules: ServiceRules,
    /// The queue whose calls alone were measured; `None` for every call.
    pub queue: Option<QueueName>,
    pub freshness: Freshness,
}

impl Measurement {
    /// The measurement of `range`'s calls of `direction` (and `queue`) by `rules`, as fresh as
    /// `days`, the held days (or rollups) it was computed from.
    #[must_use]
    pub fn of<T: HeldDay, D: AsRef<T>>(
        range: &DateRange,
        direction: Direction,
        rules: ServiceRules,
        queue: Option<&QueueName>,
        days: &[D],
    ) -> Self {
        Self {
            range: *range,
            direction,
            rules,
            queue: queue.cloned(),
            freshness: freshness(range, days),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call_day::CallDay;
    use crate::testing::{day, range};

    /// A day of the period fetched at `ms`, held as `held`.
    fn held(date: &str, ms: i64, held: Held) -> CallDay {
        CallDay::from_records(day(date), ms, []).with_held(held)
    }

    const AT: i64 = 1_795_000_000_123;

    #[test]
    fn a_settled_period_is_as_of_its_oldest_fetch_and_provisional_from_nowhere() {
        let days = [
            held("2026-11-01", AT + 5_000, Held::Settled),
            held("2026-11-02", AT, Held::Settled),
            held("2026-11-03", AT + 9_000, Held::Settled),
        ];
        let fresh = freshness(&range("2026-11-01", "2026-11-03"), &days);
        assert_eq!(fresh.as_of.as_deref(), Some("2026-11-18T11:06:40.123Z"));
        assert_eq!(fresh.provisional_from, None);
    }

    #[test]
    fn an_unsettled_day_makes_the_period_provisional_from_it() {
        let days = [
            held("2026-11-01", AT + 1, Held::Settled),
            held("2026-11-02", AT + 2, Held::Provisional),
            held("2026-11-03", AT + 3, Held::Provisional),
        ];
        let fresh = freshness(&range("2026-11-01", "2026-11-03"), &days);
        assert_eq!(fresh.provisional_from, Some(day("2026-11-02")));
        assert_eq!(fresh.as_of.as_deref(), Some("2026-11-18T11:06:40.124Z"));
    }

    #[test]
    fn days_not_begun_are_provisional_and_have_no_fetch_time() {
        // Yesterday settled, today unsettled, tomorrow not begun: as of the oldest fetch
        // among the two that began.
        let days = [
            held("2026-11-01", AT + 7, Held::Settled),
            held("2026-11-02", AT, Held::Provisional),
            CallDay::empty(day("2026-11-03"), AT - 60_000),
        ];
        let fresh = freshness(&range("2026-11-01", "2026-11-03"), &days);
        assert_eq!(fresh.as_of.as_deref(), Some("2026-11-18T11:06:40.123Z"));
        assert_eq!(fresh.provisional_from, Some(day("2026-11-02")));
        // Only days that have not begun: neither figure exists yet.
        let future = [
            CallDay::empty(day("2026-11-04"), AT),
            CallDay::empty(day("2026-11-05"), AT),
        ];
        let fresh = freshness(&range("2026-11-04", "2026-11-05"), &future);
        assert_eq!(fresh.as_of, None);
        assert_eq!(fresh.provisional_from, Some(day("2026-11-04")));
    }

    #[test]
    fn days_outside_the_period_are_ignored_and_a_missing_day_is_not_settled() {
        let days = [
            held("2026-10-31", 0, Held::Provisional),
            held("2026-11-01", AT, Held::Settled),
            held("2026-11-03", AT, Held::Settled),
        ];
        let fresh = freshness(&range("2026-11-01", "2026-11-03"), &days);
        assert_eq!(fresh.as_of.as_deref(), Some("2026-11-18T11:06:40.123Z"));
        assert_eq!(fresh.provisional_from, Some(day("2026-11-02")));
    }
}
