//! The calls of one Tashkent day, as the call-day store keeps them (docs/behaviour.md, "Call
//! records"): what the statistics read, in the upstream's order, 24 bytes a call.
//!
//! A day keeps each distinct agent number and queue once, and a call as its second of the day,
//! its direction, its queue's index (in the 14 bits the second leaves free), an index into the
//! agent table, its duration and its wait, where a `CallRecord` holds an agent number and a
//! queue of its own (docs/operations.md, "Sizing", has what a day takes). The duration and the
//! wait stay `f64`, so every figure is the one the upstream's numbers give, to the last bit.

use std::collections::HashMap;

use crate::calendar::{DateRange, Day};
use crate::model::{AgentNumber, CallRecord, MAX_WAIT_SECONDS, QueueName};
use crate::params::Direction;
use crate::tz;

const SECONDS_PER_DAY: u32 = 86_400;
/// The second of the day in [`DayCall::packed`]: 17 bits hold 0..86 400.
const SECOND_MASK: u32 = (1 << 17) - 1;
/// Where the queue (0 none, else 1 + its index in the day's table) sits in [`DayCall::packed`]:
/// the 14 bits between the second and the direction.
const QUEUE_SHIFT: u32 = 17;
const QUEUE_MASK: u32 = ((1 << 14) - 1) << QUEUE_SHIFT;
/// Marks an outbound call in [`DayCall::packed`].
const OUTBOUND: u32 = 1 << 31;
/// [`DayCall::wait_seconds`] of a call without a wait time: no wait is negative.
const NO_WAIT: f64 = -1.0;

/// The most distinct queues one day can hold (14 bits, 0 meaning none). The call-platform
/// adapter fails a day that names more, as it does past its other bounds.
pub const MAX_QUEUES_PER_DAY: usize = (1 << 14) - 1;

/// The calls that started on one Tashkent day, when they were fetched and whether they may
/// still change.
#[derive(Debug, Clone, PartialEq)]
pub struct CallDay {
    day: Day,
    /// Unix milliseconds of the fetch (when it began): how long the day may be kept follows
    /// from it, and so does the answers' `as_of`.
    fetched_at_ms: i64,
    held: Held,
    agents: Vec<AgentNumber>,
    queues: Vec<QueueName>,
    calls: Vec<DayCall>,
}

/// What is known of any held copy of a day (its calls, or their rollup): which day, when the
/// platform was asked for it and whether it is final. The freshness of an answer reads these.
pub trait HeldDay {
    fn day(&self) -> Day;
    /// Unix millisecond at which the calls were fetched.
    fn fetched_at_ms(&self) -> i64;
    fn held(&self) -> Held;
}

/// Implements [`HeldDay`] for a type that keeps the three as its fields `day`,
/// `fetched_at_ms` and `held`.
///
/// Every held copy of a day keeps them so, and reads them the same way.
macro_rules! held_day_from_fields {
    ($ty:ty) => {
        impl $crate::call_day::HeldDay for $ty {
            fn day(&self) -> $crate::calendar::Day {
                self.day
            }

            fn fetched_at_ms(&self) -> i64 {
                self.fetched_at_ms
            }

            fn held(&self) -> $crate::call_day::Held {
                self.held
            }
        }
    };
}
pub(crate) use held_day_from_fields;

held_day_from_fields!(CallDay);

/// What a held day's calls are: final, or figures that may still change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Fetched once the day had settled (ended at least the settle time before): final.
    Settled,
    /// Fetched before it settled (today, or a day that ended less than the settle time
    /// before): calls may still arrive or change.
    Provisional,
    /// The day had not begun: no calls, and nobody was asked.
    NotBegun,
}

/// One call of a [`CallDay`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DayCall {
    duration_seconds: f64,
    /// The wait, or [`NO_WAIT`].
    wait_seconds: f64,
    /// Second of the local day (0..86 400), the queue above it, and [`OUTBOUND`] set for an
    /// outbound call.
    packed: u32,
    /// 0 for a call no agent answered, else 1 + the agent's index in the day's table.
    agent: u32,
}

