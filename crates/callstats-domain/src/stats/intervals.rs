//! /calls/intervals: the service figures of every 15-, 30- or 60-minute interval of a period
//! (Tashkent time), for workforce-management tools.
//!
//! An interval's row is the tally of [`crate::stats::service_level`] over the calls that started in
//! it, read by the same functions as /calls/summary and /calls/queues: no second definition of
//! any figure.

use crate::calendar::{DateRange, Day};
use crate::call_day::{CallDay, DayCall};
use crate::model::QueueName;
use crate::params::{Direction, IntervalMinutes, ServiceRules};
use crate::stats::freshness::Measurement;
use crate::stats::service_level::{ServiceTally, offered_calls};
use crate::tz;

const SECONDS_PER_DAY: u32 = 86_400;

/// The intervals of one day: 96, 48 or 24.
#[must_use]
pub fn intervals_per_day(interval: IntervalMinutes) -> usize {
    usize::try_from(SECONDS_PER_DAY / interval.seconds().max(1)).unwrap_or(0)
}

/// The interval of its day that holds `call`: the one its Tashkent start second falls in, an
/// interval holding its first second and not the second it ends on.
#[must_use]
pub fn interval_of(call: DayCall, interval: IntervalMinutes) -> usize {
    usize::try_from(call.second() / interval.seconds().max(1)).unwrap_or(0)
}

/// When interval `index` of `day` begins, as `2026-11-21T09:30:00+05:00`.
#[must_use]
pub fn interval_start(day: Day, index: usize, interval: IntervalMinutes) -> String {
    let minute = index.saturating_mul(usize::from(interval.get()));
    format!(
        "{day}T{:02}:{:02}:00{}",
        minute / 60,
        minute % 60,
        tz::TASHKENT_LABEL
    )
}

/// /calls/intervals measured: the period, what measured it, and each interval's tally, from
/// which the answer's rows read their figures (`callstats-api` writes them).
#[derive(Debug, Clone, PartialEq)]
pub struct Intervals {
    pub measurement: Measurement,
    pub interval: IntervalMinutes,
    /// Every interval of the period in time order, zero-filled.
    pub intervals: Vec<IntervalTally>,
}

/// The calls of one interval, tallied.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalTally {
    /// When the interval begins, Tashkent time with its offset.
    pub start: String,
    pub tally: ServiceTally,
}

