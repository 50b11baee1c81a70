//! The compact, versioned encoding of a held [`CallDay`], shared by every tier that stores days
//! outside the process (Redis, the database's `call_days` table): a version byte and the day in
//! postcard, whose varints keep a call to a few bytes (docs/operations.md, "Sizing", has the
//! sizes). Bytes that are not this version, do not decode, or hold another day read as `None`:
//! a miss, never an error.

use callstats_domain::calendar::Day;
use callstats_domain::call_day::{CallDay, DayCall};
use callstats_domain::identifiers::{AgentNumber, QueueName};
use callstats_domain::params::Direction;
use serde::{Deserialize, Serialize};

use super::{held_byte, held_of};

/// The entry format; an entry of any other version is a miss. 2: the fetch time in
/// milliseconds and whether the day was settled. 3: each call's wait and queue, and the day's
/// queue table.
pub const VERSION: u8 = 3;

/// A day as it is stored after the version byte.
#[derive(Serialize, Deserialize)]
struct StoredDay<'a> {
    day: i64,
    fetched_at_ms: i64,
    /// 0 settled, 1 provisional, 2 not begun.
    held: u8,
    #[serde(borrow)]
    agents: Vec<&'a str>,
    #[serde(borrow)]
    queues: Vec<&'a str>,
    /// Second of the day, outbound, agent (0: none, else 1 + index), duration, wait, queue
    /// (0: none, else 1 + index).
    calls: Vec<(u32, bool, u32, f64, Option<f64>, u32)>,
}

/// Writes `day` as an entry.
#[must_use]
pub fn encode(day: &CallDay) -> Vec<u8> {
    let stored = StoredDay {
        day: day.day().number(),
        fetched_at_ms: day.fetched_at_ms(),
        held: held_byte(day.held()),
        agents: day.agents().iter().map(AgentNumber::as_str).collect(),
        queues: day.queues().iter().map(QueueName::as_str).collect(),
        calls: day
            .calls()
            .iter()
            .map(|call| {
                (
                    call.second(),
                    call.direction() == Direction::Outbound,
                    call.agent_index()
                        .map_or(0, |index| index.saturating_add(1)),
                    call.duration_seconds(),
                    call.wait_seconds(),
                    call.queue_index()
                        .map_or(0, |index| index.saturating_add(1)),
                )
            })
            .collect(),
    };
    // Serialising into a Vec cannot fail; an empty entry would read back as a miss anyway.
    postcard::to_extend(&stored, vec![VERSION]).unwrap_or_default()
}

