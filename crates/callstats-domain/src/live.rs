//! What is happening now (docs/behaviour.md, "Live"): the call platform's live snapshot as the
//! [`CallPlatform::live`](crate::ports::CallPlatform::live) port returns it, validated on
//! construction, and what a partner reads of it.
//!
//! The snapshot holds what the platform said; [`live_figures`] turns it into what a partner
//! reads: names from the roster, totals, the queues ordered by callers waiting, the agents by
//! number. callstats-api writes it as the body of /calls/live, and [`LiveBody`] carries that
//! body's JSON between replicas.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use time::OffsetDateTime;

use crate::model::{AgentNumber, MAX_WAIT_SECONDS, Operator, QueueName};
use crate::ports::UpstreamError;
use crate::stats::round::round2;

/// The most agents one snapshot may list: the three shifts of the largest centre, with room.
pub const MAX_LIVE_AGENTS: usize = 5_000;
/// The most queues one snapshot may list; a centre has tens to hundreds.
pub const MAX_LIVE_QUEUES: usize = 1_000;

/// Why the platform's live figures could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// The platform reports no live figures (its `/live` answered 404): not an outage.
    #[error("the call platform does not report live figures")]
    NotReported,
    /// Down, failing, too slow, asking to be called less, or its answer broke the contract.
    #[error(transparent)]
    Unavailable(#[from] UpstreamError),
}

/// What an agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// Signed in and free to take a call.
    Available,
    /// Talking on a call.
    OnCall,
    /// Finishing the work of a call that has ended (after-call work).
    WrapUp,
    /// Signed out, on a break, or otherwise not taking calls.
    Away,
}

impl AgentState {
    /// Every state, in the order the totals count them.
    pub const ALL: [Self; 4] = [Self::Available, Self::OnCall, Self::WrapUp, Self::Away];

    /// The state as the contract writes it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Available => "available",
            Self::OnCall => "on_call",
            Self::WrapUp => "wrap_up",
            Self::Away => "away",
        }
    }
}

impl fmt::Display for AgentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state the contract does not name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected one of available, on_call, wrap_up, away")]
pub struct InvalidAgentState;

impl FromStr for AgentState {
    type Err = InvalidAgentState;

    /// Exactly as the contract writes it (case-sensitive).
    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|state| state.as_str() == raw)
            .ok_or(InvalidAgentState)
    }
}

/// One queue as the platform reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueNow {
    pub queue: QueueName,
    /// Callers in the queue now.
    pub waiting: u32,
    /// How long the caller who has waited longest has waited, in seconds; a number exactly
    /// when `waiting` is above 0.
    pub oldest_wait_seconds: Option<f64>,
}

/// One agent as the platform reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentNow {
    pub agent_number: AgentNumber,
    pub state: AgentState,
    /// When the agent entered `state`.
    pub since: OffsetDateTime,
    /// The queue of the call an `on_call` agent is on; `None` when unknown. Read only for
    /// `on_call` agents: for any other state it names no call.
    pub queue: Option<QueueName>,
}

/// A snapshot that breaks the contract (docs/behaviour.md, "Live"): the platform is then treated as
/// unavailable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LiveRuleBroken {
    #[error("{count} agents, more than the {MAX_LIVE_AGENTS} a snapshot may list")]
    TooManyAgents { count: usize },
    #[error("{count} queues, more than the {MAX_LIVE_QUEUES} a snapshot may list")]
    TooManyQueues { count: usize },
    #[error("agent {0:?} is listed more than once")]
    RepeatedAgent(AgentNumber),
    #[error("queue {0:?} is listed more than once")]
    RepeatedQueue(QueueName),
    #[error(
        "queue {queue:?}: oldest_wait_seconds {seconds} is not a number of seconds \
         from 0 to {MAX_WAIT_SECONDS}"
    )]
    OldestWait { queue: QueueName, seconds: f64 },
    #[error(
        "queue {queue:?}: oldest_wait_seconds is {} while {waiting} wait: it is a number \
         exactly when someone waits",
        .oldest.map_or_else(|| "null".to_owned(), |seconds| seconds.to_string())
    )]
    OldestWaitMismatch {
        queue: QueueName,
        waiting: u32,
        oldest: Option<f64>,
    },
}

