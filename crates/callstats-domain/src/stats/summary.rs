//! /calls/summary: daily series, hourly histogram, peaks and service figures of one direction.

use crate::calendar::{DateRange, Period};
use crate::call_day::CallDay;
use crate::model::{CallSummary, Comparison, DayCount, HourCount, QueueName};
use crate::params::{Compare, Direction, ServiceRules};
use crate::stats::freshness::period_response;
use crate::stats::service_level::{
    ServiceTally, abandon_rate_percent, average_abandon_time_seconds, average_handle_time_seconds,
    average_speed_of_answer_seconds, longest_wait_seconds, offered_calls, service_level,
    speed_of_answer_percentiles,
};
use crate::tz;

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
) -> CallSummary {
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
    let total_calls: u64 = daily.iter().map(|d| d.count).sum();
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

    period_response!(range, days => CallSummary {
        direction,
        timezone: tz::TASHKENT_LABEL,
        total_calls,
        answered_calls: tally.answered(),
        unanswered_calls: tally.unanswered(),
        short_abandoned_calls: tally.short_abandoned(),
        short_abandon_seconds: rules.short_abandon.get(),
        abandon_rate_percent: abandon_rate_percent(&tally),
        service_level: service_level(&tally),
        average_speed_of_answer_seconds: average_speed_of_answer_seconds(&tally),
        speed_of_answer_percentiles: speed_of_answer_percentiles(&tally),
        longest_wait_seconds: longest_wait_seconds(&tally),
        average_abandon_time_seconds: average_abandon_time_seconds(&tally),
        average_handle_time_seconds: average_handle_time_seconds(&tally),
        daily,
        hourly,
        peak_day,
        peak_hour,
        peak_hour_count: peak_hour.map_or(0, |h| h.count),
        comparison: None,
    })
}

/// The `comparison` of /calls/summary: the summary's figures over `earlier` (the period
/// `compare` names), from that period's `days`, measured exactly as the body's own.
#[must_use]
pub fn comparison<D: AsRef<CallDay>>(
    compare: Compare,
    earlier: &DateRange,
    direction: Direction,
    rules: impl Into<ServiceRules>,
    queue: Option<&QueueName>,
    days: &[D],
) -> Comparison {
    let mut tally = ServiceTally::new(rules);
    for day in days.iter().map(AsRef::as_ref) {
        let within = earlier.start() <= day.day() && day.day() <= earlier.end();
        for call in offered_calls(day, direction, queue).filter(|_| within) {
            tally.add(call);
        }
    }
    Comparison {
        compare,
        period: Period::from(earlier),
        total_calls: tally.offered(),
        answered_calls: tally.answered(),
        unanswered_calls: tally.unanswered(),
        short_abandoned_calls: tally.short_abandoned(),
        abandon_rate_percent: abandon_rate_percent(&tally),
        service_level: service_level(&tally),
        average_speed_of_answer_seconds: average_speed_of_answer_seconds(&tally),
        average_handle_time_seconds: average_handle_time_seconds(&tally),
        longest_wait_seconds: longest_wait_seconds(&tally),
    }
}

/// The first element with the highest count.
fn earliest_max<T: Copy>(items: &[T], count: impl Fn(&T) -> u64) -> Option<T> {
    items.iter().copied().fold(None, |best, item| match best {
        Some(b) if count(&b) >= count(&item) => Some(b),
        _ => Some(item),
    })
}

/// docs/behaviour.md's worked example ("Service figures"), computed: the page states what the
/// code answers. The per-queue table of the same day is checked in stats/queues.rs.
#[cfg(test)]
mod worked_example {
    use super::*;
    use crate::params::SlThreshold;
    use crate::testing::{range, worked_example as example};

