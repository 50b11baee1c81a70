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
use crate::call_day::{CallDay, DayCall, Held, held_day_from_fields};
use crate::model::QueueName;
use crate::params::{Direction, ShortAbandon, SlThreshold};
use crate::stats::service_level::CallCounts;

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
    /// Its counts and sums, added in the day's order.
    pub counts: CallCounts,
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
        // A group's place in `groups`, by direction and queue (0 none, else 1 + its index in
        // the day's table): one look-up a call, however many queues the day has.
        let per_direction = day.queues().len().saturating_add(1);
        let mut places: Vec<Option<usize>> = vec![None; per_direction.saturating_mul(2)];
        let mut groups: Vec<RollupGroup> = Vec::new();
        for call in day.calls() {
            let queue = call
                .queue_index()
                .and_then(|index| usize::try_from(index).ok())
                .map_or(0, |index| index.saturating_add(1));
            let outbound = usize::from(call.direction() == Direction::Outbound);
            let Some(place) = places.get_mut(outbound.saturating_mul(per_direction) + queue) else {
                continue;
            };
            let index = *place.get_or_insert_with(|| {
                groups.push(RollupGroup::new(
                    call.direction(),
                    day.queue_of(*call).cloned(),
                ));
                groups.len().saturating_sub(1)
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

    /// A rollup from what [`DayRollup::of`] made of a day, as an encoding outside the process
    /// kept it: `groups` by direction, then queue (`None` first, then by name).
    #[must_use]
    pub const fn from_parts(
        day: Day,
        fetched_at_ms: i64,
        held: Held,
        groups: Vec<RollupGroup>,
    ) -> Self {
        Self {
            day,
            fetched_at_ms,
            held,
            groups,
        }
    }
}

held_day_from_fields!(DayRollup);

impl RollupGroup {
    fn new(direction: Direction, queue: Option<QueueName>) -> Self {
        Self {
            direction,
            queue,
            counts: CallCounts::default(),
            waits: Vec::new(),
        }
    }

    fn add(&mut self, call: DayCall) {
        let Some(wait) = self.counts.add(call) else {
            return;
        };
        if call.answered() {
            self.count(whole_second(wait.ceil(), ANSWERED_CAP), |entry| {
                entry.answered += 1;
            });
        } else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calendar::DateRange;
    use crate::testing::{CallExt, call, day};

    fn sample() -> CallDay {
        let range = DateRange::day(day("2026-11-02"));
        let records = [
            call(Direction::Inbound, Some("101"), "2026-11-02 09:00", 60.0)
                .waited(19.2)
                .queued("sales"),
            call(Direction::Inbound, Some("102"), "2026-11-02 09:10", 30.0)
                .waited(20.0)
                .queued("sales"),
            call(Direction::Inbound, None, "2026-11-02 09:20", 0.0).waited(4.99),
            call(Direction::Inbound, None, "2026-11-02 09:30", 0.0).waited(700.0),
            call(Direction::Inbound, Some("101"), "2026-11-02 09:40", 10.0).waited(5000.0),
            call(Direction::Inbound, None, "2026-11-02 09:50", 0.0),
            call(Direction::Outbound, Some("101"), "2026-11-02 10:00", 45.0),
        ];
        CallDay::split(&range, 1_790_000_000_123, &records)
            .pop()
            .unwrap()
    }

    #[test]
    fn waits_are_counted_per_second_rounded_to_keep_each_bound_exact() {
        let rollup = DayRollup::of(&sample());
        let groups: Vec<_> = rollup
            .all_groups()
            .iter()
            .map(|g| {
                (
                    g.direction,
                    g.queue.as_ref().map(QueueName::as_str),
                    g.counts.offered,
                )
            })
            .collect();
        assert_eq!(
            groups,
            [
                (Direction::Inbound, None, 4),
                (Direction::Inbound, Some("sales"), 2),
                (Direction::Outbound, None, 1),
            ]
        );
        let no_queue = &rollup.all_groups()[0];
        // 4.99 rounds down to 4 (below a bound of 5), 700 to the cap 600 (below none); the
        // answered 5,000 s up to the cap 3601 (within no threshold).
        let waits: Vec<_> = no_queue
            .waits
            .iter()
            .map(|w| (w.second, w.answered, w.unanswered))
            .collect();
        assert_eq!(waits, [(4, 0, 1), (600, 0, 1), (3601, 1, 0)]);
        let sales = &rollup.all_groups()[1];
        // 19.2 rounds up to 20 (within 20), 20.0 stays 20.
        let waits: Vec<_> = sales.waits.iter().map(|w| (w.second, w.answered)).collect();
        assert_eq!(waits, [(20, 2)]);
        assert_eq!(
            (sales.counts.answered_with_wait, sales.counts.longest_wait),
            (2, Some(20.0))
        );
    }
}