/// Parts that do not make a day: a second past the day's end, an agent or queue index past
/// its table, a duration or wait that is not a non-negative number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid call day: {0}")]
pub struct InvalidCallDay(&'static str);

impl DayCall {
    /// A call at `second` of its day, answered by the agent at `agent` in the day's table
    /// (`None`: unanswered), without a wait time or a queue.
    pub fn new(
        second: u32,
        direction: Direction,
        agent: Option<u32>,
        duration_seconds: f64,
    ) -> Result<Self, InvalidCallDay> {
        if second >= SECONDS_PER_DAY {
            return Err(InvalidCallDay("a call starts after its day's end"));
        }
        if !duration_seconds.is_finite() || duration_seconds < 0.0 {
            return Err(InvalidCallDay("a duration is not a non-negative number"));
        }
        let agent = match agent {
            None => 0,
            Some(index) => index
                .checked_add(1)
                .ok_or(InvalidCallDay("an agent index is out of range"))?,
        };
        let outbound = if direction == Direction::Outbound {
            OUTBOUND
        } else {
            0
        };
        Ok(Self {
            duration_seconds,
            wait_seconds: NO_WAIT,
            packed: second | outbound,
            agent,
        })
    }

    /// The same call with a wait time (`None`: not tracked), 0..=86 400 seconds.
    pub fn with_wait(mut self, wait_seconds: Option<f64>) -> Result<Self, InvalidCallDay> {
        self.wait_seconds = match wait_seconds {
            None => NO_WAIT,
            Some(wait) if (0.0..=MAX_WAIT_SECONDS).contains(&wait) => wait,
            Some(_) => return Err(InvalidCallDay("a wait is not 0 to 86,400 seconds")),
        };
        Ok(self)
    }

    /// The same call offered by the queue at `queue` in the day's table (`None`: no queue).
    pub fn with_queue(mut self, queue: Option<u32>) -> Result<Self, InvalidCallDay> {
        let slot = match queue {
            None => 0,
            Some(index) => index
                .checked_add(1)
                .filter(|slot| *slot <= QUEUE_MASK >> QUEUE_SHIFT)
                .ok_or(InvalidCallDay("a queue index is out of range"))?,
        };
        self.packed = (self.packed & !QUEUE_MASK) | (slot << QUEUE_SHIFT);
        Ok(self)
    }

    /// Second of the local day the call started, 0..86 400.
    #[must_use]
    pub const fn second(self) -> u32 {
        self.packed & SECOND_MASK
    }

    /// Local hour the call started, 0..=23.
    #[must_use]
    pub const fn hour(self) -> u32 {
        self.second() / 3600
    }

    #[must_use]
    pub const fn direction(self) -> Direction {
        if self.packed & OUTBOUND == 0 {
            Direction::Inbound
        } else {
            Direction::Outbound
        }
    }

    /// Index of the answering agent in the day's table; `None` for an unanswered call.
    #[must_use]
    pub const fn agent_index(self) -> Option<u32> {
        self.agent.checked_sub(1)
    }

    /// Whether an agent answered the call.
    #[must_use]
    pub const fn answered(self) -> bool {
        self.agent != 0
    }

    /// Index of the offering queue in the day's table; `None` for a call without a queue.
    #[must_use]
    pub const fn queue_index(self) -> Option<u32> {
        ((self.packed & QUEUE_MASK) >> QUEUE_SHIFT).checked_sub(1)
    }

    #[must_use]
    pub const fn duration_seconds(self) -> f64 {
        self.duration_seconds
    }

    /// Seconds the caller waited in the queue; `None` when the platform sent no wait.
    #[must_use]
    pub fn wait_seconds(self) -> Option<f64> {
        (self.wait_seconds >= 0.0).then_some(self.wait_seconds)
    }
}

impl CallDay {
    /// The day of the records that started on `day`, in their order, fetched at Unix
    /// millisecond `fetched_at_ms` and settled (see [`CallDay::with_held`]); records of other
    /// days are left out (a window's edges, an upstream that sent more than it was asked).
    #[must_use]
    pub fn from_records(
        day: Day,
        fetched_at_ms: i64,
        records: impl IntoIterator<Item = CallRecord>,
    ) -> Self {
        let midnight = tz::local_midnight_unix(day.date());
        let mut agents: Vec<AgentNumber> = Vec::new();
        let mut indexes: HashMap<AgentNumber, u32> = HashMap::new();
        let mut queues: Vec<QueueName> = Vec::new();
        let mut queue_indexes: HashMap<QueueName, u32> = HashMap::new();
        let mut calls = Vec::new();
        for record in records {
            let Some(second) = record
                .started_at
                .checked_sub(midnight)
                .and_then(|second| u32::try_from(second).ok())
                .filter(|second| *second < SECONDS_PER_DAY)
            else {
                continue;
            };
            let agent = match record.agent_number {
                None => None,
                Some(number) => Some(match indexes.get(&number) {
                    Some(index) => *index,
                    None => {
                        let Ok(index) = u32::try_from(agents.len()) else {
                            continue;
                        };
                        indexes.insert(number.clone(), index);
                        agents.push(number);
                        index
                    }
                }),
            };
            let queue = match record.queue {
                None => None,
                Some(name) => Some(match queue_indexes.get(&name) {
                    Some(index) => *index,
                    None => {
                        // Past the table's room the call cannot be held; the call-platform
                        // adapter fails such a day before it gets here.
                        let Some(index) = u32::try_from(queues.len())
                            .ok()
                            .filter(|_| queues.len() < MAX_QUEUES_PER_DAY)
                        else {
                            continue;
                        };
                        queue_indexes.insert(name.clone(), index);
                        queues.push(name);
                        index
                    }
                }),
            };
            if let Ok(call) = DayCall::new(second, record.direction, agent, record.duration_seconds)
                .and_then(|call| call.with_wait(record.wait_seconds))
                .and_then(|call| call.with_queue(queue))
            {
                calls.push(call);
            }
        }
        // Kept for hours in caches bounded by `size_bytes`: no room past the last call (a grown
        // vector has up to twice the room it needs).
        agents.shrink_to_fit();
        queues.shrink_to_fit();
        calls.shrink_to_fit();
        Self {
            day,
            fetched_at_ms,
            held: Held::Settled,
            agents,
            queues,
            calls,
        }
    }

    /// The day of the fetched calls that started on `day`, as [`CallDay::from_records`] makes
    /// it (drop `fetched` as soon as the day is made).
    #[must_use]
    pub fn from_fetched(day: Day, fetched_at_ms: i64, fetched: &FetchedCalls) -> Self {
        Self::from_records(day, fetched_at_ms, fetched.records())
    }

    /// The same day, held as `held`.
    #[must_use]
    pub const fn with_held(mut self, held: Held) -> Self {
        self.held = held;
        self
    }

    /// A day from its parts, as a cache stored them; checks that every call's agent and queue
    /// index is in its table.
    pub fn from_parts(
        day: Day,
        fetched_at_ms: i64,
        held: Held,
        agents: Vec<AgentNumber>,
        queues: Vec<QueueName>,
        calls: Vec<DayCall>,
    ) -> Result<Self, InvalidCallDay> {
        let within = |index: Option<u32>, known: usize| {
            index.is_none_or(|index| usize::try_from(index).is_ok_and(|index| index < known))
        };
        if !calls
            .iter()
            .all(|call| within(call.agent_index(), agents.len()))
        {
            return Err(InvalidCallDay("an agent index is past the agent table"));
        }
        if !calls
            .iter()
            .all(|call| within(call.queue_index(), queues.len()))
        {
            return Err(InvalidCallDay("a queue index is past the queue table"));
        }
        Ok(Self {
            day,
            fetched_at_ms,
            held,
            agents,
            queues,
            calls,
        })
    }

    /// A day without calls, known at Unix millisecond `now_ms` without asking anyone: it has
    /// not begun.
    #[must_use]
    pub const fn empty(day: Day, now_ms: i64) -> Self {
        Self {
            day,
            fetched_at_ms: now_ms,
            held: Held::NotBegun,
            agents: Vec::new(),
            queues: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// Splits records into the days of `range`, one settled [`CallDay`] per day in order,
    /// fetched at Unix millisecond `fetched_at_ms`; records outside the range are left out.
    #[must_use]
    pub fn split(range: &DateRange, fetched_at_ms: i64, records: &[CallRecord]) -> Vec<Self> {
        let mut by_day: HashMap<i64, Vec<CallRecord>> = HashMap::new();
        for record in records {
            let (day, _) = tz::local_day_and_hour(record.started_at);
            by_day.entry(day).or_default().push(record.clone());
        }
        range
            .iter_days()
            .map(|day| {
                let records = by_day.remove(&day.number()).unwrap_or_default();
                Self::from_records(day, fetched_at_ms, records)
            })
            .collect()
    }

    #[must_use]
    pub const fn day(&self) -> Day {
        self.day
    }

    /// Unix second at which the calls were fetched (rounded down).
    #[must_use]
    pub const fn fetched_at(&self) -> i64 {
        self.fetched_at_ms.div_euclid(1000)
    }

    /// Unix millisecond at which the calls were fetched.
    #[must_use]
    pub const fn fetched_at_ms(&self) -> i64 {
        self.fetched_at_ms
    }

    /// Whether the calls are final.
    #[must_use]
    pub const fn held(&self) -> Held {
        self.held
    }

    /// The distinct agent numbers of the day's answered calls, in order of first call.
    #[must_use]
    pub fn agents(&self) -> &[AgentNumber] {
        &self.agents
    }

    /// The distinct queues of the day's calls, in order of first call.
    #[must_use]
    pub fn queues(&self) -> &[QueueName] {
        &self.queues
    }

    /// The queue that offered `call`, a call of this day.
    #[must_use]
    pub fn queue_of(&self, call: DayCall) -> Option<&QueueName> {
        self.queues.get(usize::try_from(call.queue_index()?).ok()?)
    }

    /// Index of `queue` in the day's table; `None` when no call of the day was offered by it.
    #[must_use]
    pub fn queue_index(&self, queue: &QueueName) -> Option<u32> {
        let position = self.queues.iter().position(|known| known == queue)?;
        u32::try_from(position).ok()
    }

    /// The calls, in the order the upstream sent them.
    #[must_use]
    pub fn calls(&self) -> &[DayCall] {
        &self.calls
    }

    /// The agent who answered `call`, a call of this day.
    #[must_use]
    pub fn agent_of(&self, call: DayCall) -> Option<&AgentNumber> {
        self.agents.get(usize::try_from(call.agent_index()?).ok()?)
    }

    /// The calls as records again (tests, and anything that wants the wide form).
    pub fn records(&self) -> impl Iterator<Item = CallRecord> + '_ {
        let midnight = tz::local_midnight_unix(self.day.date());
        self.calls.iter().map(move |call| CallRecord {
            direction: call.direction(),
            agent_number: self.agent_of(*call).cloned(),
            started_at: midnight + i64::from(call.second()),
            duration_seconds: call.duration_seconds(),
            wait_seconds: call.wait_seconds(),
            queue: self.queue_of(*call).cloned(),
        })
    }

    /// The bytes the day occupies on the heap when shared (in an `Arc`, as the call-day store
    /// keeps it), for caches bounded in memory: its vectors' whole room, and the agent numbers
    /// and queues too long to be stored inline.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        // The Arc's two counts, then the day.
        2 * size_of::<usize>()
            + size_of::<Self>()
            + self.agents.capacity() * size_of::<AgentNumber>()
            + self.queues.capacity() * size_of::<QueueName>()
            + names_heap_len(&self.agents, &self.queues)
            + self.calls.capacity() * size_of::<DayCall>()
    }
}

/// The calls of a window as they arrive from the call platform, in the compact form a held
/// day keeps (docs/operations.md, "Memory"): each distinct agent number and queue once, a call
/// as its start in Unix seconds, its direction, indexes into those tables, its duration and its
/// wait: 32 bytes a call, against 88 for a [`CallRecord`]. The call-platform adapter turns each
/// page into it as the page arrives, so a day in flight costs about what it will cost held;
/// [`CallDay::from_fetched`] makes the held days of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FetchedCalls {
    agents: Vec<AgentNumber>,
    agent_indexes: HashMap<AgentNumber, u32>,
    queues: Vec<QueueName>,
    queue_indexes: HashMap<QueueName, u32>,
    calls: Vec<FetchedCall>,
}

