//! /calls/agents: the agent leaderboard.

use callstats_domain::calendar::MAX_RANGE_DAYS;
use callstats_domain::limits::EarliestDay;
use callstats_domain::model::AgentNumber;
use callstats_domain::params::{ParamError, RosterFilter, SHIFT_FORM, Shift, TEAM_FORM, Team};
use callstats_domain::request::ApiRequest;
use callstats_domain::stats::agents::{AgentTally, Leaderboard};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::blocks::{Freshness, Period};
use crate::query::{self, ParamValues, PeriodQuery};

/// The body of /calls/agents.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AgentsResponse {
    /// The dates actually used (after the 31-day clamp).
    pub period: Period,
    /// Whether the period asked for was longer than 31 days and trimmed to its latest 31.
    pub clamped: bool,
    #[serde(flatten)]
    pub freshness: Freshness,
    /// By calls descending, then agent number.
    pub agents: Vec<AgentEntry>,
}

/// One entry of the agent leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AgentEntry {
    #[schema(value_type = crate::schemas::AgentNumber)]
    pub agent_number: AgentNumber,
    /// From the roster, else the agent number.
    pub name: String,
    /// The agent's calls in the period, both directions (with `queue`, the calls of that queue
    /// the agent answered); `inbound_calls + outbound_calls`.
    pub calls: u64,
    /// The agent's inbound calls in the period.
    pub inbound_calls: u64,
    /// The agent's outbound calls in the period.
    pub outbound_calls: u64,
    /// 100 × the agent's calls / the calls of all listed agents.
    pub share_percent: f64,
    /// The sum of the durations of the agent's calls.
    pub total_duration_seconds: f64,
    /// The sum of the durations of the agent's inbound calls.
    pub inbound_duration_seconds: f64,
    /// The sum of the durations of the agent's outbound calls.
    pub outbound_duration_seconds: f64,
    /// Total duration / calls, from the unrounded total.
    pub average_duration_seconds: f64,
    /// Mean wait of the agent's inbound calls that have one; null when none has.
    pub average_speed_of_answer_seconds: Option<f64>,
    /// Mean duration of the agent's inbound calls (talk time); null when the agent has none.
    pub average_handle_time_seconds: Option<f64>,
    /// (C·m + Σs) / (C + n): s are the agent's checklist scores (0 to 100) on calls in the
    /// period, n how many, m the mean of every scored call in the period (all agents) and C
    /// the prior weight (10 by default); an agent with no scored call gets m. Null when no call
    /// in the period was scored (or C is 0 and the agent has no scores).
    pub checklist_percent: Option<f64>,
    /// 100 × positive / n over the agent's scored calls in the period; null when the agent has
    /// none.
    pub positive_sentiment_percent: Option<f64>,
}

impl From<&Leaderboard> for AgentsResponse {
    fn from(board: &Leaderboard) -> Self {
        Self {
            period: Period::from(&board.range),
            clamped: board.range.clamped(),
            freshness: (&board.freshness).into(),
            agents: board
                .agents
                .iter()
                .map(|agent| AgentEntry::on(board, agent))
                .collect(),
        }
    }
}

impl AgentEntry {
    /// `agent`'s entry on `board`.
    #[must_use]
    pub fn on(board: &Leaderboard, agent: &AgentTally) -> Self {
        Self {
            agent_number: agent.agent_number.clone(),
            name: agent.name.clone(),
            calls: agent.calls,
            inbound_calls: agent.inbound_calls,
            outbound_calls: agent.outbound_calls(),
            share_percent: board.share_percent(agent),
            total_duration_seconds: agent.total_duration_seconds(),
            inbound_duration_seconds: agent.inbound_duration_seconds(),
            outbound_duration_seconds: agent.outbound_duration_seconds(),
            average_duration_seconds: agent.average_duration_seconds(),
            average_speed_of_answer_seconds: agent.average_speed_of_answer_seconds(),
            average_handle_time_seconds: agent.average_handle_time_seconds(),
            checklist_percent: board.checklist_percent(agent),
            positive_sentiment_percent: agent.positive_sentiment_percent(),
        }
    }
}