/// Every interval of `range`, zero-filled and in time order, with the figures of the calls of
/// `direction` (and of `queue`, when one is given) that started in it.
///
/// One pass over each held day's calls into one tally per interval; days outside the range are
/// ignored. A day's intervals add up to that day's `daily` count of /calls/summary, as both
/// count the same calls ([`offered_calls`]).
#[must_use]
pub fn intervals_response<D: AsRef<CallDay>>(
    range: &DateRange,
    direction: Direction,
    interval: IntervalMinutes,
    rules: impl Into<ServiceRules>,
    queue: Option<&QueueName>,
    days: &[D],
) -> Intervals {
    let rules = rules.into();
    let per_day = intervals_per_day(interval);
    let first_day = range.start().number();
    let mut tallies = vec![ServiceTally::new(rules); range.days().saturating_mul(per_day)];
    for day in days.iter().map(AsRef::as_ref) {
        let Some(base) = usize::try_from(day.day().number() - first_day)
            .ok()
            .filter(|offset| *offset < range.days())
            .map(|offset| offset.saturating_mul(per_day))
        else {
            continue;
        };
        for call in offered_calls(day, direction, queue) {
            if let Some(tally) = tallies.get_mut(base.saturating_add(interval_of(call, interval))) {
                tally.add(call);
            }
        }
    }
    let intervals = range
        .iter_days()
        .flat_map(|day| (0..per_day).map(move |index| interval_start(day, index, interval)))
        .zip(tallies)
        .map(|(start, tally)| IntervalTally { start, tally })
        .collect();
    Intervals {
        measurement: Measurement::of(range, direction, rules, queue, days),
        interval,
        intervals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CallRecord;
    use crate::params::SlThreshold;
    use crate::testing::{CallExt, call, queue, range};

    fn minutes(m: u8) -> IntervalMinutes {
        IntervalMinutes::minutes(m).unwrap()
    }

    fn rows(
        start: &str,
        end: &str,
        m: u8,
        records: &[CallRecord],
        queue: Option<&QueueName>,
    ) -> Vec<IntervalTally> {
        let r = range(start, end);
        intervals_response(
            &r,
            Direction::Inbound,
            minutes(m),
            SlThreshold::DEFAULT,
            queue,
            &CallDay::split(&r, 0, records),
        )
        .intervals
    }

    fn inbound(at: &str) -> CallRecord {
        call(Direction::Inbound, Some("101"), at, 60.0)
    }

    /// The `offered` of the row that starts at `start`.
    fn offered_at(rows: &[IntervalTally], start: &str) -> u64 {
        rows.iter()
            .find(|row| row.start == start)
            .unwrap()
            .tally
            .offered()
    }

    /// Asserts the calls offered in each interval of `expected`, by its start.
    fn assert_offered(rows: &[IntervalTally], expected: &[(&str, u64)]) {
        for &(start, offered) in expected {
            assert_eq!(offered_at(rows, start), offered, "offered at {start}");
        }
    }

    #[test]
    fn every_interval_of_the_day_is_listed_in_order_and_zero_filled() {
        for (m, count, second) in [
            (15, 96, "2026-11-02T00:15:00+05:00"),
            (30, 48, "2026-11-02T00:30:00+05:00"),
            (60, 24, "2026-11-02T01:00:00+05:00"),
        ] {
            let rows = rows("2026-11-02", "2026-11-02", m, &[], None);
            assert_eq!(rows.len(), count);
            assert_eq!(rows[0].start, "2026-11-02T00:00:00+05:00");
            assert_eq!(rows[1].start, second);
            let last = rows.last().unwrap();
            assert_eq!(
                last.start.get(11..16),
                Some(if m == 60 {
                    "23:00"
                } else if m == 30 {
                    "23:30"
                } else {
                    "23:45"
                })
            );
            assert!(rows.iter().all(|row| row.tally.offered() == 0));
        }
        // Two days: 96 rows at 30 minutes, the second day's first row after the first's last.
        let rows = rows("2026-11-02", "2026-11-03", 30, &[], None);
        assert_eq!(rows.len(), 96);
        assert_eq!(rows[47].start, "2026-11-02T23:30:00+05:00");
        assert_eq!(rows[48].start, "2026-11-03T00:00:00+05:00");
    }

    #[test]
    fn a_call_on_a_boundary_opens_the_interval_and_the_second_before_closes_the_previous() {
        let records = [
            inbound("2026-11-02T09:29:59+05:00"),
            inbound("2026-11-02T09:30:00+05:00"),
            inbound("2026-11-02T09:44:59+05:00"),
            inbound("2026-11-02T09:45:00+05:00"),
            inbound("2026-11-02T23:59:59+05:00"),
            inbound("2026-11-02T00:00:00+05:00"),
        ];
        let at15 = rows("2026-11-02", "2026-11-02", 15, &records, None);
        assert_offered(
            &at15,
            &[
                ("2026-11-02T09:15:00+05:00", 1),
                ("2026-11-02T09:30:00+05:00", 2),
                ("2026-11-02T09:45:00+05:00", 1),
                ("2026-11-02T23:45:00+05:00", 1),
                ("2026-11-02T00:00:00+05:00", 1),
            ],
        );
        let at30 = rows("2026-11-02", "2026-11-02", 30, &records, None);
        assert_offered(
            &at30,
            &[
                ("2026-11-02T09:00:00+05:00", 1),
                ("2026-11-02T09:30:00+05:00", 3),
            ],
        );
        let at60 = rows("2026-11-02", "2026-11-02", 60, &records, None);
        assert_eq!(offered_at(&at60, "2026-11-02T09:00:00+05:00"), 4);
        assert_eq!(at60.iter().map(|r| r.tally.offered()).sum::<u64>(), 6);
    }

    #[test]
    fn a_call_given_in_utc_or_another_offset_lands_in_its_tashkent_interval() {
        let records = [
            // 04:40 UTC is 09:40 in Tashkent.
            inbound("2026-11-02T04:40:00Z"),
            // 19:10 UTC on Nov 1 is 00:10 on Nov 2 in Tashkent.
            inbound("2026-11-01T19:10:00Z"),
            // 18:59:59 UTC on Nov 2 is 23:59:59 in Tashkent, still Nov 2.
            inbound("2026-11-02T18:59:59Z"),
            // 19:00 UTC on Nov 2 is Nov 3 in Tashkent: not in the period.
            inbound("2026-11-02T19:00:00Z"),
            // 12:20 at +08:00 is 09:20 in Tashkent.
            inbound("2026-11-02T12:20:00+08:00"),
        ];
        let rows = rows("2026-11-02", "2026-11-02", 15, &records, None);
        assert_offered(
            &rows,
            &[
                ("2026-11-02T09:30:00+05:00", 1),
                ("2026-11-02T00:00:00+05:00", 1),
                ("2026-11-02T23:45:00+05:00", 1),
                ("2026-11-02T09:15:00+05:00", 1),
            ],
        );
        assert_eq!(rows.iter().map(|r| r.tally.offered()).sum::<u64>(), 4);
    }

    #[test]
    fn a_queue_keeps_only_its_calls_and_an_unknown_queue_gives_zeros() {
        let sales = inbound("2026-11-02 10:05").queued("sales");
        let other = inbound("2026-11-02 10:06");
        let records = [sales, other];
        let queue = queue("sales");
        let rows_sales = rows("2026-11-02", "2026-11-02", 60, &records, Some(&queue));
        assert_eq!(offered_at(&rows_sales, "2026-11-02T10:00:00+05:00"), 1);
        let unknown = QueueName::new("Sales").unwrap();
        let none = rows("2026-11-02", "2026-11-02", 60, &records, Some(&unknown));
        assert_eq!(none.len(), 24);
        assert!(none.iter().all(|row| row.tally.offered() == 0));
    }
}
