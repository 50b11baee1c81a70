//! The service figures of a set of calls: abandonment, service level, speed of answer, longest
//! wait and handle time, each a pure function named after its figure over a [`ServiceTally`]
//! of the calls. Each figure is defined once, on its field of [`CallSummary`]; the OpenAPI
//! document and docs/behaviour.md take the definition from there.
//!
//! A tally is the one pass over the calls that every figure reads: /calls/summary tallies the
//! period's calls of a direction (and queue), /calls/queues one tally per queue, an interval
//! row the calls of its interval. The same calls in the same order give the same figures, to
//! the last bit, whichever endpoint asks.

use crate::call_day::{CallDay, DayCall};
#[cfg(doc)]
use crate::model::CallSummary;
use crate::model::{QueueName, ServiceLevel};
use crate::params::{Direction, SlThreshold};
use crate::stats::round::round2;

/// The calls of `day` that a figure over `direction` (and `queue`, when one is asked) counts,
/// in the day's order. A queue is matched exactly (case-sensitive); a day without a call of
/// it gives none.
pub fn offered_calls<'a>(
    day: &'a CallDay,
    direction: Direction,
    queue: Option<&QueueName>,
) -> impl Iterator<Item = DayCall> + 'a {
    // `None` inside: the queue asked for has no call this day.
    let wanted: Option<Option<u32>> = queue.map(|queue| day.queue_index(queue));
    let skip_day = matches!(wanted, Some(None));
    day.calls().iter().copied().filter(move |call| {
        !skip_day
            && call.direction() == direction
            && wanted.is_none_or(|index| call.queue_index() == index)
    })
}

/// What the service figures need of a set of calls, added one call at a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceTally {
    threshold: SlThreshold,
    /// Calls offered (every call added).
    offered: u64,
    /// Calls an agent answered.
    answered: u64,
    /// Calls with a wait time, answered or not.
    calls_with_wait: u64,
    /// Answered calls with a wait time of at most the threshold.
    answered_within_threshold: u64,
    /// Answered calls with a wait time, and the sum of their waits.
    answered_with_wait: u64,
    answered_wait_sum: f64,
    /// The longest wait among the calls with one; `None` before the first.
    longest_wait: Option<f64>,
    /// The sum of the answered calls' durations.
    answered_duration_sum: f64,
}

impl ServiceTally {
    /// An empty tally that measures the service level against `threshold`.
    #[must_use]
    pub const fn new(threshold: SlThreshold) -> Self {
        Self {
            threshold,
            offered: 0,
            answered: 0,
            calls_with_wait: 0,
            answered_within_threshold: 0,
            answered_with_wait: 0,
            answered_wait_sum: 0.0,
            longest_wait: None,
            answered_duration_sum: 0.0,
        }
    }

    /// Counts one call.
    pub fn add(&mut self, call: DayCall) {
        self.offered += 1;
        let wait = call.wait_seconds();
        if let Some(wait) = wait {
            self.calls_with_wait += 1;
            self.longest_wait = Some(self.longest_wait.map_or(wait, |longest| longest.max(wait)));
        }
        if call.answered() {
            self.answered += 1;
            self.answered_duration_sum += call.duration_seconds();
            if let Some(wait) = wait {
                self.answered_with_wait += 1;
                self.answered_wait_sum += wait;
                if wait <= f64::from(self.threshold.get()) {
                    self.answered_within_threshold += 1;
                }
            }
        }
    }

    #[must_use]
    pub const fn threshold(&self) -> SlThreshold {
        self.threshold
    }

    /// Calls offered: every call of the tally.
    #[must_use]
    pub const fn offered(&self) -> u64 {
        self.offered
    }

    /// Calls an agent answered.
    #[must_use]
    pub const fn answered(&self) -> u64 {
        self.answered
    }

    /// Calls no agent answered (abandoned).
    #[must_use]
    pub const fn unanswered(&self) -> u64 {
        self.offered.saturating_sub(self.answered)
    }

    /// [`ServiceLevel::answered_within_threshold`], 0 when no call has a wait.
    #[must_use]
    pub const fn answered_within_threshold(&self) -> u64 {
        self.answered_within_threshold
    }

    /// [`ServiceLevel::calls_with_wait`], 0 when no call has a wait.
    #[must_use]
    pub const fn calls_with_wait(&self) -> u64 {
        self.calls_with_wait
    }
}

/// [`CallSummary::abandon_rate_percent`] of the tally.
#[must_use]
pub fn abandon_rate_percent(tally: &ServiceTally) -> Option<f64> {
    percent(tally.unanswered(), tally.offered)
}

/// [`CallSummary::service_level`] of the tally, against its threshold.
#[must_use]
pub fn service_level(tally: &ServiceTally) -> Option<ServiceLevel> {
    Some(ServiceLevel {
        threshold_seconds: tally.threshold.get(),
        answered_within_threshold: tally.answered_within_threshold,
        calls_with_wait: tally.calls_with_wait,
        percent: percent(tally.answered_within_threshold, tally.calls_with_wait)?,
    })
}

/// `service_level_percent` of a queue or an interval row: [`service_level`]'s percent.
#[must_use]
pub fn service_level_percent(tally: &ServiceTally) -> Option<f64> {
    service_level(tally).map(|level| level.percent)
}

/// [`CallSummary::average_speed_of_answer_seconds`] of the tally.
#[must_use]
pub fn average_speed_of_answer_seconds(tally: &ServiceTally) -> Option<f64> {
    let mean = mean(tally.answered_wait_sum, tally.answered_with_wait)?;
    // A mean is never above the largest of its terms; the float sum's last bit could put it
    // there, and the figure would then exceed `longest_wait_seconds`.
    Some(round2(
        tally.longest_wait.map_or(mean, |longest| mean.min(longest)),
    ))
}