/// One call of [`FetchedCalls`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct FetchedCall {
    started_at: i64,
    duration_seconds: f64,
    /// The wait, or [`NO_WAIT`].
    wait_seconds: f64,
    /// 0 for a call no agent answered, else 1 + the agent's index in the table.
    agent: u32,
    /// 0 for a call without a queue, else 1 + the queue's index in the table.
    queue: u16,
    outbound: bool,
}

impl FetchedCalls {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a call, after the calls already added. A call whose agent or queue would not fit
    /// its table (past `u32::MAX` agents, past [`MAX_QUEUES_PER_DAY`] queues) is left out:
    /// the call-platform adapter fails such a window before it gets here.
    pub fn push(&mut self, record: CallRecord) {
        let Some(agent) = slot_of(
            &mut self.agents,
            &mut self.agent_indexes,
            record.agent_number,
            usize::MAX,
        ) else {
            return;
        };
        let Some(queue) = slot_of(
            &mut self.queues,
            &mut self.queue_indexes,
            record.queue,
            MAX_QUEUES_PER_DAY,
        ) else {
            return;
        };
        let Ok(queue) = u16::try_from(queue) else {
            return;
        };
        self.calls.push(FetchedCall {
            started_at: record.started_at,
            duration_seconds: record.duration_seconds,
            wait_seconds: record.wait_seconds.unwrap_or(NO_WAIT),
            agent,
            queue,
            outbound: record.direction == Direction::Outbound,
        });
    }

