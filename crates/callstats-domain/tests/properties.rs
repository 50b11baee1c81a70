//! Invariants of the statistics and parsers over generated inputs.

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

use callstats_domain::calendar::{DateRange, Day, LocalDateTime, Month};
use callstats_domain::call_day::CallDay;
use callstats_domain::model::{AgentNumber, CallRecord, KpiOperatorRow, QueueName};
use callstats_domain::params::{
    Direction, Granularity, IntervalMinutes, RosterFilter, ScriptsLimit, ServiceRules, Shift,
    ShortAbandon, SlThreshold,
};
use callstats_domain::rollup::DayRollup;
use callstats_domain::stats::intervals::{intervals_per_day, intervals_response};
use callstats_domain::stats::kpi::{spread, totals};
use callstats_domain::stats::queues::queue_entries;
use callstats_domain::stats::round::round2;
use callstats_domain::stats::service_level::{
    abandon_rate_percent, average_handle_time_seconds, average_speed_of_answer_seconds,
    longest_wait_seconds, service_level, service_level_percent,
};
use callstats_domain::stats::{PriorWeight, agent_leaderboard, call_summary, trend_response};
use proptest::prelude::*;
use time::{Date, Duration};

fn day_strategy() -> impl Strategy<Value = Day> {
    // 2000-01-01 .. ~2040.
    (0_i64..15_000).prop_map(|offset| {
        Day::new(
            Date::from_calendar_date(2000, time::Month::January, 1).unwrap()
                + Duration::days(offset),
        )
    })
}

/// A service-level threshold of 1 to `max` seconds.
fn threshold_strategy(max: u16) -> impl Strategy<Value = SlThreshold> {
    (1..=max).prop_map(|seconds| SlThreshold::seconds(seconds).unwrap())
}

/// Either direction.
fn direction_strategy() -> impl Strategy<Value = Direction> {
    any::<bool>().prop_map(|inbound| {
        if inbound {
            Direction::Inbound
        } else {
            Direction::Outbound
        }
    })
}

fn range_strategy(max_days: i64) -> impl Strategy<Value = DateRange> {
    (day_strategy(), 0..max_days).prop_map(|(start, len)| {
        DateRange::up_to_31_days(start, start.plus_days(len).unwrap()).unwrap()
    })
}

/// Calls around `range`: some a day before or after it, to exercise the filtering.
fn calls_strategy(range: DateRange) -> impl Strategy<Value = Vec<CallRecord>> {
    let (from, to) = range.unix_window();
    let call = (
        (from - 86_400)..(to + 86_400),
        direction_strategy(),
        prop::option::weighted(0.9, 0_u8..12),
        0.0_f64..5_000.0,
        // Whole and fractional waits around the thresholds, a day's at most; some untracked.
        prop::option::weighted(
            0.8,
            prop_oneof![0_u32..120, Just(86_400_u32)]
                .prop_flat_map(|whole| (Just(whole), prop_oneof![Just(0.0), 0.0_f64..1.0])),
        ),
        prop::option::weighted(
            0.7,
            prop::sample::select(vec!["sales", "support", "Sales", "billing"]),
        ),
    )
        .prop_map(
            |(started_at, direction, agent, duration_seconds, wait, queue)| CallRecord {
                direction,
                agent_number: agent
                    .map(|a| AgentNumber::new(&format!("{}", 100 + u32::from(a))).unwrap()),
                started_at,
                duration_seconds,
                wait_seconds: wait.map(|(whole, part)| (f64::from(whole) + part).min(86_400.0)),
                queue: queue.map(|q| QueueName::new(q).unwrap()),
            },
        );
    prop::collection::vec(call, 0..400)
}

fn range_and_calls(max_days: i64) -> impl Strategy<Value = (DateRange, Vec<CallRecord>)> {
    range_strategy(max_days).prop_flat_map(|range| (Just(range), calls_strategy(range)))
}

/// The days the statistics get for `range`: its own, plus the day before and the day after (in
/// an unusual order), which must be ignored.
fn days_around(range: DateRange, calls: &[CallRecord]) -> Vec<CallDay> {
    let one = DateRange::day;
    let mut days = CallDay::split(&one(range.end().plus_days(1).unwrap()), 0, calls);
    days.extend(CallDay::split(&range, 0, calls));
    days.extend(CallDay::split(
        &one(range.start().plus_days(-1).unwrap()),
        0,
        calls,
    ));
    days
}

