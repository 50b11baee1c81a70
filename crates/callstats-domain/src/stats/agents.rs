//! /calls/agents: the per-agent leaderboard with Bayesian-smoothed checklist scores.

use std::collections::{HashMap, HashSet};

use crate::calendar::DateRange;
use crate::call_day::CallDay;
use crate::model::{AgentNumber, CallScore, Operator, QueueName, Sentiment};
use crate::params::{Direction, RosterFilter};
use crate::stats::freshness::{Freshness, freshness};
use crate::stats::round::round2;

/// Weight `C` of the prior in the checklist score: how many calls' worth of the overall mean
/// an agent starts with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorWeight(f64);

/// A prior weight that is negative, not finite, or absurdly large.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("checklist prior weight must be a number from 0 to 1000000, got {0}")]
pub struct InvalidPriorWeight(pub f64);

impl PriorWeight {
    pub const DEFAULT: Self = Self(10.0);

    pub fn new(weight: f64) -> Result<Self, InvalidPriorWeight> {
        if weight.is_finite() && (0.0..=1_000_000.0).contains(&weight) {
            Ok(Self(weight))
        } else {
            Err(InvalidPriorWeight(weight))
        }
    }

    #[must_use]
    pub const fn get(self) -> f64 {
        self.0
    }
}

impl Default for PriorWeight {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One listed agent's calls and scores in the period: what each figure of the leaderboard is
/// computed from (by [`AgentTally`]'s and [`Leaderboard`]'s methods).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTally {
    pub agent_number: AgentNumber,
    /// From the roster, else the agent number.
    pub name: String,
    /// Both directions.
    pub calls: u64,
    pub inbound_calls: u64,
    /// The agent's inbound calls with a wait, and the sum of their waits.
    inbound_with_wait: u64,
    inbound_wait_sum: f64,
    /// The longest of those waits: the mean is kept at or below it.
    inbound_longest_wait: f64,
    inbound_seconds: f64,
    outbound_seconds: f64,
    /// The agent's checklist scores in the period: their sum and count, and how many were
    /// positive.
    score_sum: f64,
    scored: u64,
    positive: u64,
}

impl AgentTally {
    fn new(agent_number: AgentNumber) -> Self {
        Self {
            name: agent_number.to_string(),
            agent_number,
            calls: 0,
            inbound_calls: 0,
            inbound_with_wait: 0,
            inbound_wait_sum: 0.0,
            inbound_longest_wait: 0.0,
            inbound_seconds: 0.0,
            outbound_seconds: 0.0,
            score_sum: 0.0,
            scored: 0,
            positive: 0,
        }
    }

    #[must_use]
    pub const fn outbound_calls(&self) -> u64 {
        self.calls.saturating_sub(self.inbound_calls)
    }

    #[must_use]
    pub fn total_duration_seconds(&self) -> f64 {
        round2(self.inbound_seconds + self.outbound_seconds)
    }

    #[must_use]
    pub fn inbound_duration_seconds(&self) -> f64 {
        round2(self.inbound_seconds)
    }

    #[must_use]
    pub fn outbound_duration_seconds(&self) -> f64 {
        round2(self.outbound_seconds)
    }

    /// From the unrounded total.
    #[must_use]
    pub fn average_duration_seconds(&self) -> f64 {
        round2((self.inbound_seconds + self.outbound_seconds) / count_f64(self.calls))
    }

    /// The mean wait of the inbound calls that have one.
    #[must_use]
    pub fn average_speed_of_answer_seconds(&self) -> Option<f64> {
        // A mean is never above the largest of its terms, whatever the float sum's last bit.
        (self.inbound_with_wait > 0).then(|| {
            round2(
                (self.inbound_wait_sum / count_f64(self.inbound_with_wait))
                    .min(self.inbound_longest_wait),
            )
        })
    }

    /// The mean duration of the inbound calls.
    #[must_use]
    pub fn average_handle_time_seconds(&self) -> Option<f64> {
        (self.inbound_calls > 0)
            .then(|| round2(self.inbound_seconds / count_f64(self.inbound_calls)))
    }

    /// 100 × positive / scored.
    #[must_use]
    pub fn positive_sentiment_percent(&self) -> Option<f64> {
        (self.scored > 0).then(|| round2(100.0 * count_f64(self.positive) / count_f64(self.scored)))
    }
}