    /// How many calls were added.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.calls.len()
    }

    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Whether a call answered by `agent` was added.
    #[must_use]
    pub fn knows_agent(&self, agent: &AgentNumber) -> bool {
        self.agent_indexes.contains_key(agent)
    }

    /// How many distinct agents answered the calls added.
    #[must_use]
    pub const fn agent_count(&self) -> usize {
        self.agents.len()
    }

    /// Whether a call offered by `queue` was added.
    #[must_use]
    pub fn knows_queue(&self, queue: &QueueName) -> bool {
        self.queue_indexes.contains_key(queue)
    }

    /// How many distinct queues offered the calls added.
    #[must_use]
    pub const fn queue_count(&self) -> usize {
        self.queues.len()
    }

    /// The calls as records again, in the order they were added.
    pub fn records(&self) -> impl Iterator<Item = CallRecord> + '_ {
        self.calls.iter().map(|call| CallRecord {
            direction: if call.outbound {
                Direction::Outbound
            } else {
                Direction::Inbound
            },
            agent_number: call
                .agent
                .checked_sub(1)
                .and_then(|index| self.agents.get(usize::try_from(index).ok()?))
                .cloned(),
            started_at: call.started_at,
            duration_seconds: call.duration_seconds,
            wait_seconds: (call.wait_seconds >= 0.0).then_some(call.wait_seconds),
            queue: call
                .queue
                .checked_sub(1)
                .and_then(|index| self.queues.get(usize::from(index)))
                .cloned(),
        })
    }

    /// The heap bytes held, for a budget of the calls in flight: the vectors' and tables'
    /// whole room (a hash table's entries and control bytes, at its load factor's worst), and
    /// the agent numbers and queues too long to be stored inline (twice: table and index).
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        let text = names_heap_len(&self.agents, &self.queues);
        let agent_entry = size_of::<AgentNumber>() + size_of::<u32>() + 1;
        let queue_entry = size_of::<QueueName>() + size_of::<u32>() + 1;
        size_of::<Self>()
            + self.calls.capacity() * size_of::<FetchedCall>()
            + self.agents.capacity() * size_of::<AgentNumber>()
            + self.queues.capacity() * size_of::<QueueName>()
            + self.agent_indexes.capacity() * agent_entry * 8 / 7
            + self.queue_indexes.capacity() * queue_entry * 8 / 7
            + 2 * text
    }
}

