//! /calls/trend: the service figures of each day, ISO week or month of a period of up to 366
//! days, read from the days' rollups ([`crate::rollup`]) rather than their calls.
//!
//! A bucket's row is a [`ServiceTally`] of its days' rollup groups, read by the same functions
//! as /calls/summary: no second definition of any figure.

use crate::calendar::{DateRange, Day};
use crate::call_day::HeldDay;
use crate::model::QueueName;
use crate::params::{Direction, Granularity, ServiceRules};
use crate::rollup::DayRollup;
use crate::stats::freshness::Measurement;
use crate::stats::service_level::ServiceTally;

/// /calls/trend measured: the period, what measured it, and each bucket's tally, from which the
/// answer's rows read their figures (`callstats-api` writes them).
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub measurement: Measurement,
    pub granularity: Granularity,
    /// Every bucket that overlaps the period, in time order, cut to the period.
    pub buckets: Vec<BucketTally>,
}

/// The calls of one bucket's days, tallied from their rollups.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketTally {
    /// The bucket's first date inside the period.
    pub start: Day,
    /// The bucket's last date inside the period.
    pub end: Day,
    pub tally: ServiceTally,
}

impl BucketTally {
    /// The bucket's days inside the period: `end` − `start` + 1.
    #[must_use]
    pub fn days(&self) -> u32 {
        u32::try_from(self.end.number() - self.start.number() + 1).unwrap_or(0)
    }
}

/// Every bucket of `granularity` that overlaps `range`, in time order and cut to it, with the
/// figures of the calls of `direction` (and of `queue`, when one is given) measured by
/// `rules`, from the rollups of the range's days (days outside the range are ignored; a day
/// without a rollup counts no call).
#[must_use]
pub fn trend_response<R: AsRef<DayRollup>>(
    range: &DateRange,
    direction: Direction,
    granularity: Granularity,
    rules: impl Into<ServiceRules>,
    queue: Option<&QueueName>,
    rollups: &[R],
) -> Trend {
    let rules = rules.into();
    let rollups: Vec<&DayRollup> = rollups.iter().map(AsRef::as_ref).collect();
    Trend {
        measurement: Measurement::of(range, direction, rules, queue, &rollups),
        granularity,
        buckets: trend_buckets(range, direction, granularity, rules, queue, &rollups),
    }
}

