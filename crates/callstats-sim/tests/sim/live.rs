//! The sim's `/live`: the contract's JSON, the adapter reading it, determinism for the seed and
//! the instant, the clock moving it, the token, `--no-live`, injected failures.

use std::time::Duration;

use callstats_callplatform::BearerToken;
use callstats_domain::live::{LiveError, LiveSnapshot};
use callstats_domain::ports::{CallPlatform, Clock, UpstreamFailure};
use callstats_domain::testing::{TestClock, tashkent};
use callstats_synthetic::Generator;
use serde_json::Value;
use time::OffsetDateTime;

use callstats_sim::{RunningSim, SimOptions, spawn_sim};

use super::{SIM_TOKEN, platform, request, sim_config};

/// A Wednesday morning in Tashkent, busy enough for callers to wait.
fn morning() -> OffsetDateTime {
    tashkent("2026-11-18 11:00")
}

fn at(now: OffsetDateTime) -> SimOptions {
    SimOptions {
        clock: TestClock::at(now),
        ..SimOptions::default()
    }
}

/// `GET /live`: the status, the content type and the body's bytes.
async fn get_live(sim: &RunningSim, token: Option<&str>) -> (u16, Option<String>, Vec<u8>) {
    request(sim, "/live", token).await
}

async fn read(sim: &RunningSim) -> Result<LiveSnapshot, LiveError> {
    platform(sim_config(sim)).live().await
}

#[tokio::test]
async fn sim_live_is_the_contract_s_json_in_tashkent_time() {
    let sim = spawn_sim(at(morning())).unwrap();
    let (status, content_type, body) = get_live(&sim, None).await;
    assert_eq!(status, 200);
    assert_eq!(content_type.as_deref(), Some("application/json"));
    let body: Value = serde_json::from_slice(&body).unwrap();
    let keys =
        |value: &Value| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&body), ["as_of", "queues", "agents"]);
    assert_eq!(body["as_of"], "2026-11-18T11:00:00+05:00");
    let queues = body["queues"].as_array().unwrap();
    assert_eq!(
        keys(&queues[0]),
        ["queue", "waiting", "oldest_wait_seconds"]
    );
    let names: Vec<&str> = queues
        .iter()
        .map(|q| q["queue"].as_str().unwrap())
        .collect();
    assert_eq!(names, callstats_synthetic::QUEUES);
    let agents = body["agents"].as_array().unwrap();
    assert_eq!(
        keys(&agents[0]),
        ["agent_number", "state", "since", "queue"]
    );
    assert_eq!(agents.len(), 80);
    assert_eq!(agents[0]["agent_number"], "101");
    assert!(
        agents
            .iter()
            .all(|a| a["since"].as_str().unwrap().ends_with("+05:00"))
    );
    sim.stop().await;
}

#[tokio::test]
async fn adapter_reads_exactly_the_generator_s_live_figures() {
    let sim = spawn_sim(SimOptions {
        seed: 7,
        calls_per_day: 6_000,
        ..at(morning())
    })
    .unwrap();
    let snapshot = read(&sim).await.unwrap();
    assert_eq!(
        snapshot,
        Generator::new(7, 6_000).live_at(morning()).unwrap()
    );
    sim.stop().await;
}

#[tokio::test]
async fn sim_live_is_the_same_for_the_seed_and_the_instant() {
    let first = spawn_sim(at(morning())).unwrap();
    let second = spawn_sim(at(morning())).unwrap();
    let other_seed = spawn_sim(SimOptions {
        seed: 43,
        ..at(morning())
    })
    .unwrap();
    let (_, _, a) = get_live(&first, None).await;
    let (_, _, b) = get_live(&second, None).await;
    let (_, _, c) = get_live(&other_seed, None).await;
    assert_eq!(a, b);
    assert_ne!(a, c);
    for sim in [first, second, other_seed] {
        sim.stop().await;
    }
}

#[tokio::test]
async fn sim_live_follows_its_clock_and_changes_within_a_few_polls() {
    let clock = TestClock::at(morning());
    let sim = spawn_sim(SimOptions {
        clock: clock.clone(),
        ..SimOptions::default()
    })
    .unwrap();
    let first = read(&sim).await.unwrap();
    let mut changed = false;
    for _ in 0..5 {
        clock.advance(Duration::from_secs(2));
        let later = read(&sim).await.unwrap();
        assert_eq!(later.as_of(), clock.now());
        changed |= later.queues() != first.queues() || later.agents() != first.agents();
    }
    assert!(
        changed,
        "nothing changed in ten seconds of a weekday morning"
    );
    sim.stop().await;
}

#[tokio::test]
async fn sim_live_with_a_token_answers_401_without_it() {
    let sim = spawn_sim(SimOptions {
        token: Some(SIM_TOKEN.to_owned()),
        ..at(morning())
    })
    .unwrap();
    assert_eq!(get_live(&sim, None).await.0, 401);
    assert_eq!(get_live(&sim, Some("wrong")).await.0, 401);
    assert_eq!(get_live(&sim, Some(SIM_TOKEN)).await.0, 200);

    let Err(LiveError::Unavailable(error)) = read(&sim).await else {
        panic!("a 401 is unavailable");
    };
    assert!(error.reason.contains("401"), "{error}");
    let mut config = sim_config(&sim);
    config.token = Some(BearerToken::new(SIM_TOKEN));
    assert_eq!(platform(config).live().await.unwrap().agents().len(), 80);
    sim.stop().await;
}

#[tokio::test]
async fn sim_with_no_live_answers_404_and_the_adapter_reports_no_live_figures() {
    let sim = spawn_sim(SimOptions {
        live: false,
        ..at(morning())
    })
    .unwrap();
    let (status, content_type, body) = get_live(&sim, None).await;
    assert_eq!(status, 404);
    assert_eq!(content_type.as_deref(), Some("application/json"));
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("--no-live"),
        "{body}"
    );
    assert_eq!(read(&sim).await, Err(LiveError::NotReported));
    sim.stop().await;
}

#[tokio::test]
async fn sim_live_with_fail_rate_one_is_unavailable_to_the_adapter() {
    let sim = spawn_sim(SimOptions {
        fail_rate: 1.0,
        ..at(morning())
    })
    .unwrap();
    assert_eq!(get_live(&sim, None).await.0, 500);
    let Err(LiveError::Unavailable(error)) = read(&sim).await else {
        panic!("a 500 throughout is unavailable");
    };
    assert_eq!(error.kind, UpstreamFailure::Unavailable);
    sim.stop().await;
}
