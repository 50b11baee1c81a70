//! The contract's optional `GET {base}/live` on the wire (docs/call-platform.md, "What is happening
//! now"), both sides: the answer the adapter reads into the domain's [`LiveSnapshot`], and the
//! answer the sim writes.
//!
//! ```text
//! 200 {"as_of": "2026-11-21T09:15:22+05:00",
//!      "queues": [{"queue": "sales", "waiting": 3, "oldest_wait_seconds": 41.5}],
//!      "agents": [{"agent_number": "101", "state": "available",
//!                  "since": "2026-11-21T09:10:00+05:00", "queue": null}]}
//! 404: the platform reports no live figures.
//! ```

use std::borrow::Cow;

use callstats_domain::live::{AgentNow, AgentState, LiveSnapshot, QueueNow};
use callstats_domain::model::{AgentNumber, QueueName};
use callstats_domain::tz;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::{Text, clip, format_instant, parse_instant};

/// The largest `/live` body accepted: the largest answer the contract allows, every name at its
/// longest, takes well under half of it written plainly; the rest leaves room for indentation,
/// escapes and fields the adapter ignores (docs/call-platform.md).
pub const MAX_LIVE_BYTES: usize = 4 * 1024 * 1024;

/// The answer as the upstream sends it; unknown fields are ignored. Strings borrow from the
/// body where they can.
#[derive(Debug, Deserialize)]
pub(crate) struct LiveIn<'a> {
    #[serde(borrow)]
    as_of: Cow<'a, str>,
    #[serde(borrow)]
    queues: Vec<QueueIn<'a>>,
    #[serde(borrow)]
    agents: Vec<AgentIn<'a>>,
}

#[derive(Debug, Deserialize)]
struct QueueIn<'a> {
    #[serde(borrow)]
    queue: Cow<'a, str>,
    /// Read wide, so that a negative count is refused with its reason rather than as bad JSON.
    waiting: i64,
    /// Null (or missing) when nobody waits.
    #[serde(default)]
    oldest_wait_seconds: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct AgentIn<'a> {
    #[serde(borrow)]
    agent_number: Cow<'a, str>,
    #[serde(borrow)]
    state: Cow<'a, str>,
    #[serde(borrow)]
    since: Cow<'a, str>,
    /// Null (or missing) when the agent is on no call or its queue is unknown.
    #[serde(default, borrow)]
    queue: Option<Text<'a>>,
}

impl LiveIn<'_> {
    /// The domain's snapshot, or the first thing in the answer that breaks the contract.
    pub(crate) fn to_snapshot(&self) -> Result<LiveSnapshot, String> {
        let as_of = parse_instant(&self.as_of).map_err(|e| {
            format!(
                "as_of {:?} is not an RFC 3339 date-time ({e})",
                clip(&self.as_of)
            )
        })?;
        let queues = self
            .queues
            .iter()
            .enumerate()
            .map(|(index, queue)| queue.to_queue(index))
            .collect::<Result<Vec<_>, _>>()?;
        let agents = self
            .agents
            .iter()
            .enumerate()
            .map(|(index, agent)| agent.to_agent(index))
            .collect::<Result<Vec<_>, _>>()?;
        LiveSnapshot::new(as_of, queues, agents).map_err(|broken| broken.to_string())
    }
}

impl QueueIn<'_> {
    fn to_queue(&self, index: usize) -> Result<QueueNow, String> {
        let queue = QueueName::new(&self.queue)
            .map_err(|e| format!("queues[{index}]: queue {:?}: {e}", clip(&self.queue)))?;
        let waiting = u32::try_from(self.waiting).map_err(|_| {
            format!(
                "queues[{index}] ({:?}): waiting {} is not a count from 0 to {}",
                clip(&self.queue),
                self.waiting,
                u32::MAX
            )
        })?;
        Ok(QueueNow {
            queue,
            waiting,
            oldest_wait_seconds: self.oldest_wait_seconds,
        })
    }
}

impl AgentIn<'_> {
    fn to_agent(&self, index: usize) -> Result<AgentNow, String> {
        let number = clip(&self.agent_number);
        let agent_number = AgentNumber::new(&self.agent_number)
            .map_err(|e| format!("agents[{index}]: agent_number {number:?}: {e}"))?;
        let state = self.state.parse::<AgentState>().map_err(|e| {
            format!(
                "agents[{index}] ({number:?}): state {:?}: {e}",
                clip(&self.state)
            )
        })?;
        let since = parse_instant(&self.since).map_err(|e| {
            format!(
                "agents[{index}] ({number:?}): since {:?} is not an RFC 3339 date-time ({e})",
                clip(&self.since)
            )
        })?;
        let queue = match &self.queue {
            None => None,
            Some(Text(raw)) => Some(QueueName::new(raw).map_err(|e| {
                format!("agents[{index}] ({number:?}): queue {:?}: {e}", clip(raw))
            })?),
        };
        Ok(AgentNow {
            agent_number,
            state,
            since,
            queue,
        })
    }
}

/// The answer as the sim writes it, instants in Tashkent's offset.
#[derive(Debug, Serialize)]
pub struct LiveOut<'a> {
    pub as_of: String,
    pub queues: Vec<QueueOut<'a>>,
    pub agents: Vec<AgentOut<'a>>,
}

#[derive(Debug, Serialize)]
pub struct QueueOut<'a> {
    pub queue: &'a str,
    pub waiting: u32,
    pub oldest_wait_seconds: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct AgentOut<'a> {
    pub agent_number: &'a str,
    pub state: AgentState,
    pub since: String,
    pub queue: Option<&'a str>,
}

