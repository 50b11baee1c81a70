//! /calls/live: what is happening now, and the digest a stream compares answers by.

use callstats_domain::calendar::utc_millis;
use callstats_domain::live::{AgentState, LiveAgent, LiveBody, LiveFigures, LiveQueue};
use callstats_domain::model::{AgentNumber, QueueName};
use callstats_domain::tz::TASHKENT_LABEL;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use utoipa::ToSchema;

/// The body of /calls/live: what is happening now.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LiveResponse {
    /// When the call platform took these figures (UTC, to the millisecond).
    #[schema(format = DateTime, example = "2026-11-21T04:15:22.000Z")]
    pub as_of: String,
    /// Always `+05:00`, the service's time zone; the instants here are in UTC.
    #[schema(example = "+05:00")]
    pub timezone: &'static str,
    pub totals: LiveTotals,
    /// Every queue the platform reports, and every queue an agent is on a call of: by
    /// `waiting` descending, then name (byte-wise).
    pub queues: Vec<LiveQueueEntry>,
    /// Every agent the platform reports, by agent number (byte-wise).
    pub agents: Vec<LiveAgentEntry>,
}

/// The whole centre now.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct LiveTotals {
    /// Callers waiting in every queue together.
    pub waiting: u64,
    /// The longest of the queues' `oldest_wait_seconds`; null when nobody waits.
    pub oldest_wait_seconds: Option<f64>,
    /// Agents in state `available`.
    pub agents_available: u64,
    /// Agents in state `on_call`, whether or not their call's queue is known.
    pub agents_on_call: u64,
    /// Agents in state `wrap_up`.
    pub agents_wrap_up: u64,
    /// Agents in state `away`.
    pub agents_away: u64,
}

/// One queue now.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LiveQueueEntry {
    /// The queue's name, as the platform and the call records write it.
    #[schema(value_type = String, example = "sales")]
    pub queue: QueueName,
    /// Callers waiting in the queue; 0 for a queue the platform did not list but an agent is
    /// on a call of.
    pub waiting: u64,
    /// How long the caller who has waited longest in the queue has waited, in seconds; null
    /// when nobody waits.
    pub oldest_wait_seconds: Option<f64>,
    /// Agents on a call of this queue.
    pub agents_on_call: u64,
}

/// One agent now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LiveAgentEntry {
    #[schema(value_type = crate::schemas::AgentNumber)]
    pub agent_number: AgentNumber,
    /// The operator's name in the roster; the agent number when the roster does not list it.
    pub name: String,
    #[schema(value_type = crate::schemas::AgentState)]
    pub state: AgentState,
    /// When the agent entered `state` (UTC, to the millisecond).
    #[schema(format = DateTime, example = "2026-11-21T04:10:00.000Z")]
    pub since: String,
    /// The queue of the call an `on_call` agent is on; null in any other state, or when the
    /// platform does not say.
    #[schema(value_type = Option<String>, example = "sales")]
    pub queue: Option<QueueName>,
}

impl From<&LiveFigures> for LiveResponse {
    fn from(live: &LiveFigures) -> Self {
        let totals = &live.totals;
        Self {
            as_of: utc_millis(live.as_of),
            timezone: TASHKENT_LABEL,
            totals: LiveTotals {
                waiting: totals.waiting,
                oldest_wait_seconds: totals.oldest_wait_seconds,
                agents_available: totals.agents_in(AgentState::Available),
                agents_on_call: totals.agents_in(AgentState::OnCall),
                agents_wrap_up: totals.agents_in(AgentState::WrapUp),
                agents_away: totals.agents_in(AgentState::Away),
            },
            queues: live.queues.iter().map(LiveQueueEntry::from).collect(),
            agents: live.agents.iter().map(LiveAgentEntry::from).collect(),
        }
    }
}

impl From<&LiveQueue> for LiveQueueEntry {
    fn from(queue: &LiveQueue) -> Self {
        Self {
            queue: queue.queue.clone(),
            waiting: queue.waiting,
            oldest_wait_seconds: queue.oldest_wait_seconds,
            agents_on_call: queue.agents_on_call,
        }
    }
}

impl From<&LiveAgent> for LiveAgentEntry {
    fn from(LiveAgent { name, now }: &LiveAgent) -> Self {
        Self {
            agent_number: now.agent_number.clone(),
            name: name.clone(),
            state: now.state,
            since: utc_millis(now.since),
            queue: now.queue.clone(),
        }
    }
}