/// 0 for no value, else 1 + the value's index in `table`, adding it when new; `None` when a new
/// value would make the table longer than `most` (or past `u32`).
fn slot_of<T: Clone + Eq + std::hash::Hash>(
    table: &mut Vec<T>,
    indexes: &mut HashMap<T, u32>,
    value: Option<T>,
    most: usize,
) -> Option<u32> {
    let Some(value) = value else {
        return Some(0);
    };
    if let Some(slot) = indexes.get(&value) {
        return Some(*slot);
    }
    if table.len() >= most {
        return None;
    }
    let slot = u32::try_from(table.len()).ok()?.checked_add(1)?;
    indexes.insert(value.clone(), slot);
    table.push(value);
    Some(slot)
}

impl FromIterator<CallRecord> for FetchedCalls {
    fn from_iter<I: IntoIterator<Item = CallRecord>>(records: I) -> Self {
        let mut fetched = Self::new();
        for record in records {
            fetched.push(record);
        }
        fetched
    }
}

impl From<Vec<CallRecord>> for FetchedCalls {
    fn from(records: Vec<CallRecord>) -> Self {
        records.into_iter().collect()
    }
}

/// Heap bytes of the agent numbers' and queues' text: none for a name up to 24 bytes (stored
/// inline).
fn names_heap_len(agents: &[AgentNumber], queues: &[QueueName]) -> usize {
    let heap_len = |text: &str| if text.len() > 24 { text.len() } else { 0 };
    agents
        .iter()
        .map(|agent| heap_len(agent.as_str()))
        .chain(queues.iter().map(|queue| heap_len(queue.as_str())))
        .sum()
}