impl<'a> LiveOut<'a> {
    /// `snapshot` as the contract writes it.
    pub fn of(snapshot: &'a LiveSnapshot) -> Result<Self, time::error::Format> {
        let local = |at: OffsetDateTime| format_instant(at.to_offset(tz::TASHKENT));
        Ok(Self {
            as_of: local(snapshot.as_of())?,
            queues: snapshot
                .queues()
                .iter()
                .map(|queue| QueueOut {
                    queue: queue.queue.as_str(),
                    waiting: queue.waiting,
                    oldest_wait_seconds: queue.oldest_wait_seconds,
                })
                .collect(),
            agents: snapshot
                .agents()
                .iter()
                .map(|agent| {
                    Ok(AgentOut {
                        agent_number: agent.agent_number.as_str(),
                        state: agent.state,
                        since: local(agent.since)?,
                        queue: agent.queue.as_ref().map(QueueName::as_str),
                    })
                })
                .collect::<Result<_, time::error::Format>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use time::macros::datetime;

    use super::*;

    fn snapshot(body: &serde_json::Value) -> Result<LiveSnapshot, String> {
        let text = body.to_string();
        let live: LiveIn<'_> = serde_json::from_str(&text).map_err(|e| format!("json: {e}"))?;
        live.to_snapshot()
    }

    fn good() -> serde_json::Value {
        json!({
            "as_of": "2026-11-21T09:15:22+05:00",
            "queues": [{"queue": "sales", "waiting": 3, "oldest_wait_seconds": 41.5}],
            "agents": [{"agent_number": "101", "state": "on_call",
                        "since": "2026-11-21T09:10:00+05:00", "queue": "sales"}]
        })
    }

    #[test]
    fn the_contract_s_example_reads_into_the_snapshot() {
        let read = snapshot(&good()).unwrap();
        assert_eq!(read.as_of(), datetime!(2026-11-21 09:15:22 +05:00));
        assert_eq!(read.queues()[0].queue.as_str(), "sales");
        assert_eq!(read.queues()[0].waiting, 3);
        assert_eq!(read.queues()[0].oldest_wait_seconds, Some(41.5));
        let agent = &read.agents()[0];
        assert_eq!(agent.agent_number.as_str(), "101");
        assert_eq!(agent.state, AgentState::OnCall);
        assert_eq!(agent.since, datetime!(2026-11-21 04:10:00 UTC));
        assert_eq!(agent.queue.as_ref().map(QueueName::as_str), Some("sales"));
    }

    #[test]
    fn the_sim_s_answer_reads_back_as_the_same_snapshot() {
        let read = snapshot(&good()).unwrap();
        let written = serde_json::to_string(&LiveOut::of(&read).unwrap()).unwrap();
        let live: LiveIn<'_> = serde_json::from_str(&written).unwrap();
        assert_eq!(live.to_snapshot().unwrap(), read);
        assert!(
            written.contains(r#""as_of":"2026-11-21T09:15:22+05:00""#),
            "{written}"
        );
    }

    #[test]
    fn each_broken_rule_names_where_it_is() {
        for (pointer, value, expected) in [
            ("/as_of", json!("2026-11-21 09:15"), "as_of"),
            ("/queues/0/waiting", json!(-1), "queues[0]"),
            ("/queues/0/queue", json!(""), "queues[0]: queue"),
            ("/agents/0/state", json!("lunch"), "state \"lunch\""),
            ("/agents/0/since", json!("yesterday"), "since"),
            ("/agents/0/agent_number", json!("1 0"), "agent_number"),
            ("/agents/0/queue", json!("q\u{7}"), "agents[0]"),
            (
                "/queues/0/oldest_wait_seconds",
                json!(null),
                "exactly when someone waits",
            ),
        ] {
            let mut body = good();
            *body.pointer_mut(pointer).unwrap() = value;
            let error = snapshot(&body).unwrap_err();
            assert!(error.contains(expected), "{pointer}: {error}");
        }
    }

    #[test]
    fn a_count_is_a_whole_number_and_a_missing_field_is_no_answer() {
        for (field, value) in [("waiting", json!(1.5)), ("waiting", json!("3"))] {
            let mut body = good();
            body["queues"][0][field] = value;
            assert!(snapshot(&body).unwrap_err().starts_with("json:"));
        }
        for missing in ["as_of", "queues", "agents"] {
            let mut body = good();
            body.as_object_mut().unwrap().remove(missing);
            assert!(
                snapshot(&body).unwrap_err().starts_with("json:"),
                "{missing}"
            );
        }
        let mut body = good();
        body["agents"][0].as_object_mut().unwrap().remove("state");
        assert!(snapshot(&body).unwrap_err().starts_with("json:"));
    }

    #[test]
    fn absent_optional_fields_read_as_null_and_unknown_ones_are_ignored() {
        let read = snapshot(&json!({
            "as_of": "2026-11-21T04:15:22Z", "extra": [1, 2],
            "queues": [{"queue": "sales", "waiting": 0, "colour": "red"}],
            "agents": [{"agent_number": "101", "state": "away",
                        "since": "2026-11-20T23:59:60+05:00"}]
        }))
        .unwrap();
        assert_eq!(read.queues()[0].oldest_wait_seconds, None);
        assert_eq!(read.agents()[0].queue, None);
        assert_eq!(
            read.agents()[0].since,
            datetime!(2026-11-20 23:59:59 +05:00),
            "a leap second is read as the second before it"
        );
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1024))]

            #[test]
            fn arbitrary_bytes_never_panic_the_live_parser(body in proptest::collection::vec(any::<u8>(), 0..300)) {
                if let Ok(live) = serde_json::from_slice::<LiveIn<'_>>(&body) {
                    let _ = live.to_snapshot();
                }
            }
        }
    }
}
