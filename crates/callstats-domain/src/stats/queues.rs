//! /calls/queues: the service figures of each queue, the same computation as /calls/summary's
//! over one queue's calls.

use std::collections::HashMap;

use crate::calendar::DateRange;
use crate::call_day::CallDay;
use crate::model::{QueueEntry, QueueName, QueuesResponse};
use crate::params::{Direction, ServiceRules};
use crate::stats::freshness::period_response;
use crate::stats::service_level::{
    ServiceTally, average_abandon_time_seconds, offered_calls, speed_of_answer_percentiles,
    tally_row,
};

/// One entry per queue with a call of `direction` in `range`, figures measured against
/// `sl_threshold`; the calls without a queue form one entry with `queue: null`, listed last;
/// the others by offered descending, then name (byte-wise).
///
/// Each queue's calls are tallied in the order of the days and of the calls within each day,
/// as /calls/summary with that `queue` tallies them, so an entry's figures are that summary's
/// to the last bit.
#[must_use]
pub fn queues_response<D: AsRef<CallDay>>(
    range: &DateRange,
    direction: Direction,
    rules: impl Into<ServiceRules>,
    days: &[D],
) -> QueuesResponse {
    let rules = rules.into();
    period_response!(range, days, rules => QueuesResponse {
        direction,
        queues: queue_entries(range, direction, rules, days),
    })
}

/// The entries of [`queues_response`].
#[must_use]
pub fn queue_entries<D: AsRef<CallDay>>(
    range: &DateRange,
    direction: Direction,
    rules: impl Into<ServiceRules>,
    days: &[D],
) -> Vec<QueueEntry> {
    let rules = rules.into();
    // One tally per queue of the period; each day maps its own queue table onto them once, so
    // a call costs an index, not a hash of its queue's name.
    let mut slots: HashMap<Option<&QueueName>, usize> = HashMap::new();
    let mut tallies: Vec<(Option<&QueueName>, ServiceTally)> = Vec::new();
    for day in days.iter().map(AsRef::as_ref) {
        if !(range.start()..=range.end()).contains(&day.day()) {
            continue;
        }
        // The day's queues in its table's order, then the calls without one.
        let mut day_slots = Vec::with_capacity(day.queues().len().saturating_add(1));
        for queue in day.queues().iter().map(Some).chain([None]) {
            let slot = *slots.entry(queue).or_insert_with(|| {
                tallies.push((queue, ServiceTally::new(rules)));
                tallies.len().saturating_sub(1)
            });
            day_slots.push(slot);
        }
        let without_queue = day.queues().len();
        for call in offered_calls(day, direction, None) {
            let index = call
                .queue_index()
                .and_then(|index| usize::try_from(index).ok())
                .unwrap_or(without_queue);
            if let Some((_, tally)) = day_slots.get(index).and_then(|slot| tallies.get_mut(*slot)) {
                tally.add(call);
            }
        }
    }
    // A queue of the period whose calls were all of the other direction is not listed.
    let mut entries: Vec<QueueEntry> = tallies
        .into_iter()
        .filter(|(_, tally)| tally.offered() > 0)
        .map(|(queue, tally)| queue_entry(queue.cloned(), &tally))
        .collect();
    entries.sort_by(|a, b| {
        a.queue
            .is_none()
            .cmp(&b.queue.is_none())
            .then_with(|| b.offered.cmp(&a.offered))
            .then_with(|| a.queue.cmp(&b.queue))
    });
    entries
}