/// What the call platform says is happening now, valid once built.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSnapshot {
    as_of: OffsetDateTime,
    queues: Vec<QueueNow>,
    agents: Vec<AgentNow>,
}

impl LiveSnapshot {
    /// The snapshot taken at `as_of`, or the first rule it breaks: at most
    /// [`MAX_LIVE_QUEUES`] queues and [`MAX_LIVE_AGENTS`] agents, each listed once, and each
    /// queue's oldest wait a number of seconds from 0 to a day exactly when someone waits.
    /// Nothing relates `since` to `as_of`: the platform's parts may disagree by a moment.
    pub fn new(
        as_of: OffsetDateTime,
        queues: Vec<QueueNow>,
        agents: Vec<AgentNow>,
    ) -> Result<Self, LiveRuleBroken> {
        if queues.len() > MAX_LIVE_QUEUES {
            return Err(LiveRuleBroken::TooManyQueues {
                count: queues.len(),
            });
        }
        if agents.len() > MAX_LIVE_AGENTS {
            return Err(LiveRuleBroken::TooManyAgents {
                count: agents.len(),
            });
        }
        let mut names = HashSet::with_capacity(queues.len());
        for queue in &queues {
            if !names.insert(&queue.queue) {
                return Err(LiveRuleBroken::RepeatedQueue(queue.queue.clone()));
            }
            check_oldest_wait(queue)?;
        }
        let mut numbers = HashSet::with_capacity(agents.len());
        for agent in &agents {
            if !numbers.insert(&agent.agent_number) {
                return Err(LiveRuleBroken::RepeatedAgent(agent.agent_number.clone()));
            }
        }
        Ok(Self {
            as_of,
            queues,
            agents,
        })
    }

    /// When the platform took the snapshot.
    #[must_use]
    pub const fn as_of(&self) -> OffsetDateTime {
        self.as_of
    }

    /// The queues, in the platform's order.
    #[must_use]
    pub fn queues(&self) -> &[QueueNow] {
        &self.queues
    }

    /// The agents, in the platform's order.
    #[must_use]
    pub fn agents(&self) -> &[AgentNow] {
        &self.agents
    }
}

fn check_oldest_wait(queue: &QueueNow) -> Result<(), LiveRuleBroken> {
    match queue.oldest_wait_seconds {
        Some(seconds) if !(0.0..=MAX_WAIT_SECONDS).contains(&seconds) => {
            Err(LiveRuleBroken::OldestWait {
                queue: queue.queue.clone(),
                seconds,
            })
        }
        oldest if oldest.is_some() != (queue.waiting > 0) => {
            Err(LiveRuleBroken::OldestWaitMismatch {
                queue: queue.queue.clone(),
                waiting: queue.waiting,
                oldest,
            })
        }
        _ => Ok(()),
    }
}

/// What is happening now, as a partner reads it: the totals, the queues by callers waiting and
/// the agents by number, each named from the roster.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFigures {
    /// When the call platform took these figures.
    pub as_of: OffsetDateTime,
    pub totals: LiveTotals,
    /// Every queue the platform reports, and every queue an agent is on a call of: by
    /// `waiting` descending, then name (byte-wise).
    pub queues: Vec<LiveQueue>,
    /// Every agent the platform reports, by agent number (byte-wise).
    pub agents: Vec<LiveAgent>,
}

/// The whole centre now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveTotals {
    /// Callers waiting in every queue together.
    pub waiting: u64,
    /// The longest of the queues' oldest waits (rounded); `None` when nobody waits.
    pub oldest_wait_seconds: Option<f64>,
    /// How many agents are in each state.
    available: u64,
    on_call: u64,
    wrap_up: u64,
    away: u64,
}

impl LiveTotals {
    /// How many agents are in `state` (`on_call` whether or not their call's queue is known).
    #[must_use]
    pub const fn agents_in(&self, state: AgentState) -> u64 {
        match state {
            AgentState::Available => self.available,
            AgentState::OnCall => self.on_call,
            AgentState::WrapUp => self.wrap_up,
            AgentState::Away => self.away,
        }
    }