/// The leaderboard of a period: a tally per listed agent, by calls descending then agent number,
/// and what the agents' shares and smoothed scores are taken over.
#[derive(Debug, Clone, PartialEq)]
pub struct Leaderboard {
    pub range: DateRange,
    pub freshness: Freshness,
    pub agents: Vec<AgentTally>,
    /// The calls of all listed agents.
    listed_calls: u64,
    /// The mean of every checklist score in the period (all agents); `None` when none.
    overall_checklist: Option<f64>,
    prior: PriorWeight,
}

impl Leaderboard {
    /// 100 × the agent's calls / the calls of all listed agents.
    #[must_use]
    pub fn share_percent(&self, agent: &AgentTally) -> f64 {
        round2(100.0 * count_f64(agent.calls) / count_f64(self.listed_calls))
    }

    /// (C·m + Σs) / (C + n) over the agent's scores.
    #[must_use]
    pub fn checklist_percent(&self, agent: &AgentTally) -> Option<f64> {
        let (c, scored) = (self.prior.get(), count_f64(agent.scored));
        self.overall_checklist
            .filter(|_| c + scored > 0.0)
            .map(|m| round2((c * m + agent.score_sum) / (c + scored)))
    }
}

/// Builds the leaderboard of the agents with at least one call in `range`, both directions
/// (only the calls `queue` offered, when one is given; only the agents of the roster whom
/// `filter` admits, when it narrows the list).
///
/// - Calls without an agent and days outside the range are left out; so are, with a `queue`,
///   the calls of other queues or of none (outbound calls have none). Checklist scores are
///   the agent's over the period, whatever the queue: a score names no queue.
/// - `share_percent` = 100 × agent calls / calls of all listed agents.
/// - `checklist_percent` = (C·m + Σs) / (C + n): `s` the agent's scores in the range, `n` their
///   count, `m` the mean of every score in the range, `C` the prior weight; null when no call
///   in the range was scored (or when C + n is 0).
/// - `positive_sentiment_percent` = 100 × positive / n; null when the agent has no scored call.
/// - Name from the roster, else the agent number. Ordered by calls descending, then agent
///   number.
///
/// Durations are summed in the order of the days and of the calls within each day.
#[must_use]
pub fn agent_leaderboard<D: AsRef<CallDay>>(
    range: &DateRange,
    queue: Option<&QueueName>,
    filter: &RosterFilter,
    days: &[D],
    scores: &[CallScore],
    roster: &[Operator],
    prior: PriorWeight,
) -> Leaderboard {
    let (from, to) = range.unix_window();
    let in_range = |at: i64| (from..to).contains(&at);

    let mut tallies: HashMap<&str, AgentTally> = HashMap::new();
    for day in days.iter().map(AsRef::as_ref) {
        if !(range.start()..=range.end()).contains(&day.day()) {
            continue;
        }
        // `Some(None)`: the queue asked for has no call this day.
        let wanted = queue.map(|queue| day.queue_index(queue));
        if wanted == Some(None) {
            continue;
        }
        for &call in day.calls() {
            if wanted.is_some_and(|index| call.queue_index() != index) {
                continue;
            }
            let Some(agent) = day.agent_of(call) else {
                continue;
            };
            let tally = tallies
                .entry(agent.as_str())
                .or_insert_with(|| AgentTally::new(agent.clone()));
            tally.calls += 1;
            match call.direction() {
                Direction::Inbound => {
                    tally.inbound_calls += 1;
                    tally.inbound_seconds += call.duration_seconds();
                    if let Some(wait) = call.wait_seconds() {
                        tally.inbound_with_wait += 1;
                        tally.inbound_wait_sum += wait;
                        tally.inbound_longest_wait = tally.inbound_longest_wait.max(wait);
                    }
                }
                Direction::Outbound => tally.outbound_seconds += call.duration_seconds(),
            }
        }
    }

    let (mut all_sum, mut all_count) = (0.0, 0_u64);
    for score in scores.iter().filter(|s| in_range(s.started_at)) {
        all_sum += score.checklist_percent;
        all_count += 1;
        if let Some(tally) = tallies.get_mut(score.agent_number.as_str()) {
            tally.score_sum += score.checklist_percent;
            tally.scored += 1;
            tally.positive += u64::from(score.sentiment == Sentiment::Positive);
        }
    }

    for operator in roster {
        if let Some(tally) = tallies.get_mut(operator.agent_number.as_str()) {
            tally.name.clone_from(&operator.name);
        }
    }
    if filter.is_set() {
        let admitted: HashSet<&str> = roster
            .iter()
            .filter(|o| filter.admits(&o.team, &o.shift))
            .map(|o| o.agent_number.as_str())
            .collect();
        tallies.retain(|agent, _| admitted.contains(agent));
    }
    let mut agents: Vec<AgentTally> = tallies.into_values().collect();
    agents.sort_by(|a, b| {
        b.calls
            .cmp(&a.calls)
            .then_with(|| a.agent_number.cmp(&b.agent_number))
    });
    Leaderboard {
        range: *range,
        freshness: freshness(range, days),
        listed_calls: agents.iter().map(|t| t.calls).sum(),
        overall_checklist: (all_count > 0).then(|| all_sum / count_f64(all_count)),
        prior,
        agents,
    }
}