/// Query of /calls/agents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct AgentsQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    #[param(ignore)]
    pub period: PeriodQuery,
    /// Accepted and validated (a bad value is a 400) but ignored: the leaderboard counts both
    /// directions.
    #[param(value_type = Option<crate::schemas::Direction>, inline)]
    pub direction: ParamValues,
    /// Only the calls offered by this queue (exact, case-sensitive): the agents who answered
    /// them. A queue without calls in the period gives an empty list; empty is a 400.
    #[param(value_type = Option<String>, min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]+$", example = "sales")]
    pub queue: ParamValues,
    /// Only the agents of the roster with this team (exact, case-sensitive, as /operators
    /// shows it); `share_percent` is then over the listed agents. A team no operator has is a
    /// 400 listing the teams there are; empty is a 400.
    #[param(value_type = Option<String>, min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]+$", example = "A")]
    pub team: ParamValues,
    /// Only the agents of the roster on this shift (exact, case-sensitive, as /operators shows
    /// it), with `team` when both are given. A shift no operator has is a 400 listing the
    /// shifts there are; empty is a 400.
    #[param(value_type = Option<String>, min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]+$", example = "day")]
    pub shift: ParamValues,
}

impl AgentsQuery {
    /// The range; the direction is validated, so that one query string works on both call
    /// endpoints, but the leaderboard always counts both directions; the queue, the team and
    /// the shift; then the range against the history horizon (`earliest`, `None` without one).
    /// Whether the roster has the team and the shift is checked when answered.
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_RANGE_DAYS)?;
        query::direction(&self.direction)?;
        let queue = query::queue(&self.queue)?;
        let team = self.team.parsed("team", TEAM_FORM, Team::parse)?;
        let shift = self.shift.parsed("shift", SHIFT_FORM, Shift::parse)?;
        Ok(ApiRequest::CallsAgents {
            range: self.period.within_horizon(range, earliest)?,
            queue,
            roster: RosterFilter { team, shift },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{fields, names};
    use callstats_domain::call_day::CallDay;
    use callstats_domain::params::{Direction, RosterFilter};
    use callstats_domain::stats::{PriorWeight, agent_leaderboard};
    use callstats_domain::testing::{call, operator, range};

    #[test]
    fn an_entry_serialises_to_the_spec_fields_and_the_body_keeps_its_order() {
        let day = range("2026-11-01", "2026-11-01");
        let calls = [call(
            Direction::Outbound,
            Some("101"),
            "2026-11-01T10:00:00+05:00",
            12.346,
        )];
        let board = agent_leaderboard(
            &day,
            None,
            &RosterFilter::default(),
            &CallDay::split(&day, 0, &calls),
            &[],
            &[operator("101", "Oʻtkir Karimov", None)],
            PriorWeight::DEFAULT,
        );
        let body = serde_json::to_value(AgentsResponse::from(&board)).unwrap();
        assert_eq!(
            body["agents"][0],
            serde_json::json!({
                "agent_number": "101", "name": "Oʻtkir Karimov", "calls": 1, "inbound_calls": 0,
                "outbound_calls": 1, "share_percent": 100.0,
                "total_duration_seconds": 12.35, "inbound_duration_seconds": 0.0, "outbound_duration_seconds": 12.35,
                "average_duration_seconds": 12.35, "average_speed_of_answer_seconds": null,
                "average_handle_time_seconds": null, "checklist_percent": null, "positive_sentiment_percent": null
            })
        );
        let freshness = names(&Freshness::from(&board.freshness));
        let mut expected = vec!["period", "clamped"];
        expected.extend(freshness.iter().map(String::as_str));
        expected.push("agents");
        assert_eq!(fields(&body), expected);
    }
}
