//! Bench data: 31 days × 5,000 calls of ~80 agents in four queues, each with a wait, from a
//! fixed-seed generator (fastrand's).

use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::model::{AgentNumber, CallRecord, CallScore, QueueName, Sentiment};
use callstats_domain::params::Direction;

pub const CALLS_PER_DAY: u32 = 5_000;
pub const AGENTS: u32 = 80;

pub fn range() -> DateRange {
    let day = |raw| Day::parse(raw).unwrap();
    DateRange::up_to_31_days(day("2026-10-01"), day("2026-10-31")).unwrap()
}

pub fn calls() -> Vec<CallRecord> {
    let mut rng = fastrand::Rng::with_seed(0x9E37_79B9_7F4A_7C15);
    let agents: Vec<AgentNumber> = (0..AGENTS)
        .map(|i| AgentNumber::new(&(101 + i).to_string()).unwrap())
        .collect();
    let queues = ["support", "sales", "billing", "corporate"].map(|q| QueueName::new(q).unwrap());
    let (from, _) = range().unix_window();
    let mut calls = Vec::with_capacity(usize::try_from(31 * CALLS_PER_DAY).unwrap());
    for day in 0..31_i64 {
        for _ in 0..CALLS_PER_DAY {
            let second = i64::from(rng.u32(..86_400));
            let agent = rng.u32(..100);
            calls.push(CallRecord {
                direction: if rng.u32(..3) == 0 {
                    Direction::Outbound
                } else {
                    Direction::Inbound
                },
                agent_number: (agent < AGENTS)
                    .then(|| agents[usize::try_from(agent).unwrap()].clone()),
                started_at: from + day * 86_400 + second,
                duration_seconds: f64::from(rng.u32(..600_000)) / 1000.0,
                wait_seconds: Some(f64::from(rng.u32(..120_000)) / 1000.0),
                queue: Some(queues[usize::try_from(second % 4).unwrap()].clone()),
            });
        }
    }
    calls
}

pub fn scores(calls: &[CallRecord]) -> Vec<CallScore> {
    let mut rng = fastrand::Rng::with_seed(42);
    calls
        .iter()
        .step_by(10)
        .filter_map(|c| {
            Some(CallScore {
                agent_number: c.agent_number.clone()?,
                started_at: c.started_at,
                checklist_percent: f64::from(rng.u32(..101)),
                sentiment: rng
                    .choice([Sentiment::Positive, Sentiment::Neutral, Sentiment::Negative])
                    .unwrap(),
            })
        })
        .collect()
}