impl LiveResponse {
    /// A digest of everything but `as_of`: two answers show the same figures exactly when
    /// their digests are equal, which replicas compare without the answers themselves. A poll
    /// that finds the centre as it was is no change; a caller who is still waiting makes every
    /// poll a change, since their wait (`oldest_wait_seconds`) has grown.
    #[must_use]
    pub fn figures_digest(&self) -> String {
        let figures = Self {
            as_of: String::new(),
            ..self.clone()
        };
        // Strings and numbers: writing them cannot fail.
        let json = serde_json::to_vec(&figures).unwrap_or_default();
        Sha256::digest(&json)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// The answer's JSON, as every replica serves and streams it.
    #[must_use]
    pub fn body(&self) -> LiveBody {
        LiveBody::of(self)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use callstats_domain::live::{LiveSnapshot, live_figures};
    use callstats_domain::model::Operator;
    use callstats_domain::testing::{LIVE_AS_OF, live_example, live_roster, operator};

    fn answer(snapshot: &LiveSnapshot, roster: &[Operator]) -> LiveResponse {
        LiveResponse::from(&live_figures(snapshot, roster))
    }

    #[test]
    fn the_worked_example_serialises_every_field_in_order() {
        let body = serde_json::to_string(&answer(&live_example(), &live_roster())).unwrap();
        let expected = json!({
            "as_of": "2026-11-21T04:15:22.500Z",
            "timezone": "+05:00",
            "totals": {
                "waiting": 7,
                "oldest_wait_seconds": 41.5,
                "agents_available": 1,
                "agents_on_call": 3,
                "agents_wrap_up": 1,
                "agents_away": 1
            },
            "queues": [
                {"queue": "sales", "waiting": 3, "oldest_wait_seconds": 41.5, "agents_on_call": 1},
                {"queue": "corporate", "waiting": 2, "oldest_wait_seconds": 7.0, "agents_on_call": 0},
                {"queue": "support", "waiting": 2, "oldest_wait_seconds": 12.35, "agents_on_call": 0},
                {"queue": "billing", "waiting": 0, "oldest_wait_seconds": null, "agents_on_call": 0},
                {"queue": "vip", "waiting": 0, "oldest_wait_seconds": null, "agents_on_call": 1}
            ],
            "agents": [
                {"agent_number": "101", "name": "Aziza Karimova", "state": "available",
                 "since": "2026-11-21T04:10:00.000Z", "queue": null},
                {"agent_number": "102", "name": "Bobur Aliyev", "state": "on_call",
                 "since": "2026-11-21T04:13:00.250Z", "queue": "vip"},
                {"agent_number": "103", "name": "Dilnoza Rashidova", "state": "on_call",
                 "since": "2026-11-21T04:14:00.000Z", "queue": "sales"},
                {"agent_number": "104", "name": "104", "state": "away",
                 "since": "2026-11-21T03:00:00.000Z", "queue": null},
                {"agent_number": "105", "name": "Kamola Yusupova", "state": "on_call",
                 "since": "2026-11-21T04:15:10.000Z", "queue": null},
                {"agent_number": "99", "name": "Sardor Umarov", "state": "wrap_up",
                 "since": "2026-11-21T04:15:00.000Z", "queue": null}
            ]
        });
        // Compared as text, so the order of the fields is checked too.
        assert_eq!(body, expected.to_string());
    }

    #[test]
    fn an_empty_snapshot_gives_zeros_and_empty_lists() {
        let empty = answer(&LiveSnapshot::new(LIVE_AS_OF, vec![], vec![]).unwrap(), &[]);
        assert_eq!(
            serde_json::to_value(&empty).unwrap(),
            json!({
                "as_of": "2026-11-21T04:15:22.500Z", "timezone": "+05:00",
                "totals": {"waiting": 0, "oldest_wait_seconds": null, "agents_available": 0,
                           "agents_on_call": 0, "agents_wrap_up": 0, "agents_away": 0},
                "queues": [], "agents": []
            })
        );
    }

    #[test]
    fn the_same_figures_at_another_instant_are_no_change() {
        let roster = live_roster();
        let first = answer(&live_example(), &roster);
        let later = LiveSnapshot::new(
            LIVE_AS_OF + std::time::Duration::from_secs(2),
            live_example().queues().to_vec(),
            live_example().agents().to_vec(),
        )
        .unwrap();
        let second = answer(&later, &roster);
        assert_ne!(first.as_of, second.as_of);
        assert_eq!(first.figures_digest(), second.figures_digest());

        let mut waited = live_example().queues().to_vec();
        waited[0].oldest_wait_seconds = Some(14.0);
        let grown =
            LiveSnapshot::new(LIVE_AS_OF, waited, live_example().agents().to_vec()).unwrap();
        assert_ne!(
            first.figures_digest(),
            answer(&grown, &roster).figures_digest()
        );

        let mut moved = live_example().agents().to_vec();
        moved[1].state = AgentState::Away;
        let changed =
            LiveSnapshot::new(LIVE_AS_OF, live_example().queues().to_vec(), moved).unwrap();
        assert_ne!(
            first.figures_digest(),
            answer(&changed, &roster).figures_digest()
        );

        let renamed = [operator("101", "Aziza K.", None)];
        assert_ne!(
            first.figures_digest(),
            answer(&live_example(), &renamed).figures_digest()
        );
    }
}
