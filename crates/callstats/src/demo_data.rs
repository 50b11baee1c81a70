//! The demo data set wired to the synthetic call platform: the same agents, and checklist
//! scores on the very calls `callstats demo` serves (its default seed and volume).

use callstats_domain::calendar::Day;
use callstats_domain::tz;
use callstats_store::demo::{ScorableCall, demo_fixture as build};
use callstats_store::fixture::Fixture;
use callstats_synthetic::{DEFAULT_CALLS_PER_DAY, DEFAULT_SEED, Generator, demo_agent_numbers};
use time::OffsetDateTime;

/// Today's date in Tashkent, where the demo data is placed by default.
pub fn today_in_tashkent() -> Day {
    Day::new(tz::to_tashkent(OffsetDateTime::now_utc()).date())
}

/// The demo data set for `seed` around `anchor`.
pub fn demo_fixture(seed: u64, anchor: Day) -> Fixture {
    let platform = Generator::new(DEFAULT_SEED, DEFAULT_CALLS_PER_DAY);
    build(seed, anchor, &demo_agent_numbers(), |day| {
        platform
            .calls_on(day)
            .into_iter()
            .filter_map(|call| {
                Some(ScorableCall {
                    agent_number: call.agent_number?,
                    id: call.id,
                    started_at: call.started_at,
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn demo_operators_are_the_synthetic_platforms_agents_and_scores_its_calls() {
        let anchor = Day::parse("2026-11-21").unwrap();
        let fixture = demo_fixture(42, anchor);
        let roster: Vec<_> = fixture
            .operators
            .iter()
            .map(|o| o.agent_number.clone())
            .collect();
        assert_eq!(roster, demo_agent_numbers());

        let platform = Generator::new(DEFAULT_SEED, DEFAULT_CALLS_PER_DAY);
        let mut calls = HashMap::new();
        for back in 0..30 {
            for call in platform.calls_on(anchor.plus_days(-back).unwrap()) {
                calls.insert(call.id.clone(), call);
            }
        }
        assert!(
            fixture.call_scores.len() > 1000,
            "{}",
            fixture.call_scores.len()
        );
        for score in &fixture.call_scores {
            let call = &calls[&score.call_id];
            assert_eq!(call.agent_number.as_ref(), Some(&score.agent_number));
            assert_eq!(call.started_at, score.started_at);
        }
    }
}
