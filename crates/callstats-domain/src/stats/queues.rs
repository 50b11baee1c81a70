//! /calls/queues: the service figures of each queue, the same computation as /calls/summary's
//! over one queue's calls.

use std::collections::HashMap;

use crate::calendar::DateRange;
use crate::call_day::CallDay;
use crate::model::QueueName;
use crate::params::{Direction, ServiceRules};
use crate::stats::freshness::Measurement;
use crate::stats::service_level::{ServiceTally, offered_calls};

/// /calls/queues measured: the period (every queue's calls: no `queue`), and each queue's
/// tally, from which the answer's rows read their figures (`callstats-api` writes them).
#[derive(Debug, Clone, PartialEq)]
pub struct Queues {
    pub measurement: Measurement,
    /// One per queue with a call of the direction in the period: by offered descending, then
    /// name (byte-wise); the calls without a queue last.
    pub queues: Vec<QueueTally>,
}

/// One queue's calls of the period, tallied; `queue` is `None` for the calls without one.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueTally {
    pub queue: Option<QueueName>,
    pub tally: ServiceTally,
}

/// The queues of `range` with a call of `direction`, their figures measured by `rules`.
#[must_use]
pub fn queues_response<D: AsRef<CallDay>>(
    range: &DateRange,
    direction: Direction,
    rules: impl Into<ServiceRules>,
    days: &[D],
) -> Queues {
    let rules = rules.into();
    Queues {
        measurement: Measurement::of(range, direction, rules, None, days),
        queues: queue_entries(range, direction, rules, days),
    }
}

/// One tally per queue with a call of `direction` in `range`, figures measured against
/// `rules`; the calls without a queue form one entry with `queue: None`, listed last; the
/// others by offered descending, then name (byte-wise).
///
/// Each queue's calls are tallied in the order of the days and of the calls within each day,
/// as /calls/summary with that `queue` tallies them, so an entry's figures are that summary's
/// to the last bit.
#[must_use]
pub fn queue_entries<D: AsRef<CallDay>>(
    range: &DateRange,
    direction: Direction,
    rules: impl Into<ServiceRules>,
    days: &[D],
) -> Vec<QueueTally> {
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
    let mut entries: Vec<QueueTally> = tallies
        .into_iter()
        .filter(|(_, tally)| tally.offered() > 0)
        .map(|(queue, tally)| QueueTally {
            queue: queue.cloned(),
            tally,
        })
        .collect();
    entries.sort_by(|a, b| {
        a.queue
            .is_none()
            .cmp(&b.queue.is_none())
            .then_with(|| b.tally.offered().cmp(&a.tally.offered()))
            .then_with(|| a.queue.cmp(&b.queue))
    });
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CallRecord;
    use crate::params::SlThreshold;
    use crate::stats::service_level::{service_level, service_level_percent};
    use crate::testing::{call, range};

    const DAY: &str = "2026-11-02";

    fn queued(queue: Option<&str>, agent: Option<&str>, wait: Option<f64>) -> CallRecord {
        let mut record = call(Direction::Inbound, agent, "2026-11-02T10:00:00+05:00", 60.0);
        record.wait_seconds = wait;
        record.queue = queue.map(|q| QueueName::new(q).unwrap());
        record
    }

    fn entries(records: &[CallRecord], direction: Direction) -> Vec<QueueTally> {
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
            .map(|e| (e.queue.as_ref().map(ToString::to_string), e.tally.offered()))
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
        let level = service_level(&summary.tally).unwrap();
        let within: u64 = rows
            .iter()
            .map(|row| row.tally.answered_within_threshold())
            .sum();
        let with_wait: u64 = rows.iter().map(|row| row.tally.calls_with_wait()).sum();
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
        assert_eq!(
            (outbound[0].queue.as_ref(), outbound[0].tally.offered()),
            (None, 1)
        );
        assert_eq!(service_level_percent(&outbound[0].tally), None);
        assert!(entries(&[], Direction::Inbound).is_empty());
    }
}
