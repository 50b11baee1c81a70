//! The in-process caches are bounded in the bytes they really hold on the heap, counted by an
//! allocator that counts (dhat): filled far past their bound with call days and response bodies,
//! the heap they hold stays within the bound.

// Test code (clippy.toml: unwrap, expect, indexing and panics allowed in tests).
#![cfg(test)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use callstats_domain::calendar::Day;
use callstats_domain::call_day::CallDay;
use callstats_domain::model::{AgentNumber, CallRecord, QueueName};
use callstats_domain::params::Direction;
use callstats_domain::ports::{CallDayCache, ResponseCache};
use callstats_domain::tz;
use callstats_in_process::{MemoryCache, MemoryCallDays};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// A day of `calls` calls among 80 agents in four queues, each with a wait, built from records
/// as the call-day store builds it.
fn day(number: i64, calls: usize) -> Arc<CallDay> {
    let day = Day::parse("2026-01-01").unwrap().plus_days(number).unwrap();
    let midnight = tz::local_midnight_unix(day.date());
    let agents: Vec<AgentNumber> = (0..80)
        .map(|n| AgentNumber::new(&format!("{}", 101 + n)).unwrap())
        .collect();
    let queues = [
        "support",
        "sales",
        "billing",
        "a queue named in more than 24 bytes",
    ]
    .map(|q| QueueName::new(q).unwrap());
    let records = (0..calls).map(|n| CallRecord {
        direction: Direction::Inbound,
        agent_number: Some(agents[n % agents.len()].clone()),
        started_at: midnight + i64::try_from(n % 86_400).unwrap(),
        duration_seconds: 60.0,
        wait_seconds: Some(12.5),
        queue: Some(queues[n % queues.len()].clone()),
    });
    Arc::new(CallDay::from_records(day, 0, records.collect::<Vec<_>>()))
}

fn live_heap() -> u64 {
    u64::try_from(dhat::HeapStats::get().curr_bytes).unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn filled_past_their_bounds_the_caches_hold_no_more_heap_than_their_bounds() {
    let _profiler = dhat::Profiler::builder().testing().build();

    // Call days: 200 weekdays of 5,000 calls (some 16 MB) into a tier of 4 MiB.
    let bound: u64 = 4 << 20;
    let before = live_heap();
    let tier = MemoryCallDays::new(bound);
    for number in 0..200 {
        tier.put(day(number, 5_000), Duration::from_secs(3600))
            .await;
    }
    let held = live_heap() - before;
    // The cache's tables are sized for the bound up front; a few kilobytes of them on top.
    assert!(
        held <= bound + (64 << 10),
        "call days: {held} bytes held for a bound of {bound}"
    );
    assert!(
        held >= bound / 2,
        "and it does fill up to about its bound: {held}"
    );
    drop(tier);

    // Response bodies: 2,000 bodies of 10 KB under keys like the API's into 4 MiB.
    let before = live_heap();
    let cache = MemoryCache::new(bound);
    for number in 0..2_000 {
        cache
            .put(
                &format!(
                    "v1/calls/summary?start=2026-01-01&end=2026-01-31&direction=inbound&n={number}"
                ),
                Bytes::from(vec![b'x'; 10_000]),
                Duration::from_secs(600),
            )
            .await;
    }
    let held = live_heap() - before;
    assert!(
        held <= bound + (64 << 10),
        "bodies: {held} bytes held for a bound of {bound}"
    );
    assert!(held >= bound / 2, "{held}");
}
