//! The versioned encoding of a [`DayRollup`], kept in the database beside its day: a trend over
//! days held there reads a few kilobytes a day instead of the day. Bytes that are not this
//! version, do not decode, or hold another day read as `None`: a miss, never an error.

use callstats_domain::calendar::Day;
use callstats_domain::call_day::HeldDay as _;
use callstats_domain::identifiers::QueueName;
use callstats_domain::params::Direction;
use callstats_domain::rollup::{DayRollup, RollupGroup, WaitSecond};
use callstats_domain::stats::service_level::CallCounts;
use serde::{Deserialize, Serialize};

use super::{held_byte, held_of};

/// The version byte of an encoded rollup; an entry of any other version is a miss.
pub const VERSION: u8 = 1;

/// A rollup as it is stored after the version byte.
#[derive(Serialize, Deserialize)]
struct StoredRollup<'a> {
    day: i64,
    fetched_at_ms: i64,
    held: u8,
    #[serde(borrow)]
    groups: Vec<StoredGroup<'a>>,
}

#[derive(Serialize, Deserialize)]
struct StoredGroup<'a> {
    outbound: bool,
    #[serde(borrow)]
    queue: Option<&'a str>,
    offered: u64,
    answered: u64,
    answered_duration_sum: f64,
    answered_with_wait: u64,
    answered_wait_sum: f64,
    longest_wait: Option<f64>,
    /// Second, answered, unanswered, the unanswered waits' sum.
    waits: Vec<(u16, u32, u32, f64)>,
}

/// Writes `rollup` as a version byte and the rollup in postcard, for the database beside its
/// day: a trend over days held there reads a few kilobytes a day instead of the day.
#[must_use]
pub fn encode(rollup: &DayRollup) -> Vec<u8> {
    let stored = StoredRollup {
        day: rollup.day().number(),
        fetched_at_ms: rollup.fetched_at_ms(),
        held: held_byte(rollup.held()),
        groups: rollup
            .all_groups()
            .iter()
            .map(|group| StoredGroup {
                outbound: group.direction == Direction::Outbound,
                queue: group.queue.as_ref().map(QueueName::as_str),
                offered: group.counts.offered,
                answered: group.counts.answered,
                answered_duration_sum: group.counts.answered_duration_sum,
                answered_with_wait: group.counts.answered_with_wait,
                answered_wait_sum: group.counts.answered_wait_sum,
                longest_wait: group.counts.longest_wait,
                waits: group
                    .waits
                    .iter()
                    .map(|w| (w.second, w.answered, w.unanswered, w.unanswered_wait_sum))
                    .collect(),
            })
            .collect(),
    };
    // Serialising into a Vec cannot fail; an empty entry would read back as a miss anyway.
    postcard::to_extend(&stored, vec![VERSION]).unwrap_or_default()
}

/// Reads an encoded rollup of `day`; `None` for anything that is not one (another version,
/// corrupt bytes, another day, a queue name no day holds).
#[must_use]
pub fn decode(bytes: &[u8], day: Day) -> Option<DayRollup> {
    let (&version, body) = bytes.split_first()?;
    if version != VERSION {
        return None;
    }
    let stored: StoredRollup<'_> = postcard::from_bytes(body).ok()?;
    if stored.day != day.number() {
        return None;
    }
    let groups = stored
        .groups
        .into_iter()
        .map(|group| {
            Some(RollupGroup {
                direction: if group.outbound {
                    Direction::Outbound
                } else {
                    Direction::Inbound
                },
                queue: group.queue.map(QueueName::new).transpose().ok()?,
                counts: CallCounts {
                    offered: group.offered,
                    answered: group.answered,
                    answered_duration_sum: group.answered_duration_sum,
                    answered_with_wait: group.answered_with_wait,
                    answered_wait_sum: group.answered_wait_sum,
                    longest_wait: group.longest_wait,
                },
                waits: group
                    .waits
                    .into_iter()
                    .map(|(second, answered, unanswered, sum)| WaitSecond {
                        second,
                        answered,
                        unanswered,
                        unanswered_wait_sum: sum,
                    })
                    .collect(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(DayRollup::from_parts(
        day,
        stored.fetched_at_ms,
        held_of(stored.held)?,
        groups,
    ))
}

#[cfg(test)]
mod tests {
    use callstats_domain::calendar::DateRange;
    use callstats_domain::call_day::CallDay;
    use callstats_domain::testing::{CallExt, call, day};

    use super::*;

    fn sample() -> CallDay {
        let range = DateRange::day(day("2026-11-02"));
        let records = [
            call(Direction::Inbound, Some("101"), "2026-11-02 09:00", 60.0)
                .waited(19.2)
                .queued("sales"),
            call(Direction::Inbound, None, "2026-11-02 09:20", 0.0).waited(4.99),
            call(Direction::Outbound, Some("101"), "2026-11-02 10:00", 45.0),
        ];
        CallDay::split(&range, 1_790_000_000_123, &records)
            .pop()
            .unwrap()
    }

    #[test]
    fn a_rollup_reads_back_as_it_was_written_and_anything_else_is_a_miss() {
        let rollup = DayRollup::of(&sample());
        let bytes = encode(&rollup);
        assert_eq!(bytes.first(), Some(&VERSION));
        assert_eq!(decode(&bytes, rollup.day()), Some(rollup.clone()));
        assert_eq!(decode(&bytes, day("2026-11-03")), None);
        let mut other = bytes.clone();
        other[0] = VERSION + 1;
        assert_eq!(decode(&other, rollup.day()), None);
        assert_eq!(decode(&bytes[..bytes.len() / 2], rollup.day()), None);
        assert_eq!(decode(b"", rollup.day()), None);
    }
}
