//! Bench data: 31 days × 5,000 calls of ~80 agents, from a fixed-seed generator.

use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::model::{AgentNumber, CallRecord, CallScore, Sentiment};
use callstats_domain::params::Direction;

pub const CALLS_PER_DAY: u32 = 5_000;
pub const AGENTS: u32 = 80;

pub fn range() -> DateRange {
    let day = |raw| Day::parse(raw).unwrap();
    DateRange::new(day("2026-10-01"), day("2026-10-31")).unwrap()
}

/// xorshift64*: deterministic, good enough to spread calls.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u32) -> u32 {
        u32::try_from(self.next() % u64::from(n)).unwrap()
    }
}

pub fn calls() -> Vec<CallRecord> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let agents: Vec<AgentNumber> = (0..AGENTS)
        .map(|i| AgentNumber::new(&(101 + i).to_string()).unwrap())
        .collect();
    let (from, _) = range().unix_window();
    let mut calls = Vec::with_capacity(usize::try_from(31 * CALLS_PER_DAY).unwrap());
    for day in 0..31_i64 {
        for _ in 0..CALLS_PER_DAY {
            let second = i64::from(rng.below(86_400));
            let agent = rng.below(100);
            calls.push(CallRecord {
                direction: if rng.below(3) == 0 {
                    Direction::Outbound
                } else {
                    Direction::Inbound
                },
                agent_number: (agent < AGENTS)
                    .then(|| agents[usize::try_from(agent).unwrap()].clone()),
                started_at: from + day * 86_400 + second,
                duration_seconds: f64::from(rng.below(600_000)) / 1000.0,
            });
        }
    }
    calls
}

pub fn scores(calls: &[CallRecord]) -> Vec<CallScore> {
    let mut rng = Rng(42);
    calls
        .iter()
        .step_by(10)
        .filter_map(|c| {
            Some(CallScore {
                agent_number: c.agent_number.clone()?,
                started_at: c.started_at,
                checklist_percent: f64::from(rng.below(101)),
                sentiment: [Sentiment::Positive, Sentiment::Neutral, Sentiment::Negative]
                    [usize::try_from(rng.below(3)).unwrap()],
            })
        })
        .collect()
}