    /// Counts one more agent in `state`.
    fn count(&mut self, state: AgentState) {
        let count = match state {
            AgentState::Available => &mut self.available,
            AgentState::OnCall => &mut self.on_call,
            AgentState::WrapUp => &mut self.wrap_up,
            AgentState::Away => &mut self.away,
        };
        *count = count.saturating_add(1);
    }
}

/// One queue now.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveQueue {
    pub queue: QueueName,
    /// 0 for a queue the platform did not list but an agent is on a call of.
    pub waiting: u64,
    /// Rounded; `None` when nobody waits.
    pub oldest_wait_seconds: Option<f64>,
    /// Agents on a call of this queue.
    pub agents_on_call: u64,
}

/// One agent now, named from the roster (the agent number when the roster does not list it);
/// its queue only while on a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveAgent {
    pub name: String,
    pub now: AgentNow,
}

/// The JSON of the live answer as written once by the replica that polled, kept as text: every
/// replica serves and streams these very bytes. Serialised verbatim by serde_json.
#[derive(Debug, Clone)]
pub struct LiveBody(Box<serde_json::value::RawValue>);

impl LiveBody {
    /// `response` written as JSON.
    #[must_use]
    pub fn of(response: &impl Serialize) -> Self {
        // A struct of strings and numbers: writing it cannot fail.
        let json = serde_json::value::to_raw_value(response)
            .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned());
        Self(json)
    }

    /// A body as another replica wrote it (JSON already checked by its parser); `None` unless
    /// it is one JSON object.
    #[must_use]
    pub fn from_raw(json: Box<serde_json::value::RawValue>) -> Option<Self> {
        json.get().starts_with('{').then_some(Self(json))
    }

    /// The JSON, to write it into another document as it is.
    #[must_use]
    pub fn as_raw(&self) -> &serde_json::value::RawValue {
        &self.0
    }

    /// The JSON text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for LiveBody {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for LiveBody {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// What is happening now in `snapshot`, each agent named from `roster`.
#[must_use]
pub fn live_figures(snapshot: &LiveSnapshot, roster: &[Operator]) -> LiveFigures {
    let mut names: HashMap<&AgentNumber, &str> = HashMap::with_capacity(roster.len());
    for operator in roster {
        names
            .entry(&operator.agent_number)
            .or_insert(operator.name.as_str());
    }

    let mut totals = LiveTotals {
        waiting: 0,
        oldest_wait_seconds: None,
        available: 0,
        on_call: 0,
        wrap_up: 0,
        away: 0,
    };
    let mut queues: HashMap<&QueueName, LiveQueue> =
        HashMap::with_capacity(snapshot.queues().len());
    for queue in snapshot.queues() {
        totals.waiting = totals.waiting.saturating_add(u64::from(queue.waiting));
        totals.oldest_wait_seconds = longer(totals.oldest_wait_seconds, queue.oldest_wait_seconds);
        queues.insert(
            &queue.queue,
            LiveQueue {
                queue: queue.queue.clone(),
                waiting: u64::from(queue.waiting),
                oldest_wait_seconds: queue.oldest_wait_seconds.map(round2),
                agents_on_call: 0,
            },
        );
    }

    let mut agents: Vec<LiveAgent> = Vec::with_capacity(snapshot.agents().len());
    for agent in snapshot.agents() {
        totals.count(agent.state);
        let queue = match agent.state {
            AgentState::OnCall => agent.queue.as_ref(),
            _ => None,
        };
        if let Some(queue) = queue {
            let entry = queues.entry(queue).or_insert_with(|| LiveQueue {
                queue: queue.clone(),
                waiting: 0,
                oldest_wait_seconds: None,
                agents_on_call: 0,
            });
            entry.agents_on_call = entry.agents_on_call.saturating_add(1);
        }
        agents.push(LiveAgent {
            name: names
                .get(&agent.agent_number)
                .map_or_else(|| agent.agent_number.to_string(), |name| (*name).to_owned()),
            now: AgentNow {
                queue: queue.cloned(),
                ..agent.clone()
            },
        });
    }
    agents.sort_by(|a, b| a.now.agent_number.cmp(&b.now.agent_number));
    totals.oldest_wait_seconds = totals.oldest_wait_seconds.map(round2);

    let mut queues: Vec<LiveQueue> = queues.into_values().collect();
    queues.sort_by(|a, b| {
        b.waiting
            .cmp(&a.waiting)
            .then_with(|| a.queue.cmp(&b.queue))
    });

    LiveFigures {
        as_of: snapshot.as_of(),
        totals,
        queues,
        agents,
    }
}