impl AsRef<Self> for CallDay {
    fn as_ref(&self) -> &Self {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{call, day, range};

    #[test]
    fn a_call_takes_24_bytes() {
        assert_eq!(size_of::<DayCall>(), 24);
        assert_eq!(
            size_of::<CallRecord>(),
            88,
            "the wide form the module doc compares with"
        );
    }

    #[test]
    fn fetched_calls_keep_every_field_in_32_bytes_a_call_and_make_the_same_day() {
        assert_eq!(size_of::<FetchedCall>(), 32);
        let mut queued = call(
            Direction::Inbound,
            Some("101"),
            "2026-11-02T09:00:00+05:00",
            12.25,
        );
        queued.wait_seconds = Some(3.5);
        queued.queue = Some(QueueName::new("sales").unwrap());
        let records = vec![
            queued,
            call(Direction::Outbound, None, "2026-11-02T10:00:00+05:00", 0.0),
            call(
                Direction::Inbound,
                Some("102"),
                "2026-11-03T00:00:00+05:00",
                1.0,
            ),
            call(
                Direction::Inbound,
                Some("101"),
                "2026-11-02T23:59:59+05:00",
                86_400.0,
            ),
        ];
        let fetched = FetchedCalls::from(records.clone());
        assert_eq!(fetched.len(), 4);
        assert_eq!((fetched.agent_count(), fetched.queue_count()), (2, 1));
        assert!(fetched.knows_agent(&AgentNumber::new("102").unwrap()));
        assert!(!fetched.knows_agent(&AgentNumber::new("103").unwrap()));
        assert!(fetched.knows_queue(&QueueName::new("sales").unwrap()));
        assert_eq!(fetched.records().collect::<Vec<_>>(), records);
        let day = day("2026-11-02");
        assert_eq!(
            CallDay::from_fetched(day, 7, &fetched),
            CallDay::from_records(day, 7, records)
        );
    }

    #[test]
    fn waits_and_queues_round_trip_and_each_queue_is_kept_once() {
        let queued = |at: &str, agent: Option<&str>, wait: Option<f64>, queue: Option<&str>| {
            let mut record = call(Direction::Inbound, agent, at, 30.0);
            record.wait_seconds = wait;
            record.queue = queue.map(|q| QueueName::new(q).unwrap());
            record
        };
        let records = vec![
            queued(
                "2026-11-02T09:00:00+05:00",
                Some("101"),
                Some(12.5),
                Some("sales"),
            ),
            queued(
                "2026-11-02T09:01:00+05:00",
                None,
                Some(86_400.0),
                Some("support"),
            ),
            queued(
                "2026-11-02T09:02:00+05:00",
                Some("102"),
                Some(0.0),
                Some("sales"),
            ),
            queued("2026-11-02T23:59:59+05:00", Some("102"), None, None),
            call(
                Direction::Outbound,
                Some("101"),
                "2026-11-02T10:00:00+05:00",
                5.0,
            ),
        ];
        let kept = CallDay::from_records(day("2026-11-02"), 0, records.clone());
        assert_eq!(kept.records().collect::<Vec<_>>(), records);
        let names: Vec<&str> = kept.queues().iter().map(QueueName::as_str).collect();
        assert_eq!(names, ["sales", "support"]);
        assert_eq!(
            kept.calls()[3].second(),
            86_399,
            "the queue bits leave the second alone"
        );
        assert_eq!(
            kept.queue_index(&QueueName::new("support").unwrap()),
            Some(1)
        );
        assert_eq!(kept.queue_index(&QueueName::new("Sales").unwrap()), None);
    }

    #[test]
    fn waits_outside_a_day_and_queue_indexes_past_the_bits_are_refused() {
        let call = DayCall::new(5, Direction::Inbound, None, 1.0).unwrap();
        for wait in [-0.5, f64::NAN, f64::INFINITY, 86_400.5] {
            assert!(call.with_wait(Some(wait)).is_err(), "{wait}");
        }
        let last = u32::try_from(MAX_QUEUES_PER_DAY - 1).unwrap();
        assert_eq!(
            call.with_queue(Some(last)).unwrap().queue_index(),
            Some(last)
        );
        assert!(call.with_queue(Some(last + 1)).is_err());
        let queued = call.with_queue(Some(3)).unwrap();
        assert!(
            CallDay::from_parts(
                day("2026-11-02"),
                0,
                Held::Settled,
                vec![],
                vec![],
                vec![queued]
            )
            .is_err()
        );
    }

    #[test]
    fn records_round_trip_through_a_day_in_their_order() {
        let records = vec![
            call(
                Direction::Inbound,
                Some("101"),
                "2026-11-02T00:00:00+05:00",
                1.5,
            ),
            call(
                Direction::Outbound,
                Some("102"),
                "2026-11-02T13:10:00+05:00",
                60.0,
            ),
            call(Direction::Inbound, None, "2026-11-02T23:59:59+05:00", 0.0),
            call(
                Direction::Outbound,
                Some("101"),
                "2026-11-02T09:00:00+05:00",
                7.25,
            ),
        ];
        let kept = CallDay::from_records(day("2026-11-02"), 7_250, records.clone());
        assert_eq!(kept.records().collect::<Vec<_>>(), records);
        assert_eq!(kept.agents().len(), 2, "each agent number is kept once");
        assert_eq!((kept.fetched_at(), kept.fetched_at_ms()), (7, 7_250));
    }

    #[test]
    fn records_of_other_days_are_left_out_whatever_their_offset() {
        let records = vec![
            // 18:59:59 UTC is 23:59:59 the day before in Tashkent.
            call(Direction::Inbound, None, "2026-11-01T18:59:59Z", 1.0),
            call(Direction::Inbound, None, "2026-11-01T19:00:00Z", 2.0),
            call(Direction::Inbound, None, "2026-11-02T13:59:59-05:00", 3.0),
            call(Direction::Inbound, None, "2026-11-02T14:00:00-05:00", 4.0),
        ];
        let kept = CallDay::from_records(day("2026-11-02"), 0, records);
        let durations: Vec<f64> = kept.calls().iter().map(|c| c.duration_seconds()).collect();
        assert_eq!(durations, [2.0, 3.0]);
        assert_eq!(kept.calls()[1].hour(), 23);
    }

    #[test]
    fn split_gives_every_day_of_the_range_in_order() {
        let records = vec![
            call(Direction::Inbound, None, "2026-11-03T10:00:00+05:00", 1.0),
            call(Direction::Inbound, None, "2026-11-01T10:00:00+05:00", 1.0),
            call(Direction::Inbound, None, "2026-11-09T10:00:00+05:00", 1.0),
        ];
        let days = CallDay::split(&range("2026-11-01", "2026-11-03"), 0, &records);
        let counts: Vec<(String, usize)> = days
            .iter()
            .map(|d| (d.day().to_string(), d.calls().len()))
            .collect();
        assert_eq!(
            counts,
            [
                ("2026-11-01".to_owned(), 1),
                ("2026-11-02".to_owned(), 0),
                ("2026-11-03".to_owned(), 1)
            ]
        );
    }

    #[test]
    fn parts_that_do_not_make_a_day_are_refused() {
        assert!(DayCall::new(86_400, Direction::Inbound, None, 1.0).is_err());
        assert!(DayCall::new(0, Direction::Inbound, None, -1.0).is_err());
        assert!(DayCall::new(0, Direction::Inbound, None, f64::NAN).is_err());
        assert!(DayCall::new(0, Direction::Inbound, Some(u32::MAX), 1.0).is_err());
        let orphan = DayCall::new(5, Direction::Outbound, Some(0), 1.0).unwrap();
        assert!(
            CallDay::from_parts(
                day("2026-11-02"),
                0,
                Held::Settled,
                vec![],
                vec![],
                vec![orphan]
            )
            .is_err()
        );
        let agents = vec![AgentNumber::new("101").unwrap()];
        let kept = CallDay::from_parts(
            day("2026-11-02"),
            0,
            Held::Settled,
            agents,
            vec![],
            vec![orphan],
        )
        .unwrap();
        assert_eq!(kept.agent_of(kept.calls()[0]).unwrap().as_str(), "101");
        assert_eq!(kept.calls()[0].direction(), Direction::Outbound);
        assert_eq!(kept.calls()[0].second(), 5);
    }
}
