//! /calls/summary: daily series, hourly histogram, peaks and service figures of one direction.

use crate::calendar::DateRange;
use crate::call_day::CallDay;
use crate::model::{DayCount, HourCount, QueueName};
use crate::params::{Compare, Direction, ServiceRules};
use crate::stats::freshness::Measurement;
use crate::stats::service_level::{ServiceTally, offered_calls};

/// /calls/summary measured: the period's tally, its daily series and hourly histogram with their
/// peaks, and the earlier period's tally when `compare` asked for one (`callstats-api` writes
/// the answer from it).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub measurement: Measurement,
    /// The period's calls of the direction (and queue).
    pub tally: ServiceTally,
    /// Every day of the period, zero-filled.
    pub daily: Vec<DayCount>,
    /// 24 buckets, hour ascending, for a single day; `None` for several.
    pub hourly: Option<Vec<HourCount>>,
    /// The busiest day, the earliest on a tie (the first day, with 0, when there is no call).
    pub peak_day: DayCount,
    /// The busiest hour of a single day, the earliest on a tie; `None` for several days.
    pub peak_hour: Option<HourCount>,
    /// The earlier period `compare` asked for.
    pub comparison: Option<Earlier>,
}

/// The earlier period of a comparison, its calls tallied exactly as the summary's own.
#[derive(Debug, Clone, PartialEq)]
pub struct Earlier {
    pub compare: Compare,
    /// As many days as the summary's period.
    pub range: DateRange,
    pub tally: ServiceTally,
}

/// Summarises the calls of `direction` (and of `queue`, when one is given) in `range`, in
/// Tashkent days and hours, with the service figures of [`crate::stats::service_level`] measured
/// by `rules` (a threshold alone, or with a short-abandon bound).
///
/// One pass over each day's calls with fixed counters (and the answered waits, kept for their
/// percentiles). Days outside the range are ignored. `daily` holds every day, zero-filled;
/// `hourly` is present only for a single day. Peaks take the earliest day or hour on a tie.
#[must_use]
pub fn call_summary<D: AsRef<CallDay>>(
    range: &DateRange,
    direction: Direction,
    rules: impl Into<ServiceRules>,
    queue: Option<&QueueName>,
    days: &[D],
) -> Summary {
    let rules = rules.into();
    let first_day = range.start().number();
    let mut daily = vec![0_u64; range.days()];
    let mut hourly = [0_u64; 24];
    let mut tally = ServiceTally::new(rules);
    for day in days {
        let day = day.as_ref();
        let Some(slot) = usize::try_from(day.day().number() - first_day)
            .ok()
            .and_then(|index| daily.get_mut(index))
        else {
            continue;
        };
        for call in offered_calls(day, direction, queue) {
            *slot += 1;
            tally.add(call);
            if let Some(bucket) = usize::try_from(call.hour())
                .ok()
                .and_then(|hour| hourly.get_mut(hour))
            {
                *bucket += 1;
            }
        }
    }

    let daily: Vec<DayCount> = range
        .iter_days()
        .zip(daily)
        .map(|(date, count)| DayCount { date, count })
        .collect();
    let peak_day = earliest_max(&daily, |d| d.count).unwrap_or(DayCount {
        date: range.start(),
        count: 0,
    });
    let (hourly, peak_hour) = if range.is_single_day() {
        let buckets: Vec<HourCount> = (0_u8..24)
            .zip(hourly)
            .map(|(hour, count)| HourCount { hour, count })
            .collect();
        let peak = earliest_max(&buckets, |h| h.count);
        (Some(buckets), peak)
    } else {
        (None, None)
    };
    Summary {
        measurement: Measurement::of(range, direction, rules, queue, days),
        tally,
        daily,
        hourly,
        peak_day,
        peak_hour,
        comparison: None,
    }
}

/// The `comparison` of /calls/summary: the calls of `earlier` (the period `compare` names),
/// from that period's `days`, tallied exactly as the body's own.
#[must_use]
pub fn comparison<D: AsRef<CallDay>>(
    compare: Compare,
    earlier: &DateRange,
    direction: Direction,
    rules: impl Into<ServiceRules>,
    queue: Option<&QueueName>,
    days: &[D],
) -> Earlier {
    let mut tally = ServiceTally::new(rules);
    for day in days.iter().map(AsRef::as_ref) {
        let within = earlier.start() <= day.day() && day.day() <= earlier.end();
        for call in offered_calls(day, direction, queue).filter(|_| within) {
            tally.add(call);
        }
    }
    Earlier {
        compare,
        range: *earlier,
        tally,
    }
}