/// The longer of two waits, either possibly unknown.
fn longer(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::{LIVE_AS_OF as AS_OF, agent, agent_now, operator, queue, waiting};

    #[test]
    fn queues_go_by_waiting_descending_then_name_byte_wise() {
        let snapshot = LiveSnapshot::new(
            AS_OF,
            vec![
                waiting("b", 1, Some(1.0)),
                waiting("B", 1, Some(1.0)),
                waiting("a", 0, None),
                waiting("c", 5, Some(1.0)),
            ],
            Vec::new(),
        )
        .unwrap();
        let order: Vec<String> = live_figures(&snapshot, &[])
            .queues
            .iter()
            .map(|q| q.queue.to_string())
            .collect();
        assert_eq!(order, ["c", "B", "b", "a"]);
    }

    #[test]
    fn agents_on_call_of_a_queue_count_only_agents_on_call_of_it() {
        let at = AS_OF;
        let snapshot = LiveSnapshot::new(
            AS_OF,
            vec![waiting("sales", 0, None)],
            vec![
                agent_now("1", AgentState::OnCall, at, Some("sales")),
                agent_now("2", AgentState::OnCall, at, Some("sales")),
                agent_now("3", AgentState::WrapUp, at, Some("sales")),
                agent_now("4", AgentState::Available, at, Some("sales")),
                agent_now("5", AgentState::OnCall, at, None),
            ],
        )
        .unwrap();
        let response = live_figures(&snapshot, &[]);
        assert_eq!(response.queues.len(), 1);
        assert_eq!(response.queues[0].agents_on_call, 2);
        assert_eq!(response.totals.agents_in(AgentState::OnCall), 3);
        let queues: Vec<Option<&str>> = response
            .agents
            .iter()
            .map(|a| a.now.queue.as_ref().map(QueueName::as_str))
            .collect();
        assert_eq!(queues, [Some("sales"), Some("sales"), None, None, None]);
    }

    #[test]
    fn nobody_waiting_gives_a_null_oldest_wait_and_an_empty_snapshot_gives_zeros() {
        let snapshot = LiveSnapshot::new(AS_OF, vec![waiting("sales", 0, None)], Vec::new());
        let response = live_figures(&snapshot.unwrap(), &[]);
        assert_eq!(response.totals.waiting, 0);
        assert_eq!(response.totals.oldest_wait_seconds, None);
        let empty = live_figures(&LiveSnapshot::new(AS_OF, vec![], vec![]).unwrap(), &[]);
        assert!(empty.queues.is_empty() && empty.agents.is_empty());
        assert_eq!(empty.totals.waiting, 0);
        for state in AgentState::ALL {
            assert_eq!(empty.totals.agents_in(state), 0, "{state}");
        }
    }

    #[test]
    fn the_oldest_wait_of_the_totals_is_the_longest_queue_s_rounded_to_two_decimals() {
        let snapshot = LiveSnapshot::new(
            AS_OF,
            vec![
                waiting("a", 1, Some(9.999)),
                waiting("b", 1, Some(86_400.0)),
                waiting("c", 1, Some(0.004)),
            ],
            Vec::new(),
        )
        .unwrap();
        let response = live_figures(&snapshot, &[]);
        assert_eq!(response.totals.oldest_wait_seconds, Some(86_400.0));
        let waits: Vec<Option<f64>> = response
            .queues
            .iter()
            .map(|q| q.oldest_wait_seconds)
            .collect();
        assert_eq!(waits, [Some(10.0), Some(86_400.0), Some(0.0)]);
    }

    #[test]
    fn a_name_comes_from_the_first_roster_entry_of_the_agent_number() {
        let snapshot = LiveSnapshot::new(
            AS_OF,
            Vec::new(),
            vec![agent_now("7", AgentState::Away, AS_OF, None)],
        )
        .unwrap();
        let roster = [operator("7", "First", None), operator("7", "Second", None)];
        assert_eq!(live_figures(&snapshot, &roster).agents[0].name, "First");
        assert_eq!(live_figures(&snapshot, &[]).agents[0].name, "7");
    }

    #[test]
    fn a_snapshot_lists_each_queue_and_agent_once() {
        let twice = LiveSnapshot::new(
            AS_OF,
            vec![waiting("sales", 0, None), waiting("sales", 1, Some(2.0))],
            Vec::new(),
        );
        assert_eq!(twice, Err(LiveRuleBroken::RepeatedQueue(queue("sales"))));
        let twice = LiveSnapshot::new(
            AS_OF,
            Vec::new(),
            vec![
                agent_now("101", AgentState::Away, AS_OF, None),
                agent_now("101", AgentState::Available, AS_OF, None),
            ],
        );
        assert_eq!(twice, Err(LiveRuleBroken::RepeatedAgent(agent("101"))));
        // Queue names are compared exactly.
        assert!(
            LiveSnapshot::new(
                AS_OF,
                vec![waiting("sales", 0, None), waiting("Sales", 0, None)],
                Vec::new()
            )
            .is_ok()
        );
    }

    #[test]
    fn a_snapshot_holds_at_most_the_bounds_of_agents_and_queues() {
        let queues = |n: usize| (0..n).map(|i| waiting(&format!("q{i}"), 0, None)).collect();
        let agents = |n: usize| {
            (0..n)
                .map(|i| agent_now(&i.to_string(), AgentState::Away, AS_OF, None))
                .collect()
        };
        assert!(LiveSnapshot::new(AS_OF, queues(MAX_LIVE_QUEUES), agents(MAX_LIVE_AGENTS)).is_ok());
        assert_eq!(
            LiveSnapshot::new(AS_OF, queues(MAX_LIVE_QUEUES + 1), Vec::new()),
            Err(LiveRuleBroken::TooManyQueues { count: 1_001 })
        );
        assert_eq!(
            LiveSnapshot::new(AS_OF, Vec::new(), agents(MAX_LIVE_AGENTS + 1)),
            Err(LiveRuleBroken::TooManyAgents { count: 5_001 })
        );
    }

    #[test]
    fn the_oldest_wait_is_seconds_from_zero_to_a_day_exactly_when_someone_waits() {
        let one = |queue: QueueNow| LiveSnapshot::new(AS_OF, vec![queue], Vec::new());
        for seconds in [-0.01, 86_400.01, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(
                    one(waiting("q", 1, Some(seconds))),
                    Err(LiveRuleBroken::OldestWait { .. })
                ),
                "{seconds}"
            );
        }
        for (count, oldest) in [(0, Some(0.0)), (0, Some(3.0)), (2, None)] {
            let broken = one(waiting("q", count, oldest)).unwrap_err();
            assert!(
                matches!(broken, LiveRuleBroken::OldestWaitMismatch { .. }),
                "{count} {oldest:?}"
            );
            assert!(broken.to_string().contains("exactly when someone waits"));
        }
        for (count, oldest) in [(0, None), (1, Some(0.0)), (u32::MAX, Some(86_400.0))] {
            assert!(
                one(waiting("q", count, oldest)).is_ok(),
                "{count} {oldest:?}"
            );
        }
    }

    #[test]
    fn states_read_and_write_as_the_contract_names_them() {
        for state in AgentState::ALL {
            assert_eq!(state.as_str().parse::<AgentState>(), Ok(state));
            assert_eq!(serde_json::to_value(state).unwrap(), json!(state.as_str()));
        }
        for bad in ["On_Call", "oncall", "", "busy", "available "] {
            assert_eq!(bad.parse::<AgentState>(), Err(InvalidAgentState), "{bad}");
        }
    }

    #[test]
    fn totals_of_many_full_queues_do_not_overflow() {
        let queues = (0..MAX_LIVE_QUEUES)
            .map(|i| waiting(&format!("q{i}"), u32::MAX, Some(1.0)))
            .collect();
        let snapshot = LiveSnapshot::new(AS_OF, queues, Vec::new()).unwrap();
        assert_eq!(
            live_figures(&snapshot, &[]).totals.waiting,
            u64::from(u32::MAX) * 1_000
        );
    }
}
