//! /calls/trend: the service figures of each day, ISO week or month of a period of up to 366
//! days, read from the days' rollups ([`crate::rollup`]) rather than their calls.
//!
//! A bucket's row is a [`ServiceTally`] of its days' rollup groups, read by the same functions
//! as /calls/summary: no second definition of any figure.

use crate::calendar::{DateRange, Day, Period};
use crate::call_day::HeldDay;
use crate::model::{QueueName, TrendBucket, TrendResponse};
use crate::params::{Direction, Granularity, ServiceRules};
use crate::rollup::DayRollup;
use crate::stats::freshness::{Freshness, freshness};
use crate::stats::service_level::{
    ServiceTally, abandon_rate_percent, average_handle_time_seconds,
    average_speed_of_answer_seconds, longest_wait_seconds, service_level_percent,
};
use crate::tz;

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
) -> TrendResponse {
    let rules = rules.into();
    let rollups: Vec<&DayRollup> = rollups.iter().map(AsRef::as_ref).collect();
    let Freshness {
        as_of,
        provisional_from,
    } = freshness(range, &rollups);
    TrendResponse {
        period: Period::from(range),
        direction,
        granularity,
        timezone: tz::TASHKENT_LABEL,
        clamped: range.clamped(),
        sl_threshold_seconds: rules.sl_threshold.get(),
        short_abandon_seconds: rules.short_abandon.get(),
        queue: queue.cloned(),
        as_of,
        provisional_from,
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
) -> Vec<TrendBucket> {
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
        .map(|(start, end, tally)| trend_bucket(start, end, &tally))
        .collect()
}

/// A bucket's row from the tally of its days.
#[must_use]
pub fn trend_bucket(start: Day, end: Day, tally: &ServiceTally) -> TrendBucket {
    TrendBucket {
        start,
        end,
        days: u32::try_from(end.number() - start.number() + 1).unwrap_or(0),
        offered: tally.offered(),
        answered: tally.answered(),
        unanswered: tally.unanswered(),
        short_abandoned_calls: tally.short_abandoned(),
        abandon_rate_percent: abandon_rate_percent(tally),
        answered_within_threshold: tally.answered_within_threshold(),
        calls_with_wait: tally.calls_with_wait(),
        service_level_percent: service_level_percent(tally),
        average_speed_of_answer_seconds: average_speed_of_answer_seconds(tally),
        average_handle_time_seconds: average_handle_time_seconds(tally),
        longest_wait_seconds: longest_wait_seconds(tally),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call_day::CallDay;
    use crate::model::CallRecord;
    use crate::params::{ShortAbandon, SlThreshold};
    use crate::stats::call_summary;
    use crate::testing::{CallExt, call, day, queue};

    fn long(start: &str, end: &str) -> DateRange {
        DateRange::up_to(day(start), day(end), 366).unwrap()
    }

    fn trend(range: &DateRange, granularity: Granularity, records: &[CallRecord]) -> TrendResponse {
        let rollups: Vec<DayRollup> = CallDay::split(range, 0, records)
            .iter()
            .map(DayRollup::of)
            .collect();
        trend_response(
            range,
            Direction::Inbound,
            granularity,
            SlThreshold::DEFAULT,
            None,
            &rollups,
        )
    }

    fn spans(response: &TrendResponse) -> Vec<(String, String, u32)> {
        response
            .buckets
            .iter()
            .map(|b| (b.start.to_string(), b.end.to_string(), b.days))
            .collect()
    }

    fn span(start: &str, end: &str, days: u32) -> (String, String, u32) {
        (start.to_owned(), end.to_owned(), days)
    }

    #[test]
    fn iso_weeks_run_monday_to_sunday_across_a_year_end_and_are_cut_to_the_period() {
        // 2026-12-23 is a Wednesday; 2026-12-28 the Monday of ISO week 53.
        let response = trend(&long("2026-12-23", "2027-01-06"), Granularity::Week, &[]);
        assert_eq!(
            spans(&response),
            [
                span("2026-12-23", "2026-12-27", 5),
                span("2026-12-28", "2027-01-03", 7),
                span("2027-01-04", "2027-01-06", 3),
            ]
        );
    }

    #[test]
    fn months_have_28_to_31_days_and_the_first_and_last_are_cut() {
        let response = trend(&long("2026-01-15", "2026-05-10"), Granularity::Month, &[]);
        assert_eq!(
            spans(&response),
            [
                span("2026-01-15", "2026-01-31", 17),
                span("2026-02-01", "2026-02-28", 28),
                span("2026-03-01", "2026-03-31", 31),
                span("2026-04-01", "2026-04-30", 30),
                span("2026-05-01", "2026-05-10", 10),
            ]
        );
        let leap = trend(&long("2028-02-10", "2028-03-01"), Granularity::Month, &[]);
        assert_eq!(
            spans(&leap),
            [
                span("2028-02-10", "2028-02-29", 20),
                span("2028-03-01", "2028-03-01", 1)
            ]
        );
    }

    #[test]
    fn a_day_bucket_is_each_day_and_empty_buckets_have_zeros_and_nulls() {
        let response = trend(&long("2026-11-01", "2026-11-03"), Granularity::Day, &[]);
        assert_eq!(response.buckets.len(), 3);
        let empty = &response.buckets[1];
        assert_eq!((empty.offered, empty.calls_with_wait), (0, 0));
        assert_eq!(empty.abandon_rate_percent, None);
        assert_eq!(empty.service_level_percent, None);
        assert_eq!(empty.longest_wait_seconds, None);
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
        assert_eq!(response.buckets.iter().map(|b| b.offered).sum::<u64>(), 5);
        let week = &response.buckets[1];
        assert_eq!(
            (week.start, week.end, week.days),
            (day("2026-11-02"), day("2026-11-08"), 7)
        );
        let summary = call_summary(
            &DateRange::up_to(week.start, week.end, 31).unwrap(),
            Direction::Inbound,
            rules,
            None,
            &days,
        );
        assert_eq!(week.offered, summary.total_calls);
        assert_eq!(week.offered, 4);
        assert_eq!(week.answered, summary.answered_calls);
        assert_eq!(week.unanswered, summary.unanswered_calls);
        assert_eq!(week.short_abandoned_calls, 1);
        assert_eq!(week.short_abandoned_calls, summary.short_abandoned_calls);
        assert_eq!(week.abandon_rate_percent, summary.abandon_rate_percent);
        let level = summary.service_level.unwrap();
        assert_eq!(
            (week.answered_within_threshold, week.calls_with_wait),
            (level.answered_within_threshold, level.calls_with_wait)
        );
        assert_eq!(
            (week.answered_within_threshold, week.calls_with_wait),
            (1, 3)
        );
        assert_eq!(week.service_level_percent, Some(level.percent));
        assert_eq!(
            week.average_speed_of_answer_seconds,
            summary.average_speed_of_answer_seconds
        );
        assert_eq!(week.average_speed_of_answer_seconds, Some(20.25));
        assert_eq!(week.average_handle_time_seconds, Some(80.0));
        assert_eq!(week.longest_wait_seconds, Some(40.0));
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
        let offered: Vec<u64> = by_queue.buckets.iter().map(|b| b.offered).collect();
        assert_eq!(offered, [0, 0, 1]);
    }

    /// docs/behaviour.md's "Trend" and "Comparison" examples, computed.
    #[test]
    fn the_trend_and_comparison_of_the_docs_are_what_the_code_answers() {
        let records = crate::stats::summary::worked_example::example();
        let weeks_range = long("2026-10-28", "2026-11-10");
        let weeks = trend(&weeks_range, Granularity::Week, &records);
        let rows: Vec<_> = weeks
            .buckets
            .iter()
            .map(|b| {
                (
                    b.start.to_string(),
                    b.days,
                    b.offered,
                    b.abandon_rate_percent,
                    b.service_level_percent,
                    b.average_speed_of_answer_seconds,
                    b.average_handle_time_seconds,
                    b.longest_wait_seconds,
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
        assert_eq!(months.buckets[1].offered, 5);
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
        assert_eq!(comparison.period.start_date, day("2026-11-02"));
        assert_eq!(
            (
                comparison.total_calls,
                comparison.abandon_rate_percent,
                comparison.service_level.map(|l| l.percent)
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
        assert_eq!(response.as_of.as_deref(), Some("2026-11-18T11:06:40.123Z"));
        assert_eq!(response.provisional_from, None);
        let missing = trend_response(
            &range,
            Direction::Inbound,
            Granularity::Day,
            SlThreshold::DEFAULT,
            None,
            &rollups[..1],
        );
        assert_eq!(missing.provisional_from, Some(day("2026-11-02")));
    }
}