/// Asserts that the tally of a row of /calls/queues or /calls/trend (`$tally`) gives the
/// figures of the summary of its own calls (`$alone`) that every such row shares with it.
macro_rules! prop_assert_tally_is_its_summary {
    ($tally:expr, $alone:expr) => {{
        let (tally, alone) = ($tally, &$alone);
        prop_assert_eq!(tally.offered(), alone.tally.offered());
        prop_assert_eq!(tally.answered(), alone.tally.answered());
        prop_assert_eq!(tally.unanswered(), alone.tally.unanswered());
        prop_assert_eq!(tally.short_abandoned(), alone.tally.short_abandoned());
        prop_assert_eq!(
            abandon_rate_percent(tally),
            abandon_rate_percent(&alone.tally)
        );
        prop_assert_eq!(service_level(tally), service_level(&alone.tally));
        prop_assert_eq!(
            average_speed_of_answer_seconds(tally),
            average_speed_of_answer_seconds(&alone.tally)
        );
        prop_assert_eq!(
            average_handle_time_seconds(tally),
            average_handle_time_seconds(&alone.tally)
        );
        prop_assert_eq!(
            longest_wait_seconds(tally),
            longest_wait_seconds(&alone.tally)
        );
    }};
}

proptest! {

    #[test]
    fn a_range_split_into_days_keeps_exactly_its_calls_in_order((range, calls) in range_and_calls(31)) {
        let (from, to) = range.unix_window();
        let mut expected: Vec<CallRecord> = calls.iter().filter(|c| (from..to).contains(&c.started_at)).cloned().collect();
        // Grouped by day, each day's calls in their original order.
        expected.sort_by_key(|c| callstats_domain::tz::local_day_and_hour(c.started_at).0);
        let kept: Vec<CallRecord> = CallDay::split(&range, 0, &calls).iter().flat_map(CallDay::records).collect();
        prop_assert_eq!(kept, expected);
    }

    #[test]
    fn a_day_is_written_as_iso_8601_and_parses_back(julian in Date::MIN.to_julian_day()..=Date::MAX.to_julian_day()) {
        let date = Date::from_julian_day(julian).unwrap();
        let day = Day::new(date);
        let text = day.to_string();
        let (year, month, dom) = (date.year(), u8::from(date.month()), date.day());
        prop_assert_eq!(&text, &format!("{year:04}-{month:02}-{dom:02}"));
        if (0..=9999).contains(&year) {
            prop_assert_eq!(Day::parse(&text).unwrap(), day);
        }
    }

    #[test]
    fn daily_series_sums_to_the_total((range, calls) in range_and_calls(31), direction in direction_strategy()) {
        let summary = call_summary(&range, direction, SlThreshold::DEFAULT, None, &days_around(range, &calls));
        prop_assert_eq!(summary.daily.iter().map(|d| d.count).sum::<u64>(), summary.tally.offered());
        prop_assert_eq!(summary.daily.len(), range.days());
        let (from, to) = range.unix_window();
        let expected = calls.iter().filter(|c| c.direction == direction && (from..to).contains(&c.started_at)).count();
        prop_assert_eq!(summary.tally.offered(), u64::try_from(expected).unwrap());
        prop_assert!(summary.daily.iter().all(|d| d.count <= summary.peak_day.count));
    }

    #[test]
    fn answered_and_unanswered_make_the_total_in_either_direction((range, calls) in range_and_calls(31), direction in direction_strategy()) {
        let summary = call_summary(&range, direction, SlThreshold::DEFAULT, None, &days_around(range, &calls));
        prop_assert_eq!(summary.tally.answered() + summary.tally.unanswered(), summary.tally.offered());
        let (from, to) = range.unix_window();
        let unanswered = calls.iter().filter(|c| c.direction == direction && c.agent_number.is_none() && (from..to).contains(&c.started_at)).count();
        prop_assert_eq!(summary.tally.unanswered(), u64::try_from(unanswered).unwrap());
    }

    #[test]
    fn service_figures_hold_their_bounds(
        (range, calls) in range_and_calls(31),
        direction in direction_strategy(),
        threshold in threshold_strategy(3600),
    ) {
        for queue in [None, Some(QueueName::new("sales").unwrap())] {
            let summary = call_summary(&range, direction, threshold, queue.as_ref(), &days_around(range, &calls));
            if let Some(level) = service_level(&summary.tally) {
                prop_assert!((0.0..=100.0).contains(&level.percent), "{level:?}");
                prop_assert!(level.answered_within_threshold <= level.calls_with_wait, "{level:?}");
                prop_assert!(level.calls_with_wait <= summary.tally.offered(), "{level:?}");
                prop_assert_eq!(level.threshold_seconds, threshold.get());
            }
            if let Some(rate) = abandon_rate_percent(&summary.tally) {
                prop_assert!((0.0..=100.0).contains(&rate), "{rate}");
            } else {
                prop_assert_eq!(summary.tally.offered(), 0);
            }
            match (average_speed_of_answer_seconds(&summary.tally), longest_wait_seconds(&summary.tally)) {
                (Some(asa), Some(longest)) => prop_assert!(asa <= longest, "{asa} > {longest}"),
                (Some(asa), None) => prop_assert!(false, "a speed of answer {asa} without a longest wait"),
                _ => {}
            }
            prop_assert_eq!(average_handle_time_seconds(&summary.tally).is_some(), summary.tally.answered() > 0);
        }
    }

    #[test]
    fn each_trend_bucket_read_from_rollups_is_the_summary_of_its_raw_calls(
        (range, calls) in range_and_calls(31),
        direction in direction_strategy(),
        threshold in threshold_strategy(120),
        short in prop_oneof![Just(0_u16), 0_u16..=30, Just(600)],
        granularity in prop::sample::select(vec![Granularity::Day, Granularity::Week, Granularity::Month]),
        queue in prop::option::of(prop::sample::select(vec!["sales", "support"])),
    ) {
        // Waits and durations in quarter seconds: their sums are exact in any order, so the
        // rollups' day sums and the raw calls' running sums are the same numbers.
        let quarter = |value: f64| (value * 4.0).round() / 4.0;
        let calls: Vec<CallRecord> = calls
            .into_iter()
            .map(|call| CallRecord {
                duration_seconds: quarter(call.duration_seconds),
                wait_seconds: call.wait_seconds.map(quarter),
                ..call
            })
            .collect();
        let rules = ServiceRules {
            sl_threshold: threshold,
            short_abandon: ShortAbandon::seconds(short).unwrap(),
        };
        let queue = queue.map(|name| QueueName::new(name).unwrap());
        let days = days_around(range, &calls);
        let rollups: Vec<DayRollup> = days.iter().map(DayRollup::of).collect();
        let trend = trend_response(&range, direction, granularity, rules, queue.as_ref(), &rollups);
        let whole = call_summary(&range, direction, rules, queue.as_ref(), &days);
        prop_assert_eq!(trend.buckets.iter().map(|b| b.tally.offered()).sum::<u64>(), whole.tally.offered());
        prop_assert_eq!(trend.buckets.iter().map(|b| usize::try_from(b.days()).unwrap()).sum::<usize>(), range.days());
        for bucket in &trend.buckets {
            let own = DateRange::up_to_31_days(bucket.start, bucket.end).unwrap();
            let alone = call_summary(&own, direction, rules, queue.as_ref(), &days);
            prop_assert_tally_is_its_summary!(&bucket.tally, alone);
            prop_assert_eq!(
                (bucket.tally.answered_within_threshold(), bucket.tally.calls_with_wait()),
                service_level(&alone.tally).map_or((0, 0), |l| (l.answered_within_threshold, l.calls_with_wait))
            );
        }
    }

    #[test]
    fn the_queues_offered_add_up_to_the_total_and_each_row_is_the_summary_of_its_queue(
        (range, calls) in range_and_calls(31),
        direction in direction_strategy(),
        threshold in threshold_strategy(120),
    ) {
        let days = days_around(range, &calls);
        let summary = call_summary(&range, direction, threshold, None, &days);
        let queues = queue_entries(&range, direction, threshold, &days);
        prop_assert_eq!(queues.iter().map(|q| q.tally.offered()).sum::<u64>(), summary.tally.offered());
        prop_assert!(queues.iter().all(|q| q.tally.offered() > 0));
        for (index, row) in queues.iter().enumerate() {
            let Some(queue) = &row.queue else {
                prop_assert_eq!(index + 1, queues.len(), "the calls without a queue come last");
                continue;
            };
            let alone = call_summary(&range, direction, threshold, Some(queue), &days);
            prop_assert_tally_is_its_summary!(&row.tally, alone);
        }
        let unknown = call_summary(&range, direction, threshold, Some(&QueueName::new("nobody").unwrap()), &days);
        prop_assert_eq!((unknown.tally.offered(), service_level(&unknown.tally)), (0, None));
    }

    #[test]
    fn a_days_intervals_offer_its_daily_count_and_the_whole_period_its_figures(
        (range, calls) in range_and_calls(7),
        direction in direction_strategy(),
        minutes in prop::sample::select(vec![15_u8, 30, 60]),
        threshold in threshold_strategy(120),
        queued in any::<bool>(),
    ) {
        let interval = IntervalMinutes::minutes(minutes).unwrap();
        let queue = queued.then(|| calls.iter().find_map(|c| c.queue.clone())).flatten();
        let days = days_around(range, &calls);
        let summary = call_summary(&range, direction, threshold, queue.as_ref(), &days);
        let rows = intervals_response(&range, direction, interval, threshold, queue.as_ref(), &days).intervals;
        let per_day = intervals_per_day(interval);
        prop_assert_eq!(rows.len(), range.days() * per_day);
        for (day, chunk) in summary.daily.iter().zip(rows.chunks(per_day)) {
            prop_assert_eq!(chunk.iter().map(|r| r.tally.offered()).sum::<u64>(), day.count);
            prop_assert!(chunk.iter().all(|r| r.start.starts_with(&day.date.to_string())));
        }
        prop_assert!(rows.windows(2).all(|pair| pair[0].start < pair[1].start), "time order");
        prop_assert_eq!(rows.iter().map(|r| r.tally.answered()).sum::<u64>(), summary.tally.answered());
        for row in &rows {
            let tally = &row.tally;
            prop_assert_eq!(tally.answered() + tally.unanswered(), tally.offered());
            prop_assert!(service_level_percent(tally).is_none_or(|p| (0.0..=100.0).contains(&p)));
            prop_assert_eq!(average_handle_time_seconds(tally).is_some(), tally.answered() > 0);
        }
        // An interval with all the period's calls has the summary's figures (the same tally).
        if let Some(row) = rows.iter().find(|r| r.tally.offered() == summary.tally.offered() && r.tally.offered() > 0) {
            prop_assert_tally_is_its_summary!(&row.tally, summary);
        }
    }

    #[test]
    fn a_platform_without_waits_or_queues_keeps_every_old_figure(
        (range, calls) in range_and_calls(31),
        direction in direction_strategy(),
    ) {
        let bare: Vec<CallRecord> = calls.iter().cloned().map(|c| CallRecord { wait_seconds: None, queue: None, ..c }).collect();
        let with = call_summary(&range, direction, SlThreshold::DEFAULT, None, &days_around(range, &calls));
        let without = call_summary(&range, direction, SlThreshold::DEFAULT, None, &days_around(range, &bare));
        prop_assert_eq!((with.tally.offered(), with.tally.answered(), &with.daily, &with.hourly), (without.tally.offered(), without.tally.answered(), &without.daily, &without.hourly));
        prop_assert_eq!(average_handle_time_seconds(&with.tally), average_handle_time_seconds(&without.tally));
        prop_assert_eq!((service_level(&without.tally), average_speed_of_answer_seconds(&without.tally), longest_wait_seconds(&without.tally)), (None, None, None));
    }

    #[test]
    fn single_day_hourly_buckets_sum_to_the_total((range, calls) in range_and_calls(1)) {
        let summary = call_summary(&range, Direction::Inbound, SlThreshold::DEFAULT, None, &days_around(range, &calls));
        let hourly = summary.hourly.expect("single day has hourly buckets");
        prop_assert_eq!(hourly.len(), 24);
        prop_assert_eq!(hourly.iter().map(|h| h.count).sum::<u64>(), summary.tally.offered());
        prop_assert_eq!(summary.peak_hour.map_or(0, |h| h.count), hourly.iter().map(|h| h.count).max().unwrap());
    }

    #[test]
    fn shares_sum_to_100_within_rounding((range, calls) in range_and_calls(31)) {
        let board = agent_leaderboard(&range, None, &RosterFilter::default(), &days_around(range, &calls), &[], &[], PriorWeight::DEFAULT);
        let agents = &board.agents;
        if !agents.is_empty() {
            let sum: f64 = agents.iter().map(|a| board.share_percent(a)).sum();
            let tolerance = 0.005 * f64::from(u32::try_from(agents.len()).unwrap()) + 1e-9;
            prop_assert!((sum - 100.0).abs() <= tolerance, "shares sum to {sum}");
        }
        prop_assert!(agents.windows(2).all(|w| w[0].calls > w[1].calls || (w[0].calls == w[1].calls && w[0].agent_number < w[1].agent_number)));
    }

    #[test]
    fn percentiles_are_ordered(values in prop::collection::vec(-1.0e9_f64..1.0e9, 1..200)) {
        let s = spread(values, round2).unwrap();
        prop_assert!(s.min <= s.p25 && s.p25 <= s.median && s.median <= s.p75 && s.p75 <= s.max, "{s:?}");
        prop_assert!(s.min <= s.avg && s.avg <= s.max, "{s:?}");
    }

    #[test]
    fn totals_equal_column_sums(rows in prop::collection::vec((0.0_f64..1.0e7, prop::option::of(0.0_f64..1.0e7)), 0..60)) {
        let rows: Vec<KpiOperatorRow> = rows
            .into_iter()
            .zip(1_u32..)
            .map(|((kpi_sum, payout), row)| KpiOperatorRow {
                agent_number: None, name: String::new(), row, kpi_percent: 0.5, kpi_sum: round2(kpi_sum),
                fiksa: None, bonus: None, fine: None, payout: payout.map(round2), metrics: vec![],
            })
            .collect();
        let t = totals(&rows);
        let payouts: Vec<f64> = rows.iter().filter_map(|r| r.payout).collect();
        let expected_payout = (!payouts.is_empty()).then(|| round2(payouts.iter().sum()));
        let expected_kpi = (!rows.is_empty()).then(|| round2(rows.iter().map(|r| r.kpi_sum).sum()));
        prop_assert_eq!(t.payout, expected_payout);
        prop_assert_eq!(t.kpi_sum, expected_kpi);
        prop_assert_eq!(t.fiksa, None);
    }

    #[test]
    fn clamped_range_is_31_days_and_ends_at_the_requested_end(start in day_strategy(), len in 0_i64..400) {
        let end = start.plus_days(len).unwrap();
        let range = DateRange::up_to_31_days(start, end).unwrap();
        prop_assert_eq!(range.end(), end);
        prop_assert_eq!(range.clamped(), len >= 31);
        prop_assert_eq!(range.days(), usize::try_from((len + 1).min(31)).unwrap());
        prop_assert_eq!(range.iter_days().count(), range.days());
    }

    #[test]
    fn dates_and_months_round_trip_through_their_text(day in day_strategy()) {
        let text = day.to_string();
        prop_assert_eq!(Day::parse(&text).unwrap(), day);
        let month = day.month();
        prop_assert_eq!(Month::parse(&month.to_string()).unwrap(), month);
    }

    #[test]
    fn what_a_parser_accepts_reads_back_from_its_own_text(
        raw in prop_oneof![
            any::<String>(),
            "[0-9]{4}-[01][0-9]-[0-3][0-9]",
            "[0-9]{4}-[01][0-9]",
            "[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9](:[0-6][0-9])?",
            "(inbound|outbound|Inbound| inbound|[a-z]{0,8})",
            "[+ -]?[0-9]{1,4}",
            "[0-9A-Za-z ʻ.-]{0,70}",
        ],
    ) {
        if let Ok(day) = Day::parse(&raw) {
            prop_assert_eq!(Day::parse(&day.to_string()).ok(), Some(day));
        }
        if let Ok(month) = Month::parse(&raw) {
            prop_assert_eq!(Month::parse(&month.to_string()).ok(), Some(month));
        }
        if let Ok(at) = LocalDateTime::parse(&raw) {
            prop_assert_eq!(LocalDateTime::parse(&at.to_string()).ok(), Some(at));
        }
        if let Ok(direction) = Direction::parse(&raw) {
            prop_assert_eq!(direction.as_str(), raw.as_str(), "case-sensitive, no spaces");
        }
        if let Ok(limit) = ScriptsLimit::parse(&raw) {
            prop_assert!(raw.bytes().all(|b| b.is_ascii_digit()), "digits only: {raw:?}");
            prop_assert_eq!(ScriptsLimit::parse(&limit.get().to_string()).ok(), Some(limit));
        }
        if let Ok(shift) = Shift::parse(&raw) {
            prop_assert_eq!(shift.as_str(), raw.as_str());
        }
        if let Ok(agent) = AgentNumber::new(&raw) {
            prop_assert_eq!(AgentNumber::new(agent.as_str()).ok(), Some(agent));
        }
    }
}