/// The rows of [`trend_response`].
#[must_use]
pub fn trend_buckets(
    range: &DateRange,
    direction: Direction,
    granularity: Granularity,
    rules: ServiceRules,
    queue: Option<&QueueName>,
    rollups: &[&DayRollup],
) -> Vec<BucketTally> {
    let mut buckets: Vec<(Day, Day, ServiceTally)> = Vec::new();
    for day in range.iter_days() {
        let start = granularity.bucket_start(day).max(range.start());
        match buckets.last_mut() {
            Some((first, last, _)) if *first == start => *last = day,
            _ => buckets.push((start, day, ServiceTally::new(rules))),
        }
    }
    for rollup in rollups {
        let day = rollup.day();
        // Buckets are in order and cover the range: the last one starting on or before the
        // day holds it.
        let index = buckets.partition_point(|(first, _, _)| *first <= day);
        let Some((_, last, tally)) = index.checked_sub(1).and_then(|i| buckets.get_mut(i)) else {
            continue;
        };
        if day > *last {
            continue;
        }
        for group in rollup.groups(direction, queue) {
            tally.add_group(group);
        }
    }
    buckets
        .into_iter()
        .map(|(start, end, tally)| BucketTally { start, end, tally })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call_day::CallDay;
    use crate::params::{ShortAbandon, SlThreshold};
    use crate::stats::call_summary;
    use crate::stats::service_level::{
        abandon_rate_percent, average_handle_time_seconds, average_speed_of_answer_seconds,
        longest_wait_seconds, service_level, service_level_percent,
    };
    use crate::testing::{CallExt, call, day, inbound_trend as trend, queue};

    fn long(start: &str, end: &str) -> DateRange {
        DateRange::up_to(day(start), day(end), 366).unwrap()
    }

    fn spans(response: &Trend) -> Vec<(String, String, u32)> {
        response
            .buckets
            .iter()
            .map(|b| (b.start.to_string(), b.end.to_string(), b.days()))
            .collect()
    }

    fn span(start: &str, end: &str, days: u32) -> (String, String, u32) {
        (start.to_owned(), end.to_owned(), days)
    }

    /// The spans of buckets of `lengths` days laid end to end from `start`.
    fn end_to_end(start: &str, lengths: &[u32]) -> Vec<(String, String, u32)> {
        let mut next = day(start);
        lengths
            .iter()
            .map(|&days| {
                let end = next.plus_days(i64::from(days) - 1).unwrap();
                let bucket = (next.to_string(), end.to_string(), days);
                next = end.plus_days(1).unwrap();
                bucket
            })
            .collect()
    }

    #[test]
    fn weeks_and_months_are_cut_to_the_period() {
        // 2026-12-23 is a Wednesday; 2026-12-28 the Monday of ISO week 53. Months have 28 to
        // 31 days (29 in a leap February), the first and last cut.
        for (granularity, start, end, lengths) in [
            (
                Granularity::Week,
                "2026-12-23",
                "2027-01-06",
                &[5, 7, 3][..],
            ),
            (
                Granularity::Month,
                "2026-01-15",
                "2026-05-10",
                &[17, 28, 31, 30, 10],
            ),
            (Granularity::Month, "2028-02-10", "2028-03-01", &[20, 1]),
        ] {
            let response = trend(&long(start, end), granularity, &[]);
            assert_eq!(
                spans(&response),
                end_to_end(start, lengths),
                "{granularity:?} from {start} to {end}"
            );
        }
    }

    #[test]
    fn a_day_bucket_is_each_day_and_empty_buckets_have_zeros_and_nulls() {
        let response = trend(&long("2026-11-01", "2026-11-03"), Granularity::Day, &[]);
        assert_eq!(response.buckets.len(), 3);
        let empty = &response.buckets[1];
        assert_eq!(
            (empty.tally.offered(), empty.tally.calls_with_wait()),
            (0, 0)
        );
        assert_eq!(abandon_rate_percent(&empty.tally), None);
        assert_eq!(service_level_percent(&empty.tally), None);
        assert_eq!(longest_wait_seconds(&empty.tally), None);
    }

    #[test]
    fn a_bucket_has_the_figures_of_the_summary_of_its_days() {
        let records = [
            call(Direction::Inbound, Some("101"), "2026-11-02 09:00", 60.0).waited(10.0),
            call(Direction::Inbound, Some("102"), "2026-11-03 09:00", 100.0).waited(30.5),
            call(Direction::Inbound, None, "2026-11-04 10:00", 0.0).waited(3.0),
            call(Direction::Inbound, None, "2026-11-04 11:00", 0.0).waited(40.0),
            call(Direction::Inbound, Some("101"), "2026-11-09 09:00", 20.0)
                .waited(20.0)
                .queued("sales"),
            call(Direction::Outbound, Some("101"), "2026-11-09 09:00", 20.0),
        ];
        let range = long("2026-11-01", "2026-11-10");
        let rules = ServiceRules {
            sl_threshold: SlThreshold::seconds(20).unwrap(),
            short_abandon: ShortAbandon::seconds(5).unwrap(),
        };
        let days = CallDay::split(&range, 0, &records);
        let rollups: Vec<DayRollup> = days.iter().map(DayRollup::of).collect();
        let response = trend_response(
            &range,
            Direction::Inbound,
            Granularity::Week,
            rules,
            None,
            &rollups,
        );
        // 2026-11-01 is a Sunday: its week is cut to one day.
        assert_eq!(response.buckets.len(), 3);
        assert_eq!(
            response
                .buckets
                .iter()
                .map(|b| b.tally.offered())
                .sum::<u64>(),
            5
        );
        let week = &response.buckets[1];
        assert_eq!(
            (week.start, week.end, week.days()),
            (day("2026-11-02"), day("2026-11-08"), 7)
        );
        let summary = call_summary(
            &DateRange::up_to(week.start, week.end, 31).unwrap(),
            Direction::Inbound,
            rules,
            None,
            &days,
        );
        assert_eq!(week.tally.offered(), summary.tally.offered());
        assert_eq!(week.tally.offered(), 4);
        assert_eq!(week.tally.answered(), summary.tally.answered());
        assert_eq!(week.tally.unanswered(), summary.tally.unanswered());
        assert_eq!(week.tally.short_abandoned(), 1);
        assert_eq!(
            week.tally.short_abandoned(),
            summary.tally.short_abandoned()
        );
        assert_eq!(
            abandon_rate_percent(&week.tally),
            abandon_rate_percent(&summary.tally)
        );
        let level = service_level(&summary.tally).unwrap();
        assert_eq!(
            (
                week.tally.answered_within_threshold(),
                week.tally.calls_with_wait()
            ),
            (level.answered_within_threshold, level.calls_with_wait)
        );
        assert_eq!(
            (
                week.tally.answered_within_threshold(),
                week.tally.calls_with_wait()
            ),
            (1, 3)
        );
        assert_eq!(service_level_percent(&week.tally), Some(level.percent));
        assert_eq!(
            average_speed_of_answer_seconds(&week.tally),
            average_speed_of_answer_seconds(&summary.tally)
        );
        assert_eq!(average_speed_of_answer_seconds(&week.tally), Some(20.25));
        assert_eq!(average_handle_time_seconds(&week.tally), Some(80.0));
        assert_eq!(longest_wait_seconds(&week.tally), Some(40.0));
        // With a queue, only its calls.
        let sales = queue("sales");
        let by_queue = trend_response(
            &range,
            Direction::Inbound,
            Granularity::Week,
            rules,
            Some(&sales),
            &rollups,
        );
        let offered: Vec<u64> = by_queue.buckets.iter().map(|b| b.tally.offered()).collect();
        assert_eq!(offered, [0, 0, 1]);
    }

    /// docs/behaviour.md's "Trend" and "Comparison" examples, computed.
    #[test]
    fn the_trend_and_comparison_of_the_docs_are_what_the_code_answers() {
        let records = crate::testing::worked_example();
        let weeks_range = long("2026-10-28", "2026-11-10");
        let weeks = trend(&weeks_range, Granularity::Week, &records);
        let rows: Vec<_> = weeks
            .buckets
            .iter()
            .map(|b| {
                (
                    b.start.to_string(),
                    b.days(),
                    b.tally.offered(),
                    abandon_rate_percent(&b.tally),
                    service_level_percent(&b.tally),
                    average_speed_of_answer_seconds(&b.tally),
                    average_handle_time_seconds(&b.tally),
                    longest_wait_seconds(&b.tally),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("2026-10-28".to_owned(), 5, 0, None, None, None, None, None),
                (
                    "2026-11-02".to_owned(),
                    7,
                    5,
                    Some(20.0),
                    Some(50.0),
                    Some(21.83),
                    Some(75.0),
                    Some(95.25)
                ),
                ("2026-11-09".to_owned(), 2, 0, None, None, None, None, None),
            ]
        );
        let months = trend(&weeks_range, Granularity::Month, &records);
        assert_eq!(
            spans(&months),
            [
                span("2026-10-28", "2026-10-31", 4),
                span("2026-11-01", "2026-11-10", 10)
            ]
        );
        assert_eq!(months.buckets[1].tally.offered(), 5);
        // /calls/summary?start=2026-11-09&compare=previous_week
        let earlier =
            crate::params::Compare::PreviousWeek.earlier(&long("2026-11-09", "2026-11-09"));
        let days = CallDay::split(&earlier, 0, &records);
        let comparison = crate::stats::comparison(
            crate::params::Compare::PreviousWeek,
            &earlier,
            Direction::Inbound,
            SlThreshold::DEFAULT,
            None,
            &days,
        );
        assert_eq!(comparison.range.start(), day("2026-11-02"));
        assert_eq!(
            (
                comparison.tally.offered(),
                abandon_rate_percent(&comparison.tally),
                service_level(&comparison.tally).map(|l| l.percent)
            ),
            (5, Some(20.0), Some(50.0))
        );
    }

    #[test]
    fn freshness_reads_the_rollups_held() {
        let range = long("2026-11-01", "2026-11-02");
        let days = CallDay::split(&range, 1_795_000_000_123, &[]);
        let rollups: Vec<DayRollup> = days.iter().map(DayRollup::of).collect();
        let response = trend_response(
            &range,
            Direction::Inbound,
            Granularity::Day,
            SlThreshold::DEFAULT,
            None,
            &rollups,
        );
        assert_eq!(
            response.measurement.freshness.as_of.as_deref(),
            Some("2026-11-18T11:06:40.123Z")
        );
        assert_eq!(response.measurement.freshness.provisional_from, None);
        let missing = trend_response(
            &range,
            Direction::Inbound,
            Granularity::Day,
            SlThreshold::DEFAULT,
            None,
            &rollups[..1],
        );
        assert_eq!(
            missing.measurement.freshness.provisional_from,
            Some(day("2026-11-02"))
        );
    }
}