/// A queue's row from the tally of its calls.
#[must_use]
pub fn queue_entry(queue: Option<QueueName>, tally: &ServiceTally) -> QueueEntry {
    tally_row!(tally => QueueEntry {
        queue,
        speed_of_answer_percentiles: speed_of_answer_percentiles(tally),
        average_abandon_time_seconds: average_abandon_time_seconds(tally),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CallRecord;
    use crate::params::SlThreshold;
    use crate::testing::{call, range};

    const DAY: &str = "2026-11-02";

    fn queued(queue: Option<&str>, agent: Option<&str>, wait: Option<f64>) -> CallRecord {
        let mut record = call(Direction::Inbound, agent, "2026-11-02T10:00:00+05:00", 60.0);
        record.wait_seconds = wait;
        record.queue = queue.map(|q| QueueName::new(q).unwrap());
        record
    }

    fn entries(records: &[CallRecord], direction: Direction) -> Vec<QueueEntry> {
        let r = range(DAY, DAY);
        queue_entries(
            &r,
            direction,
            SlThreshold::DEFAULT,
            &CallDay::split(&r, 0, records),
        )
    }

    #[test]
    fn queues_by_offered_then_name_and_the_calls_without_a_queue_last() {
        let records = [
            queued(None, Some("101"), None),
            queued(None, Some("101"), None),
            queued(None, Some("101"), None),
            queued(Some("support"), Some("101"), Some(5.0)),
            queued(Some("sales"), Some("101"), Some(5.0)),
            queued(Some("billing"), None, Some(50.0)),
            queued(Some("billing"), Some("102"), Some(30.0)),
        ];
        let names: Vec<(Option<String>, u64)> = entries(&records, Direction::Inbound)
            .iter()
            .map(|e| (e.queue.as_ref().map(ToString::to_string), e.offered))
            .collect();
        assert_eq!(
            names,
            [
                (Some("billing".to_owned()), 2),
                (Some("sales".to_owned()), 1),
                (Some("support".to_owned()), 1),
                (None, 3),
            ]
        );
    }

    #[test]
    fn a_queue_entry_carries_the_service_figures_of_its_calls() {
        let records = [
            queued(Some("billing"), None, Some(50.0)),
            queued(Some("billing"), Some("102"), Some(10.0)),
        ];
        let entry = &entries(&records, Direction::Inbound)[0];
        assert_eq!(
            serde_json::to_value(entry).unwrap(),
            serde_json::json!({
                "queue": "billing", "offered": 2, "answered": 1, "unanswered": 1,
                "short_abandoned_calls": 0,
                "abandon_rate_percent": 50.0, "service_level_percent": 50.0,
                "answered_within_threshold": 1, "calls_with_wait": 2,
                "average_speed_of_answer_seconds": 10.0,
                "speed_of_answer_percentiles": {"p50": 10.0, "p80": 10.0, "p90": 10.0, "p95": 10.0},
                "average_handle_time_seconds": 60.0,
                "longest_wait_seconds": 50.0, "average_abandon_time_seconds": 50.0
            })
        );
    }

    #[test]
    fn the_queues_parts_add_up_to_the_summary_service_level() {
        let records = [
            queued(Some("sales"), Some("101"), Some(5.0)),
            queued(Some("sales"), Some("102"), Some(45.0)),
            queued(Some("support"), None, Some(7.0)),
            queued(Some("support"), Some("101"), Some(19.5)),
            queued(None, Some("102"), Some(1.0)),
            queued(None, Some("102"), None),
        ];
        let rows = entries(&records, Direction::Inbound);
        let r = range(DAY, DAY);
        let summary = crate::stats::call_summary(
            &r,
            Direction::Inbound,
            SlThreshold::DEFAULT,
            None,
            &CallDay::split(&r, 0, &records),
        );
        let level = summary.service_level.unwrap();
        let within: u64 = rows.iter().map(|row| row.answered_within_threshold).sum();
        let with_wait: u64 = rows.iter().map(|row| row.calls_with_wait).sum();
        assert_eq!((within, with_wait), (3, 5));
        assert_eq!(
            (within, with_wait),
            (level.answered_within_threshold, level.calls_with_wait)
        );
    }

    #[test]
    fn only_the_requested_direction_is_listed() {
        let records = [
            queued(Some("sales"), Some("101"), Some(5.0)),
            call(
                Direction::Outbound,
                Some("101"),
                "2026-11-02T11:00:00+05:00",
                9.0,
            ),
        ];
        let outbound = entries(&records, Direction::Outbound);
        assert_eq!(outbound.len(), 1);
        assert_eq!((outbound[0].queue.as_ref(), outbound[0].offered), (None, 1));
        assert_eq!(outbound[0].service_level_percent, None);
        assert!(entries(&[], Direction::Inbound).is_empty());
    }
}

/// docs/behaviour.md's worked example, per queue: the table of /calls/queues for the day of
/// the summary's example (stats/summary.rs).
#[cfg(test)]
mod worked_example {
    use super::*;
    use crate::params::SlThreshold;
    use crate::stats::summary::worked_example::example;
    use crate::testing::range;

    #[test]
    fn the_worked_example_per_queue_is_what_the_code_answers() {
        let r = range("2026-11-02", "2026-11-02");
        let days = CallDay::split(&r, 0, &example());
        let rows = queue_entries(&r, Direction::Inbound, SlThreshold::DEFAULT, &days);
        let table: Vec<serde_json::Value> = rows
            .iter()
            .map(|row| serde_json::to_value(row).unwrap())
            .collect();
        assert_eq!(
            table,
            [
                serde_json::json!({"queue": "sales", "offered": 2, "answered": 2, "unanswered": 0,
                    "short_abandoned_calls": 0,
                    "abandon_rate_percent": 0.0, "service_level_percent": 100.0,
                    "answered_within_threshold": 2, "calls_with_wait": 2,
                    "average_speed_of_answer_seconds": 12.25,
                    "speed_of_answer_percentiles": {"p50": 4.5, "p80": 20.0, "p90": 20.0, "p95": 20.0},
                    "average_handle_time_seconds": 90.0,
                    "longest_wait_seconds": 20.0, "average_abandon_time_seconds": null}),
                serde_json::json!({"queue": "support", "offered": 2, "answered": 1, "unanswered": 1,
                    "short_abandoned_calls": 0,
                    "abandon_rate_percent": 50.0, "service_level_percent": 0.0,
                    "answered_within_threshold": 0, "calls_with_wait": 2,
                    "average_speed_of_answer_seconds": 41.0,
                    "speed_of_answer_percentiles": {"p50": 41.0, "p80": 41.0, "p90": 41.0, "p95": 41.0},
                    "average_handle_time_seconds": 30.0,
                    "longest_wait_seconds": 95.25, "average_abandon_time_seconds": 95.25}),
                serde_json::json!({"queue": null, "offered": 1, "answered": 1, "unanswered": 0,
                    "short_abandoned_calls": 0,
                    "abandon_rate_percent": 0.0, "service_level_percent": null,
                    "answered_within_threshold": 0, "calls_with_wait": 0,
                    "average_speed_of_answer_seconds": null, "speed_of_answer_percentiles": null,
                    "average_handle_time_seconds": 90.0,
                    "longest_wait_seconds": null, "average_abandon_time_seconds": null}),
            ]
        );
    }
}