    #[test]
    fn the_worked_example_of_the_docs_is_what_the_code_answers() {
        let r = range("2026-11-02", "2026-11-02");
        let days = CallDay::split(&r, 0, &example());
        let summary = |threshold: u16| {
            let threshold = SlThreshold::seconds(threshold).unwrap();
            let json =
                serde_json::to_value(call_summary(&r, Direction::Inbound, threshold, None, &days))
                    .unwrap();
            [
                "total_calls",
                "unanswered_calls",
                "abandon_rate_percent",
                "service_level",
                "average_speed_of_answer_seconds",
                "longest_wait_seconds",
                "average_handle_time_seconds",
            ]
            .map(|field| json[field].clone())
        };
        assert_eq!(
            summary(20),
            [
                serde_json::json!(5),
                serde_json::json!(1),
                serde_json::json!(20.0),
                serde_json::json!({"threshold_seconds": 20, "answered_within_threshold": 2,
                                   "calls_with_wait": 4, "percent": 50.0}),
                serde_json::json!(21.83),
                serde_json::json!(95.25),
                serde_json::json!(75.0),
            ]
        );
        assert_eq!(summary(5)[3]["percent"], 25.0);
        // The spread of the waits, and the abandoned call's wait.
        let json = serde_json::to_value(call_summary(
            &r,
            Direction::Inbound,
            SlThreshold::DEFAULT,
            None,
            &days,
        ))
        .unwrap();
        assert_eq!(
            json["speed_of_answer_percentiles"],
            serde_json::json!({"p50": 20.0, "p80": 41.0, "p90": 41.0, "p95": 41.0})
        );
        assert_eq!(json["average_abandon_time_seconds"], 95.25);
        // With `short_abandon=100`, c-3 (95.25 s) is a short abandon.
        let rules = ServiceRules {
            sl_threshold: SlThreshold::DEFAULT,
            short_abandon: crate::params::ShortAbandon::seconds(100).unwrap(),
        };
        let short = call_summary(&r, Direction::Inbound, rules, None, &days);
        assert_eq!(
            (
                short.total_calls,
                short.unanswered_calls,
                short.short_abandoned_calls,
                short.abandon_rate_percent,
                short
                    .service_level
                    .map(|level| (level.calls_with_wait, level.percent)),
                short.average_abandon_time_seconds,
            ),
            (5, 1, 1, Some(0.0), Some((3, 66.67)), None)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CallRecord, CallSummary};
    use crate::params::SlThreshold;
    use crate::testing::{call, day, range};

    /// The summary of records, split into the range's days as the day store keeps them.
    fn summarise(range: &DateRange, direction: Direction, calls: &[CallRecord]) -> CallSummary {
        call_summary(
            range,
            direction,
            SlThreshold::DEFAULT,
            None,
            &CallDay::split(range, 0, calls),
        )
    }

    /// The inbound summary of `calls` from `start` to `end`.
    fn inbound_summary(start: &str, end: &str, calls: &[CallRecord]) -> CallSummary {
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
                inbound.total_calls,
                inbound.answered_calls,
                inbound.unanswered_calls
            ),
            (2, 1, 1)
        );
        assert_eq!(
            (
                outbound.total_calls,
                outbound.answered_calls,
                outbound.unanswered_calls
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
        assert_eq!(summary.total_calls, 2);
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
        assert_eq!(summary.total_calls, 1);
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
            (many.hourly, many.peak_hour, many.peak_hour_count),
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
        assert_eq!(summary.peak_hour_count, 2);
        let empty = inbound_summary("2026-11-01", "2026-11-01", &[]);
        assert_eq!(
            (empty.peak_hour, empty.peak_hour_count),
            (Some(HourCount { hour: 0, count: 0 }), 0)
        );
    }

    #[test]
    fn summary_serialises_to_the_spec_shape() {
        let summary = inbound_summary(
            "2026-11-01",
            "2026-11-02",
            &[inbound("2026-11-02T10:00:00+05:00")],
        );
        assert_eq!(
            serde_json::to_value(&summary).unwrap(),
            serde_json::json!({
                "period": {"start_date": "2026-11-01", "end_date": "2026-11-02"},
                "direction": "inbound",
                "clamped": false,
                "timezone": "+05:00",
                "as_of": "1970-01-01T00:00:00.000Z",
                "provisional_from": null,
                "total_calls": 1,
                "answered_calls": 1,
                "unanswered_calls": 0,
                "short_abandoned_calls": 0,
                "short_abandon_seconds": 0,
                "abandon_rate_percent": 0.0,
                "service_level": null,
                "average_speed_of_answer_seconds": null,
                "speed_of_answer_percentiles": null,
                "longest_wait_seconds": null,
                "average_abandon_time_seconds": null,
                "average_handle_time_seconds": 60.0,
                "daily": [{"date": "2026-11-01", "count": 0}, {"date": "2026-11-02", "count": 1}],
                "hourly": null,
                "peak_day": {"date": "2026-11-02", "count": 1},
                "peak_hour": null,
                "peak_hour_count": 0,
                "comparison": null
            })
        );
    }

    #[test]
    fn single_day_summary_has_hour_buckets_and_peak_hour_objects() {
        let summary = inbound_summary(
            "2026-11-01",
            "2026-11-01",
            &[inbound("2026-11-01T10:00:00+05:00")],
        );
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(
            json["hourly"][10],
            serde_json::json!({"hour": 10, "count": 1})
        );
        assert_eq!(
            json["peak_hour"],
            serde_json::json!({"hour": 10, "count": 1})
        );
        assert_eq!(json["peak_hour_count"], 1);
    }
}