/// Reads an entry of `day`; `None` for anything that is not one.
#[must_use]
pub fn decode(bytes: &[u8], day: Day) -> Option<CallDay> {
    let (&version, body) = bytes.split_first()?;
    if version != VERSION {
        return None;
    }
    let stored: StoredDay<'_> = postcard::from_bytes(body).ok()?;
    if stored.day != day.number() {
        return None;
    }
    let agents = stored
        .agents
        .into_iter()
        .map(|agent| AgentNumber::new(agent).ok())
        .collect::<Option<Vec<_>>>()?;
    let queues = stored
        .queues
        .into_iter()
        .map(|queue| QueueName::new(queue).ok())
        .collect::<Option<Vec<_>>>()?;
    let calls = stored
        .calls
        .into_iter()
        .map(|(second, outbound, agent, duration, wait, queue)| {
            let direction = if outbound {
                Direction::Outbound
            } else {
                Direction::Inbound
            };
            DayCall::new(second, direction, agent.checked_sub(1), duration)
                .and_then(|call| call.with_wait(wait))
                .and_then(|call| call.with_queue(queue.checked_sub(1)))
                .ok()
        })
        .collect::<Option<Vec<_>>>()?;
    let held = held_of(stored.held)?;
    CallDay::from_parts(day, stored.fetched_at_ms, held, agents, queues, calls).ok()
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        reason = "tests: a panic is a failed test"
    )]

    use callstats_domain::call_day::Held;
    use callstats_domain::model::CallRecord;
    use callstats_domain::tz;

    use super::*;

    fn day(raw: &str) -> Day {
        Day::parse(raw).unwrap()
    }

    fn sample() -> CallDay {
        let day = day("2026-11-02");
        let midnight = tz::local_midnight_unix(day.date());
        let record = |second: i64, direction, agent: Option<&str>, duration| CallRecord {
            direction,
            agent_number: agent.map(|a| AgentNumber::new(a).unwrap()),
            started_at: midnight + second,
            duration_seconds: duration,
            wait_seconds: (direction == Direction::Inbound).then_some(duration / 7.0),
            queue: (direction == Direction::Inbound && second > 0).then(|| {
                QueueName::new("Support · Oʻzbekcha, a name longer than 24 bytes").unwrap()
            }),
        };
        CallDay::from_records(
            day,
            1_790_000_000_123,
            vec![
                record(0, Direction::Inbound, Some("101"), 125.4),
                record(86_399, Direction::Outbound, Some("Oʻtkir-7"), 0.1),
                record(3_600, Direction::Inbound, None, 17.0),
                record(7_200, Direction::Outbound, Some("101"), 1e-9),
            ],
        )
    }

    #[test]
    fn a_day_reads_back_as_it_was_written() {
        for held in [Held::Settled, Held::Provisional, Held::NotBegun] {
            let kept = sample().with_held(held);
            let bytes = encode(&kept);
            assert_eq!(bytes.first(), Some(&VERSION));
            let read = decode(&bytes, kept.day());
            assert_eq!(
                read.as_ref().map(|day| (day.held(), day.fetched_at_ms())),
                Some((held, 1_790_000_000_123))
            );
            assert_eq!(read, Some(kept));
        }
    }

    #[test]
    fn another_version_corruption_or_another_day_is_a_miss() {
        let kept = sample();
        let bytes = encode(&kept);
        let mut other_version = bytes.clone();
        other_version[0] = VERSION + 1;
        assert_eq!(decode(&other_version, kept.day()), None);
        assert_eq!(decode(&bytes[..bytes.len() / 2], kept.day()), None);
        assert_eq!(decode(b"", kept.day()), None);
        assert_eq!(
            decode(&[&[VERSION][..], b"garbage"].concat(), kept.day()),
            None
        );
        assert_eq!(decode(&bytes, day("2026-11-03")), None);
        // An agent index past the table.
        let mut stored: StoredDay<'_> = postcard::from_bytes(&bytes[1..]).unwrap();
        stored.calls[0].2 = 9;
        let tampered = postcard::to_extend(&stored, vec![VERSION]).unwrap();
        assert_eq!(decode(&tampered, kept.day()), None);
        // A queue index past the table, and a wait no day holds.
        let mut stored: StoredDay<'_> = postcard::from_bytes(&bytes[1..]).unwrap();
        stored.calls[0].5 = 2;
        let tampered = postcard::to_extend(&stored, vec![VERSION]).unwrap();
        assert_eq!(decode(&tampered, kept.day()), None);
        let mut stored: StoredDay<'_> = postcard::from_bytes(&bytes[1..]).unwrap();
        stored.calls[0].4 = Some(-1.0);
        let tampered = postcard::to_extend(&stored, vec![VERSION]).unwrap();
        assert_eq!(decode(&tampered, kept.day()), None);
        // A held state no version writes.
        let mut stored: StoredDay<'_> = postcard::from_bytes(&bytes[1..]).unwrap();
        stored.held = 3;
        let tampered = postcard::to_extend(&stored, vec![VERSION]).unwrap();
        assert_eq!(decode(&tampered, kept.day()), None);
    }

    #[test]
    fn a_weekday_entry_is_compact() {
        let day = day("2026-11-02");
        let midnight = tz::local_midnight_unix(day.date());
        let queues =
            ["support", "sales", "billing", "corporate"].map(|q| QueueName::new(q).unwrap());
        let records = |waits: bool| {
            let queues = queues.clone();
            (0..5_000_i64).map(move |n| CallRecord {
                direction: Direction::Inbound,
                agent_number: Some(AgentNumber::new(&format!("{}", 101 + n % 80)).unwrap()),
                started_at: midnight + n * 17,
                duration_seconds: 120.5,
                wait_seconds: waits.then_some(12.5),
                queue: waits.then(|| queues[usize::try_from(n % 4).unwrap()].clone()),
            })
        };
        // Without waits and queues a call costs two bytes more than in version 2 (a `None`
        // wait and a 0 queue); with both, nine more again (the wait's f64 and its tag).
        let bare = encode(&CallDay::from_records(day, 0, records(false)));
        assert!(bare.len() < 75_000, "{} bytes", bare.len());
        let full = encode(&CallDay::from_records(day, 0, records(true)));
        assert!(full.len() < 120_000, "{} bytes", full.len());
    }
}
