//! A day's rollup: what /calls/trend needs of a day's calls, whatever threshold, short-abandon
//! bound, direction or queue it is asked with, in a few kilobytes instead of 24 bytes a call
//! (docs/architecture.md, "Trends"). A year of a busy platform is 18 million calls; its
//! rollups fit in memory and are read in one pass.
//!
//! Per direction and queue the rollup keeps the counts and sums of
//! [`ServiceTally`](crate::stats::service_level::ServiceTally) and the waits counted per whole
//! second: answered waits rounded up (a wait of at most `T` seconds is one whose rounded-up
//! second is at most `T`), unanswered waits rounded down (a wait below `N` seconds is one
//! whose rounded-down second is below `N`), each capped just past the largest threshold and
//! short-abandon bound, so any pair of them reads its counts from the same rollup.

use crate::calendar::Day;
use crate::call_day::{CallDay, DayCall, Held, HeldDay};
use crate::model::QueueName;
use crate::params::{Direction, ShortAbandon, SlThreshold};

/// The rounded-up second past every threshold: an answered wait counted here is within none.
const ANSWERED_CAP: u16 = SlThreshold::MAX_SECONDS + 1;
/// The rounded-down second from which an unanswered wait is below no short-abandon bound.
const UNANSWERED_CAP: u16 = ShortAbandon::MAX_SECONDS;

/// The rollup of one held day: its calls summed per direction and queue.
#[derive(Debug, Clone, PartialEq)]
pub struct DayRollup {
    day: Day,
    fetched_at_ms: i64,
    held: Held,
    /// By direction, then queue (`None` first, then by name).
    groups: Vec<RollupGroup>,
}

/// The calls of one direction and queue of a day, summed.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupGroup {
    pub direction: Direction,
    pub queue: Option<QueueName>,
    /// Every call.
    pub offered: u64,
    /// The calls an agent answered.
    pub answered: u64,
    /// The answered calls' durations, added in the day's order.
    pub answered_duration_sum: f64,
    /// The answered calls with a wait, and their waits added in the day's order.
    pub answered_with_wait: u64,
    pub answered_wait_sum: f64,
    /// The longest wait of a call with one.
    pub longest_wait: Option<f64>,
    /// The waits per whole second, by second ascending.
    pub waits: Vec<WaitSecond>,
}

/// The calls whose wait falls on one whole second (see the module's comment for the rounding).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitSecond {
    pub second: u16,
    /// Answered calls whose wait, rounded up, is this second (the cap: above every threshold).
    pub answered: u32,
    /// Unanswered calls whose wait, rounded down, is this second (the cap: at least every
    /// short-abandon bound).
    pub unanswered: u32,
    /// Those unanswered calls' waits, added in the day's order.
    pub unanswered_wait_sum: f64,
}

impl DayRollup {
    /// The rollup of `day`'s calls.
    #[must_use]
    pub fn of(day: &CallDay) -> Self {
        let mut groups: Vec<RollupGroup> = Vec::new();
        for call in day.calls() {
            let queue = day.queue_of(*call);
            let found = groups.iter().position(|group| {
                group.direction == call.direction() && group.queue.as_ref() == queue
            });
            let index = found.unwrap_or_else(|| {
                groups.push(RollupGroup::new(call.direction(), queue.cloned()));
                groups.len() - 1
            });
            if let Some(group) = groups.get_mut(index) {
                group.add(*call);
            }
        }
        groups.sort_by(|a, b| {
            (a.direction == Direction::Outbound, &a.queue)
                .cmp(&(b.direction == Direction::Outbound, &b.queue))
        });
        Self {
            day: day.day(),
            fetched_at_ms: day.fetched_at_ms(),
            held: day.held(),
            groups,
        }
    }

    /// The groups of `direction` (of `queue` only, when given).
    pub fn groups<'a>(
        &'a self,
        direction: Direction,
        queue: Option<&'a QueueName>,
    ) -> impl Iterator<Item = &'a RollupGroup> + 'a {
        self.groups.iter().filter(move |group| {
            group.direction == direction
                && queue.is_none_or(|queue| group.queue.as_ref() == Some(queue))
        })
    }

    /// Every group.
    #[must_use]
    pub fn all_groups(&self) -> &[RollupGroup] {
        &self.groups
    }

    /// The rollup's size in memory, roughly: what a cache of rollups weighs it by.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        size_of::<Self>().saturating_add(
            self.groups
                .iter()
                .map(|group| {
                    size_of::<RollupGroup>()
                        + group.waits.len() * size_of::<WaitSecond>()
                        + group.queue.as_ref().map_or(0, |queue| queue.as_str().len())
                })
                .sum(),
        )
    }
}

impl HeldDay for DayRollup {
    fn day(&self) -> Day {
        self.day
    }

    fn fetched_at_ms(&self) -> i64 {
        self.fetched_at_ms
    }

    fn held(&self) -> Held {
        self.held
    }
}

impl RollupGroup {
    const fn new(direction: Direction, queue: Option<QueueName>) -> Self {
        Self {
            direction,
            queue,
            offered: 0,
            answered: 0,
            answered_duration_sum: 0.0,
            answered_with_wait: 0,
            answered_wait_sum: 0.0,
            longest_wait: None,
            waits: Vec::new(),
        }
    }

    fn add(&mut self, call: DayCall) {
        self.offered += 1;
        let wait = call.wait_seconds();
        if let Some(wait) = wait {
            self.longest_wait = Some(self.longest_wait.map_or(wait, |longest| longest.max(wait)));
        }
        if call.answered() {
            self.answered += 1;
            self.answered_duration_sum += call.duration_seconds();
            if let Some(wait) = wait {
                self.answered_with_wait += 1;
                self.answered_wait_sum += wait;
                self.count(whole_second(wait.ceil(), ANSWERED_CAP), |entry| {
                    entry.answered += 1;
                });
            }
        } else if let Some(wait) = wait {
            self.count(whole_second(wait.floor(), UNANSWERED_CAP), |entry| {
                entry.unanswered += 1;
                entry.unanswered_wait_sum += wait;
            });
        }
    }

    /// Counts a call in the entry of `second`, made when missing.
    fn count(&mut self, second: u16, add: impl FnOnce(&mut WaitSecond)) {
        let index = self
            .waits
            .binary_search_by_key(&second, |entry| entry.second)
            .unwrap_or_else(|index| {
                self.waits.insert(
                    index,
                    WaitSecond {
                        second,
                        answered: 0,
                        unanswered: 0,
                        unanswered_wait_sum: 0.0,
                    },
                );
                index
            });
        if let Some(entry) = self.waits.get_mut(index) {
            add(entry);
        }
    }
}

/// A whole number of seconds (a wait rounded already, at least 0) as a second of the rollup,
/// at most `cap`: the least second not below it.
fn whole_second(rounded: f64, cap: u16) -> u16 {
    let (mut low, mut high) = (0, cap);
    while low < high {
        let middle = low + (high - low) / 2;
        if f64::from(middle) >= rounded {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    low
}

impl AsRef<Self> for DayRollup {
    fn as_ref(&self) -> &Self {
        self
    }
}