/// Counts are far below 2^53, so this conversion is exact.
fn count_f64(n: u64) -> f64 {
    u32::try_from(n).map_or_else(|_| f64::from(u32::MAX), f64::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CallRecord;

    use crate::testing::{CallExt, call, operator, range, score};

    const DAY: &str = "2026-11-01";
    const AT: &str = "2026-11-01T10:00:00+05:00";

    /// An inbound call of `agent` at [`AT`], lasting `seconds`.
    fn inbound(agent: &str, seconds: f64) -> CallRecord {
        call(Direction::Inbound, Some(agent), AT, seconds)
    }

    /// The leaderboard of `calls` on [`DAY`], whatever the queue and the roster filter.
    fn board(calls: &[CallRecord], scores: &[CallScore]) -> Leaderboard {
        Board::default().of(calls, scores)
    }

    /// The arguments of [`agent_leaderboard`] that a test varies, over [`DAY`].
    struct Board<'a> {
        queue: Option<&'a str>,
        filter: RosterFilter,
        roster: Vec<Operator>,
        prior: PriorWeight,
    }

    impl Default for Board<'_> {
        fn default() -> Self {
            Self {
                queue: None,
                filter: RosterFilter::default(),
                roster: vec![operator("101", "Oʻtkir Karimov", None)],
                prior: PriorWeight::DEFAULT,
            }
        }
    }

    impl Board<'_> {
        fn of(&self, calls: &[CallRecord], scores: &[CallScore]) -> Leaderboard {
            let queue = self.queue.map(|q| QueueName::new(q).unwrap());
            agent_leaderboard(
                &range(DAY, DAY),
                queue.as_ref(),
                &self.filter,
                &CallDay::split(&range(DAY, DAY), 0, calls),
                scores,
                &self.roster,
                self.prior,
            )
        }
    }

    #[test]
    fn leaderboard_counts_both_directions_and_splits_durations() {
        let calls = [
            inbound("101", 100.0),
            call(Direction::Outbound, Some("101"), AT, 50.5),
            inbound("101", 10.0),
        ];
        let entry = &board(&calls, &[]).agents[0];
        assert_eq!(entry.calls, 3);
        assert_eq!(entry.inbound_duration_seconds(), 110.0);
        assert_eq!(entry.outbound_duration_seconds(), 50.5);
        assert_eq!(entry.total_duration_seconds(), 160.5);
        assert_eq!(entry.average_duration_seconds(), 53.5);
        assert_eq!((entry.inbound_calls, entry.outbound_calls()), (2, 1));
        assert_eq!(entry.average_handle_time_seconds(), Some(55.0));
    }

    #[test]
    fn a_team_or_shift_lists_only_its_agents_and_shares_over_them() {
        let on = |agent: &str, team: &str, shift: &str| Operator {
            team: team.into(),
            shift: shift.into(),
            ..operator(agent, agent, None)
        };
        let roster = [
            on("101", "A", "day"),
            on("102", "B", "day"),
            on("103", "A", "night"),
        ];
        let calls = [
            inbound("101", 10.0),
            inbound("102", 10.0),
            inbound("103", 10.0),
            inbound("103", 10.0),
            inbound("999", 10.0),
        ];
        let listed = |team: Option<&str>, shift: Option<&str>| {
            let filter = RosterFilter {
                team: team.map(|t| crate::params::Team::parse(t).unwrap()),
                shift: shift.map(|s| crate::params::Shift::parse(s).unwrap()),
            };
            let board = Board {
                filter,
                roster: roster.to_vec(),
                ..Board::default()
            }
            .of(&calls, &[]);
            board
                .agents
                .iter()
                .map(|e| (e.agent_number.to_string(), board.share_percent(e)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            listed(Some("A"), None),
            [("103".to_owned(), 66.67), ("101".to_owned(), 33.33)]
        );
        assert_eq!(
            listed(Some("A"), Some("night")),
            [("103".to_owned(), 100.0)]
        );
        assert_eq!(
            listed(None, Some("day")),
            [("101".to_owned(), 50.0), ("102".to_owned(), 50.0)]
        );
        // Unfiltered, the agent off the roster is listed too.
        assert_eq!(listed(None, None).len(), 4);
    }

    #[test]
    fn speed_of_answer_is_the_mean_wait_of_the_agents_inbound_calls_with_one() {
        let calls = [
            inbound("101", 100.0).waited(4.5),
            inbound("101", 20.0).waited(20.0),
            inbound("101", 30.0),
            call(Direction::Outbound, Some("101"), AT, 50.0),
        ];
        let entry = &board(&calls, &[]).agents[0];
        assert_eq!(entry.average_speed_of_answer_seconds(), Some(12.25));
        assert_eq!(entry.average_handle_time_seconds(), Some(50.0));
        let unwaited = &board(&[inbound("101", 9.0)], &[]).agents[0];
        assert_eq!(unwaited.average_speed_of_answer_seconds(), None);
        assert_eq!(unwaited.average_handle_time_seconds(), Some(9.0));
    }

    #[test]
    fn average_duration_is_computed_from_the_unrounded_total() {
        let calls = [
            inbound("101", 0.004),
            inbound("101", 0.004),
            inbound("101", 0.004),
        ];
        let entry = &board(&calls, &[]).agents[0];
        assert_eq!(
            (
                entry.total_duration_seconds(),
                entry.average_duration_seconds()
            ),
            (0.01, 0.0)
        );
    }

    #[test]
    fn calls_without_agent_and_outside_the_period_are_left_out() {
        let calls = [
            call(Direction::Inbound, None, AT, 10.0),
            call(
                Direction::Inbound,
                Some("102"),
                "2026-11-02T10:00:00+05:00",
                10.0,
            ),
            inbound("101", 10.0),
        ];
        let board = board(&calls, &[]);
        assert_eq!(board.agents.len(), 1);
        assert_eq!(board.share_percent(&board.agents[0]), 100.0);
    }

    #[test]
    fn share_is_percent_of_the_listed_agents_calls() {
        let calls = [
            inbound("101", 1.0),
            inbound("102", 1.0),
            inbound("102", 1.0),
            call(Direction::Inbound, None, AT, 1.0),
        ];
        let board = board(&calls, &[]);
        let shares: Vec<f64> = board
            .agents
            .iter()
            .map(|e| board.share_percent(e))
            .collect();
        assert_eq!(shares, [66.67, 33.33]);
    }

    #[test]
    fn name_comes_from_the_roster_or_falls_back_to_the_agent_number() {
        let calls = [inbound("101", 1.0), inbound("999", 1.0)];
        let names: Vec<String> = board(&calls, &[])
            .agents
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["Oʻtkir Karimov", "999"]);
    }

    #[test]
    fn leaderboard_orders_by_calls_then_agent_number() {
        let calls = [
            inbound("30", 1.0),
            inbound("200", 1.0),
            inbound("101", 1.0),
            inbound("101", 1.0),
        ];
        let order: Vec<String> = board(&calls, &[])
            .agents
            .into_iter()
            .map(|e| e.agent_number.to_string())
            .collect();
        assert_eq!(order, ["101", "200", "30"]);
    }

    #[test]
    fn checklist_is_smoothed_toward_the_mean_of_every_scored_call() {
        // m = (100 + 50 + 60) / 3 = 70; agent 101: (10·70 + 100) / (10 + 1) = 72.727…
        let calls = [inbound("101", 1.0), inbound("102", 1.0)];
        let scores = [
            score("101", AT, 100.0, Sentiment::Positive),
            score("102", AT, 50.0, Sentiment::Negative),
            score("103", AT, 60.0, Sentiment::Neutral),
        ];
        let board = board(&calls, &scores);
        assert_eq!(board.checklist_percent(&board.agents[0]), Some(72.73));
        // 102: (700 + 50) / 11 = 68.18
        assert_eq!(board.checklist_percent(&board.agents[1]), Some(68.18));
    }

    #[test]
    fn agent_without_scores_gets_the_overall_mean_and_null_sentiment() {
        let calls = [inbound("101", 1.0), inbound("102", 1.0)];
        let scores = [score("101", AT, 80.0, Sentiment::Positive)];
        let board = board(&calls, &scores);
        let unscored = board
            .agents
            .iter()
            .find(|e| e.agent_number.as_str() == "102")
            .unwrap();
        assert_eq!(board.checklist_percent(unscored), Some(80.0));
        assert_eq!(unscored.positive_sentiment_percent(), None);
    }

    #[test]
    fn checklist_and_sentiment_are_null_when_nobody_was_scored_in_the_period() {
        let calls = [inbound("101", 1.0)];
        let scores = [score(
            "101",
            "2026-10-31T10:00:00+05:00",
            90.0,
            Sentiment::Positive,
        )];
        let board = board(&calls, &scores);
        let entry = &board.agents[0];
        assert_eq!(
            (
                board.checklist_percent(entry),
                entry.positive_sentiment_percent()
            ),
            (None, None)
        );
    }

    #[test]
    fn prior_weight_is_configurable() {
        let calls = [inbound("101", 1.0), inbound("102", 1.0)];
        let scores = [
            score("101", AT, 100.0, Sentiment::Positive),
            score("102", AT, 0.0, Sentiment::Negative),
        ];
        let first = |c| {
            let board = Board {
                prior: PriorWeight::new(c).unwrap(),
                ..Board::default()
            }
            .of(&calls, &scores);
            board.checklist_percent(&board.agents[0])
        };
        // C = 0: the raw mean of the agent's own scores.
        assert_eq!(first(0.0), Some(100.0));
        // C = 2: (2·50 + 100) / 3.
        assert_eq!(first(2.0), Some(66.67));
        assert!(PriorWeight::new(-1.0).is_err());
        assert!(PriorWeight::new(f64::NAN).is_err());
    }

    #[test]
    fn a_queue_keeps_the_agents_who_answered_its_calls_and_only_those_calls() {
        let queued = |agent: &str, queue: Option<&str>| {
            let mut record = call(Direction::Inbound, Some(agent), AT, 10.0);
            record.queue = queue.map(|q| QueueName::new(q).unwrap());
            record
        };
        let calls = [
            queued("101", Some("sales")),
            queued("101", Some("support")),
            queued("102", Some("support")),
            queued("103", None),
            call(Direction::Outbound, Some("101"), AT, 10.0),
        ];
        let board = |queue: &str| {
            let board = Board {
                queue: Some(queue),
                ..Board::default()
            }
            .of(&calls, &[]);
            board
                .agents
                .iter()
                .map(|e| (e.agent_number.to_string(), e.calls, board.share_percent(e)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            board("support"),
            [("101".to_owned(), 1, 50.0), ("102".to_owned(), 1, 50.0)]
        );
        assert_eq!(board("sales"), [("101".to_owned(), 1, 100.0)]);
        assert!(board("Sales").is_empty(), "queues are case-sensitive");
    }

    #[test]
    fn positive_sentiment_is_the_share_of_positive_scored_calls() {
        let calls = [inbound("101", 1.0)];
        let scores = [
            score("101", AT, 90.0, Sentiment::Positive),
            score("101", AT, 90.0, Sentiment::Neutral),
            score("101", AT, 90.0, Sentiment::Negative),
        ];
        assert_eq!(
            board(&calls, &scores).agents[0].positive_sentiment_percent(),
            Some(33.33)
        );
    }
}
