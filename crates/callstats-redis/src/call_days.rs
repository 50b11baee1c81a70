//! The shared tier of the call-day store: every replica sees the days any of them fetched.
//!
//! A day is one Redis string `{prefix}day:{YYYY-MM-DD}` holding a version byte and the day in
//! postcard (varints: about 15 bytes a call without a wait, 24 with one and a queue; 120 KB
//! for a 5,000-call weekday whose calls all waited in a queue). The missing days
//! of a request are read with one `MGET`. An entry that is not this version, does not decode,
//! or holds another day is a miss, never an error: the day is fetched again and overwritten.
//! `SET NX PX` on `{prefix}daylock:{YYYY-MM-DD}` lets one replica fetch a day while the
//! others wait for its entry.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::calendar::Day;
use callstats_domain::call_day::{CallDay, DayCall, Held};
use callstats_domain::model::{AgentNumber, QueueName};
use callstats_domain::params::Direction;
use callstats_domain::ports::CallDayCache;
use serde::{Deserialize, Serialize};

use crate::{Redis, lock_token};

/// The entry format; an entry of any other version is a miss. 2: the fetch time in
/// milliseconds and whether the day was settled. 3: each call's wait and queue, and the day's
/// queue table.
const VERSION: u8 = 3;

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
fn encode(day: &CallDay) -> Vec<u8> {
    let stored = StoredDay {
        day: day.day().number(),
        fetched_at_ms: day.fetched_at_ms(),
        held: match day.held() {
            Held::Settled => 0,
            Held::Provisional => 1,
            Held::NotBegun => 2,
        },
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
fn decode(bytes: &[u8], day: Day) -> Option<CallDay> {
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
    let held = match stored.held {
        0 => Held::Settled,
        1 => Held::Provisional,
        2 => Held::NotBegun,
        _ => return None,
    };
    CallDay::from_parts(day, stored.fetched_at_ms, held, agents, queues, calls).ok()
}

fn name(day: Day) -> String {
    format!("day:{day}")
}

fn lock_name(day: Day) -> String {
    format!("daylock:{day}")
}

/// The call days in Redis.
#[derive(Clone)]
pub struct RedisCallDays {
    redis: Arc<Redis>,
    token: String,
}

impl RedisCallDays {
    #[must_use]
    pub fn new(redis: Arc<Redis>) -> Self {
        Self {
            redis,
            token: lock_token(),
        }
    }
}

#[async_trait]
impl CallDayCache for RedisCallDays {
    async fn get(&self, days: &[Day]) -> Vec<Option<Arc<CallDay>>> {
        let mut pipeline = redis::pipe();
        let keys: Vec<String> = days.iter().map(|day| self.redis.key(&name(*day))).collect();
        pipeline.cmd("MGET").arg(&keys);
        let Some((entries,)) = self
            .redis
            .run::<(Vec<Option<Vec<u8>>>,)>("day read", &pipeline)
            .await
        else {
            return vec![None; days.len()];
        };
        let mut decoded: Vec<Option<Arc<CallDay>>> = days
            .iter()
            .zip(&entries)
            .map(|(day, entry)| {
                let bytes = entry.as_deref()?;
                let kept = decode(bytes, *day);
                if kept.is_none() {
                    metrics::counter!("callstats_call_day_undecodable_total").increment(1);
                }
                kept.map(Arc::new)
            })
            .collect();
        decoded.resize(days.len(), None);
        decoded
    }

    async fn put(&self, day: Arc<CallDay>, ttl: Duration) {
        self.redis
            .set("day write", &name(day.day()), &encode(&day), ttl)
            .await;
    }

    async fn try_lock(&self, day: Day, ttl: Duration) -> bool {
        self.redis
            .try_lock("day lock", &lock_name(day), &self.token, ttl)
            .await
    }

    async fn unlock(&self, day: Day) {
        self.redis
            .unlock("day unlock", &lock_name(day), &self.token)
            .await;
    }
}

#[cfg(test)]
mod tests {
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
