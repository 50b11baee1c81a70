//! The service figures of a set of calls: abandonment, service level, speed of answer, longest
//! wait and handle time, each a pure function named after its figure over a [`ServiceTally`]
//! of the calls. Each figure is defined once, on its field of the answer that states it
//! (`callstats-api`); the OpenAPI document and docs/behaviour.md take the definition from there.
//!
//! A tally is the one pass over the calls that every figure reads: /calls/summary tallies the
//! period's calls of a direction (and queue), /calls/queues one tally per queue, an interval
//! row the calls of its interval. The same calls in the same order give the same figures, to
//! the last bit, whichever endpoint asks.

use crate::call_day::{CallDay, DayCall};
use crate::model::{QueueName, ServiceLevel, SpeedOfAnswerPercentiles};
use crate::params::{Direction, ServiceRules};
use crate::rollup::RollupGroup;
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

/// What a set of calls sums whatever rules measure it: what a day's rollup keeps per direction
/// and queue, and the part of a [`ServiceTally`] that no rule changes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CallCounts {
    /// Every call.
    pub offered: u64,
    /// The calls an agent answered.
    pub answered: u64,
    /// The answered calls' durations, added in the calls' order.
    pub answered_duration_sum: f64,
    /// The answered calls with a wait, and their waits added in the calls' order.
    pub answered_with_wait: u64,
    pub answered_wait_sum: f64,
    /// The longest wait of a call with one.
    pub longest_wait: Option<f64>,
}

impl CallCounts {
    /// Counts one call, and gives its wait when it has one.
    pub fn add(&mut self, call: DayCall) -> Option<f64> {
        self.offered += 1;
        let wait = call.wait_seconds();
        if let Some(wait) = wait {
            self.longest_wait = Some(longer(self.longest_wait, wait));
        }
        if call.answered() {
            self.answered += 1;
            self.answered_duration_sum += call.duration_seconds();
            if let Some(wait) = wait {
                self.answered_with_wait += 1;
                self.answered_wait_sum += wait;
            }
        }
        wait
    }

    /// Adds `other`'s counts and sums, and its longest wait.
    pub fn add_counts(&mut self, other: &Self) {
        self.offered += other.offered;
        self.answered += other.answered;
        self.answered_duration_sum += other.answered_duration_sum;
        self.answered_with_wait += other.answered_with_wait;
        self.answered_wait_sum += other.answered_wait_sum;
        if let Some(wait) = other.longest_wait {
            self.longest_wait = Some(longer(self.longest_wait, wait));
        }
    }
}

/// What the service figures need of a set of calls, added one call at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceTally {
    rules: ServiceRules,
    counts: CallCounts,
    /// Unanswered calls whose known wait is below the short-abandon bound.
    short_abandoned: u64,
    /// Calls with a wait time, answered or not, short abandons left out.
    calls_with_wait: u64,
    /// Answered calls with a wait time of at most the threshold.
    answered_within_threshold: u64,
    /// The answered calls' waits, for their percentiles; `None` once a rollup is added (it
    /// keeps none).
    answered_waits: Option<Vec<f64>>,
    /// Unanswered calls with a wait time that are not short abandons, and the sum of their
    /// waits.
    abandoned_with_wait: u64,
    abandoned_wait_sum: f64,
}

impl ServiceTally {
    /// An empty tally measured by `rules` (a bare threshold: no short abandons).
    #[must_use]
    pub fn new(rules: impl Into<ServiceRules>) -> Self {
        Self {
            rules: rules.into(),
            counts: CallCounts::default(),
            short_abandoned: 0,
            calls_with_wait: 0,
            answered_within_threshold: 0,
            answered_waits: Some(Vec::new()),
            abandoned_with_wait: 0,
            abandoned_wait_sum: 0.0,
        }
    }

    /// Counts one call.
    pub fn add(&mut self, call: DayCall) {
        let Some(wait) = self.counts.add(call) else {
            return;
        };
        if call.answered() {
            self.calls_with_wait += 1;
            if let Some(waits) = &mut self.answered_waits {
                waits.push(wait);
            }
            if wait <= f64::from(self.rules.sl_threshold.get()) {
                self.answered_within_threshold += 1;
            }
        } else if self.rules.short_abandon.is_short(wait) {
            self.short_abandoned += 1;
        } else {
            self.calls_with_wait += 1;
            self.abandoned_with_wait += 1;
            self.abandoned_wait_sum += wait;
        }
    }