/// The first element with the highest count.
fn earliest_max<T: Copy>(items: &[T], count: impl Fn(&T) -> u64) -> Option<T> {
    items.iter().copied().fold(None, |best, item| match best {
        Some(b) if count(&b) >= count(&item) => Some(b),
        _ => Some(item),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CallRecord;
    use crate::params::SlThreshold;
    use crate::testing::{call, day, range};

    /// The summary of records, split into the range's days as the day store keeps them.
    fn summarise(range: &DateRange, direction: Direction, calls: &[CallRecord]) -> Summary {
        call_summary(
            range,
            direction,
            SlThreshold::DEFAULT,
            None,
            &CallDay::split(range, 0, calls),
        )
    }

    /// The inbound summary of `calls` from `start` to `end`.
    fn inbound_summary(start: &str, end: &str, calls: &[CallRecord]) -> Summary {
        summarise(&range(start, end), Direction::Inbound, calls)
    }

    fn inbound(at: &str) -> CallRecord {
        call(Direction::Inbound, Some("101"), at, 60.0)
    }

    #[test]
    fn summary_counts_only_the_requested_direction() {
        let calls = [
            inbound("2026-11-01T09:00:00+05:00"),
            call(
                Direction::Outbound,
                Some("101"),
                "2026-11-01T09:10:00+05:00",
                30.0,
            ),
            call(Direction::Inbound, None, "2026-11-01T09:20:00+05:00", 0.0),
        ];
        let r = range("2026-11-01", "2026-11-01");
        let inbound = summarise(&r, Direction::Inbound, &calls);
        let outbound = summarise(&r, Direction::Outbound, &calls);
        assert_eq!(
            (
                inbound.tally.offered(),
                inbound.tally.answered(),
                inbound.tally.unanswered()
            ),
            (2, 1, 1)
        );
        assert_eq!(
            (
                outbound.tally.offered(),
                outbound.tally.answered(),
                outbound.tally.unanswered()
            ),
            (1, 1, 0)
        );
    }

    #[test]
    fn summary_uses_tashkent_dates_and_hours_whatever_the_upstream_offset() {
        // 20:30 UTC on Oct 31 is 01:30 on Nov 1 in Tashkent; 19:00 at -05:00 is 05:00 next day.
        let calls = [
            inbound("2026-10-31T20:30:00Z"),
            inbound("2026-10-31T19:00:00-05:00"),
        ];
        let summary = inbound_summary("2026-11-01", "2026-11-01", &calls);
        assert_eq!(summary.tally.offered(), 2);
        let hourly = summary.hourly.unwrap();
        assert_eq!((hourly[1].count, hourly[5].count), (1, 1));
    }

    #[test]
    fn summary_ignores_calls_outside_the_period() {
        let calls = [
            inbound("2026-10-31T23:59:59+05:00"),
            inbound("2026-11-03T00:00:00+05:00"),
            inbound("2026-11-02T23:59:59+05:00"),
        ];
        let summary = inbound_summary("2026-11-01", "2026-11-02", &calls);
        assert_eq!(summary.tally.offered(), 1);
    }

    #[test]
    fn daily_series_holds_every_day_zero_filled() {
        let calls = [inbound("2026-11-02T10:00:00+05:00")];
        let summary = inbound_summary("2026-11-01", "2026-11-03", &calls);
        let daily: Vec<String> = summary
            .daily
            .iter()
            .map(|d| format!("{} {}", d.date, d.count))
            .collect();
        assert_eq!(daily, ["2026-11-01 0", "2026-11-02 1", "2026-11-03 0"]);
    }

    #[test]
    fn hourly_is_24_buckets_for_one_day_and_null_for_several() {
        let one = inbound_summary("2026-11-01", "2026-11-01", &[]);
        let hours: Vec<u8> = one.hourly.unwrap().iter().map(|h| h.hour).collect();
        assert_eq!(hours, (0..24).collect::<Vec<u8>>());
        let many = inbound_summary(
            "2026-11-01",
            "2026-11-02",
            &[inbound("2026-11-01T10:00:00+05:00")],
        );
        assert_eq!(
            (
                many.hourly,
                many.peak_hour,
                many.peak_hour.map_or(0, |h| h.count)
            ),
            (None, None, 0)
        );
    }

    #[test]
    fn peak_day_is_the_busiest_and_earliest_on_a_tie() {
        let calls = [
            inbound("2026-11-01T10:00:00+05:00"),
            inbound("2026-11-02T10:00:00+05:00"),
            inbound("2026-11-03T10:00:00+05:00"),
            inbound("2026-11-03T11:00:00+05:00"),
            inbound("2026-11-02T11:00:00+05:00"),
        ];
        let summary = inbound_summary("2026-11-01", "2026-11-03", &calls);
        assert_eq!(
            (summary.peak_day.date, summary.peak_day.count),
            (day("2026-11-02"), 2)
        );
    }

    #[test]
    fn peak_day_of_a_period_without_calls_is_its_first_day_with_zero() {
        let summary = summarise(&range("2026-11-05", "2026-11-09"), Direction::Outbound, &[]);
        assert_eq!(
            (summary.peak_day.date, summary.peak_day.count),
            (day("2026-11-05"), 0)
        );
    }

    #[test]
    fn peak_hour_is_the_busiest_and_earliest_on_a_tie() {
        let calls = [
            inbound("2026-11-01T14:00:00+05:00"),
            inbound("2026-11-01T09:00:00+05:00"),
            inbound("2026-11-01T14:30:00+05:00"),
            inbound("2026-11-01T09:30:00+05:00"),
        ];
        let summary = inbound_summary("2026-11-01", "2026-11-01", &calls);
        assert_eq!(summary.peak_hour, Some(HourCount { hour: 9, count: 2 }));
        assert_eq!(summary.peak_hour.map_or(0, |h| h.count), 2);
        let empty = inbound_summary("2026-11-01", "2026-11-01", &[]);
        assert_eq!(
            (empty.peak_hour, empty.peak_hour.map_or(0, |h| h.count)),
            (Some(HourCount { hour: 0, count: 0 }), 0)
        );
    }
}