/// [`CallSummary::longest_wait_seconds`] of the tally.
#[must_use]
pub fn longest_wait_seconds(tally: &ServiceTally) -> Option<f64> {
    tally.longest_wait.map(round2)
}

/// [`CallSummary::average_handle_time_seconds`] of the tally.
#[must_use]
pub fn average_handle_time_seconds(tally: &ServiceTally) -> Option<f64> {
    mean(tally.answered_duration_sum, tally.answered).map(round2)
}

/// 100 × part / whole, rounded; null when whole is 0.
fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| round2(100.0 * count_f64(part) / count_f64(whole)))
}

/// sum / count, unrounded; null when count is 0.
fn mean(sum: f64, count: u64) -> Option<f64> {
    (count > 0).then(|| sum / count_f64(count))
}

/// A count as a float; counts of calls are far below 2^32, so this is exact.
fn count_f64(n: u64) -> f64 {
    u32::try_from(n).map_or_else(|_| f64::from(u32::MAX), f64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threshold(seconds: u16) -> SlThreshold {
        SlThreshold::seconds(seconds).unwrap()
    }

    /// An inbound call: answered (by agent 0) or not, with a wait or not.
    fn inbound(answered: bool, wait: Option<f64>, duration: f64) -> DayCall {
        DayCall::new(0, Direction::Inbound, answered.then_some(0), duration)
            .unwrap()
            .with_wait(wait)
            .unwrap()
    }

    fn tally(seconds: u16, calls: &[DayCall]) -> ServiceTally {
        let mut tally = ServiceTally::new(threshold(seconds));
        for call in calls {
            tally.add(*call);
        }
        tally
    }

    #[test]
    fn abandon_rate_is_unanswered_over_offered_and_null_without_calls() {
        let calls = [
            inbound(true, None, 10.0),
            inbound(true, None, 10.0),
            inbound(false, None, 0.0),
        ];
        assert_eq!(abandon_rate_percent(&tally(20, &calls)), Some(33.33));
        assert_eq!(abandon_rate_percent(&tally(20, &[])), None);
    }

    #[test]
    fn service_level_counts_answered_calls_within_the_threshold_over_calls_with_a_wait() {
        let calls = [
            inbound(true, Some(20.0), 60.0), // within: the threshold is inclusive
            inbound(true, Some(20.01), 60.0),
            inbound(true, None, 60.0),      // no wait: outside both counts
            inbound(false, Some(3.0), 0.0), // abandoned quickly: still against the level
        ];
        let level = service_level(&tally(20, &calls)).unwrap();
        assert_eq!(
            level,
            ServiceLevel {
                threshold_seconds: 20,
                answered_within_threshold: 1,
                calls_with_wait: 3,
                percent: 33.33,
            }
        );
        assert_eq!(service_level_percent(&tally(21, &calls)), Some(66.67));
    }

    #[test]
    fn service_figures_are_null_when_no_call_has_a_wait() {
        let calls = [inbound(true, None, 60.0), inbound(false, None, 0.0)];
        let tally = tally(20, &calls);
        assert_eq!(service_level(&tally), None);
        assert_eq!(average_speed_of_answer_seconds(&tally), None);
        assert_eq!(longest_wait_seconds(&tally), None);
        assert_eq!(average_handle_time_seconds(&tally), Some(60.0));
        assert_eq!(abandon_rate_percent(&tally), Some(50.0));
    }

    #[test]
    fn speed_of_answer_is_the_mean_wait_of_answered_calls_with_one() {
        let calls = [
            inbound(true, Some(10.0), 60.0),
            inbound(true, Some(25.0), 60.0),
            inbound(true, None, 60.0),
            inbound(false, Some(90.0), 0.0),
        ];
        assert_eq!(
            average_speed_of_answer_seconds(&tally(20, &calls)),
            Some(17.5)
        );
        let abandoned_only = tally(20, &[inbound(false, Some(90.0), 0.0)]);
        assert_eq!(average_speed_of_answer_seconds(&abandoned_only), None);
    }

    #[test]
    fn longest_wait_counts_abandoned_calls_too() {
        let calls = [
            inbound(true, Some(10.0), 60.0),
            inbound(false, Some(90.5), 0.0),
        ];
        assert_eq!(longest_wait_seconds(&tally(20, &calls)), Some(90.5));
    }

    #[test]
    fn handle_time_is_the_mean_duration_of_answered_calls_and_null_without_them() {
        let calls = [
            inbound(true, None, 100.0),
            inbound(true, Some(5.0), 50.5),
            inbound(false, Some(40.0), 40.0),
        ];
        assert_eq!(average_handle_time_seconds(&tally(20, &calls)), Some(75.25));
        let none_answered = tally(20, &[inbound(false, Some(40.0), 40.0)]);
        assert_eq!(average_handle_time_seconds(&none_answered), None);
    }

    #[test]
    fn figures_round_to_two_decimals() {
        let calls = [
            inbound(true, Some(1.0), 1.0),
            inbound(true, Some(1.0), 1.0),
            inbound(true, Some(2.0), 2.0),
        ];
        let tally = tally(1, &calls);
        assert_eq!(average_speed_of_answer_seconds(&tally), Some(1.33));
        assert_eq!(average_handle_time_seconds(&tally), Some(1.33));
        assert_eq!(service_level_percent(&tally), Some(66.67));
    }
}