    /// Counts the calls of a day's rollup group, as [`ServiceTally::add`] would count them one
    /// by one, but for their waits: a rollup keeps none, so the percentiles are then unknown
    /// (null). The sums are the group's day sums, added in turn.
    pub fn add_group(&mut self, group: &RollupGroup) {
        self.counts.add_counts(&group.counts);
        self.calls_with_wait += group.counts.answered_with_wait;
        self.answered_waits = None;
        let threshold = self.rules.sl_threshold.get();
        let short = self.rules.short_abandon.get();
        for entry in &group.waits {
            if entry.second <= threshold {
                self.answered_within_threshold += u64::from(entry.answered);
            }
            if entry.second < short {
                self.short_abandoned += u64::from(entry.unanswered);
            } else {
                self.calls_with_wait += u64::from(entry.unanswered);
                self.abandoned_with_wait += u64::from(entry.unanswered);
                self.abandoned_wait_sum += entry.unanswered_wait_sum;
            }
        }
    }

    /// What the tally is measured by.
    #[must_use]
    pub const fn rules(&self) -> ServiceRules {
        self.rules
    }

    /// Unanswered calls whose known wait is below the short-abandon bound (0 without one).
    #[must_use]
    pub const fn short_abandoned(&self) -> u64 {
        self.short_abandoned
    }

    /// Calls offered: every call of the tally.
    #[must_use]
    pub const fn offered(&self) -> u64 {
        self.counts.offered
    }

    /// Calls an agent answered.
    #[must_use]
    pub const fn answered(&self) -> u64 {
        self.counts.answered
    }

    /// Calls no agent answered (abandoned).
    #[must_use]
    pub const fn unanswered(&self) -> u64 {
        self.counts.offered.saturating_sub(self.counts.answered)
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

/// `abandon_rate_percent` of /calls/summary over the tally: short abandons leave both counts.
#[must_use]
pub fn abandon_rate_percent(tally: &ServiceTally) -> Option<f64> {
    percent(
        tally.unanswered().saturating_sub(tally.short_abandoned),
        tally.counts.offered.saturating_sub(tally.short_abandoned),
    )
}

/// `service_level` of /calls/summary over the tally, against its threshold.
#[must_use]
pub fn service_level(tally: &ServiceTally) -> Option<ServiceLevel> {
    Some(ServiceLevel {
        threshold_seconds: tally.rules.sl_threshold.get(),
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

/// `average_speed_of_answer_seconds` of /calls/summary over the tally.
#[must_use]
pub fn average_speed_of_answer_seconds(tally: &ServiceTally) -> Option<f64> {
    mean_wait(
        tally,
        tally.counts.answered_wait_sum,
        tally.counts.answered_with_wait,
    )
}

/// `speed_of_answer_percentiles` of /calls/summary over the tally: each the nearest-rank
/// percentile of the answered calls' waits (sorted ascending, the wait at 1-based position
/// ⌈p/100 × n⌉), rounded; null when no answered call has a wait (or the tally holds rollups,
/// which keep no waits).
#[must_use]
pub fn speed_of_answer_percentiles(tally: &ServiceTally) -> Option<SpeedOfAnswerPercentiles> {
    let mut waits = tally.answered_waits.clone()?;
    waits.sort_by(f64::total_cmp);
    let n = waits.len();
    let at = |p: usize| {
        // ⌈p × n / 100⌉, at least 1; n is at most a few million, so p × n cannot overflow.
        let rank = p.saturating_mul(n).div_ceil(100).max(1);
        waits.get(rank.saturating_sub(1)).copied().map(round2)
    };
    Some(SpeedOfAnswerPercentiles {
        p50: at(50)?,
        p80: at(80)?,
        p90: at(90)?,
        p95: at(95)?,
    })
}

/// `average_abandon_time_seconds` of /calls/summary over the tally.
#[must_use]
pub fn average_abandon_time_seconds(tally: &ServiceTally) -> Option<f64> {
    mean_wait(tally, tally.abandoned_wait_sum, tally.abandoned_with_wait)
}

/// `longest_wait_seconds` of /calls/summary over the tally.
#[must_use]
pub fn longest_wait_seconds(tally: &ServiceTally) -> Option<f64> {
    tally.counts.longest_wait.map(round2)
}

/// `average_handle_time_seconds` of /calls/summary over the tally.
#[must_use]
pub fn average_handle_time_seconds(tally: &ServiceTally) -> Option<f64> {
    mean(tally.counts.answered_duration_sum, tally.counts.answered).map(round2)
}

/// The longer of a longest wait so far (none before the first) and `wait`.
pub(crate) fn longer(longest: Option<f64>, wait: f64) -> f64 {
    longest.map_or(wait, |longest| longest.max(wait))
}

/// 100 × part / whole, rounded; null when whole is 0.
fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| round2(100.0 * count_f64(part) / count_f64(whole)))
}

/// The mean of `count` of the tally's waits summing to `sum`, rounded, at most its longest wait;
/// null when count is 0.
fn mean_wait(tally: &ServiceTally, sum: f64, count: u64) -> Option<f64> {
    let mean = mean(sum, count)?;
    // A mean is never above the largest of its terms; the float sum's last bit could put it
    // there, and the figure would then exceed `longest_wait_seconds`.
    Some(round2(
        tally
            .counts
            .longest_wait
            .map_or(mean, |longest| mean.min(longest)),
    ))
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
    use crate::params::{ShortAbandon, SlThreshold};

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

    /// The tally of `calls` measured by `rules`.
    fn tally_by(rules: impl Into<ServiceRules>, calls: &[DayCall]) -> ServiceTally {
        let mut tally = ServiceTally::new(rules);
        for call in calls {
            tally.add(*call);
        }
        tally
    }

    fn tally(seconds: u16, calls: &[DayCall]) -> ServiceTally {
        tally_by(threshold(seconds), calls)
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

    fn with_short(seconds: u16, calls: &[DayCall]) -> ServiceTally {
        let rules = ServiceRules {
            sl_threshold: threshold(20),
            short_abandon: ShortAbandon::seconds(seconds).unwrap(),
        };
        tally_by(rules, calls)
    }

    #[test]
    fn short_abandons_leave_the_abandon_rate_and_the_service_level_but_not_the_counts() {
        let calls = [
            inbound(true, Some(10.0), 60.0),
            inbound(true, Some(30.0), 60.0),
            inbound(false, Some(4.0), 0.0), // short: below 5 s
            inbound(false, Some(5.0), 0.0), // not short: the bound is strict
            inbound(false, None, 0.0),      // no wait: never short
        ];
        let short = with_short(5, &calls);
        assert_eq!((short.offered(), short.unanswered()), (5, 3));
        assert_eq!(short.short_abandoned(), 1);
        // (3 − 1) / (5 − 1)
        assert_eq!(abandon_rate_percent(&short), Some(50.0));
        let level = service_level(&short).unwrap();
        assert_eq!(
            (level.answered_within_threshold, level.calls_with_wait),
            (1, 3)
        );
        assert_eq!(average_abandon_time_seconds(&short), Some(5.0));
        // With 0 every figure is as before: no wait is below 0.
        let plain = with_short(0, &calls);
        assert_eq!(plain, tally(20, &calls));
        assert_eq!(plain.short_abandoned(), 0);
        assert_eq!(abandon_rate_percent(&plain), Some(60.0));
        assert_eq!(service_level(&plain).unwrap().calls_with_wait, 4);
        assert_eq!(average_abandon_time_seconds(&plain), Some(4.5));
    }

    #[test]
    fn a_period_of_short_abandons_only_has_no_abandon_rate() {
        let tally = with_short(10, &[inbound(false, Some(1.0), 0.0)]);
        assert_eq!(abandon_rate_percent(&tally), None);
        assert_eq!(service_level(&tally), None);
        assert_eq!(average_abandon_time_seconds(&tally), None);
    }

    #[test]
    fn percentiles_are_the_nearest_rank_of_the_answered_waits() {
        // Waits 1 to 20: p50 is the 10th, p80 the 16th, p90 the 18th, p95 the 19th.
        let calls: Vec<DayCall> = (1..=20)
            .rev()
            .map(|wait| inbound(true, Some(f64::from(wait)), 60.0))
            .chain([inbound(false, Some(500.0), 0.0), inbound(true, None, 60.0)])
            .collect();
        let p = speed_of_answer_percentiles(&tally(20, &calls)).unwrap();
        assert_eq!((p.p50, p.p80, p.p90, p.p95), (10.0, 16.0, 18.0, 19.0));
        // One wait: every percentile is it; three: ⌈0.5 × 3⌉ = 2nd, ⌈0.8 × 3⌉ = 3rd.
        let one = speed_of_answer_percentiles(&tally(20, &[inbound(true, Some(7.125), 1.0)]));
        assert_eq!(one.map(|p| (p.p50, p.p95)), Some((7.13, 7.13)));
        let three = [1.0, 2.0, 3.0].map(|w| inbound(true, Some(w), 1.0));
        let p = speed_of_answer_percentiles(&tally(20, &three)).unwrap();
        assert_eq!((p.p50, p.p80, p.p90, p.p95), (2.0, 3.0, 3.0, 3.0));
        assert_eq!(
            speed_of_answer_percentiles(&tally(20, &[inbound(false, Some(3.0), 0.0)])),
            None
        );
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
