//! Allocations of the two call statistics over 155,000 records: prints how many heap blocks
//! and bytes one run allocates, to show the work per record allocates nothing.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::print_stdout,
    reason = "benchmark harness: a panic is a failed run, and printing figures is its job"
)]

use callstats_domain::call_day::CallDay;
use callstats_domain::params::{Direction, RosterFilter, SlThreshold};
use callstats_domain::stats::queues::queue_entries;
use callstats_domain::stats::{PriorWeight, agent_leaderboard, call_summary};

mod common;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn measure<T>(label: &str, records: usize, run: impl FnOnce() -> T) {
    let before = dhat::HeapStats::get();
    let result = run();
    let after = dhat::HeapStats::get();
    drop(result);
    println!(
        "{label}: {records} records, {} allocations, {} bytes allocated, peak live heap {} bytes",
        after.total_blocks - before.total_blocks,
        after.total_bytes - before.total_bytes,
        after.max_bytes,
    );
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let range = common::range();
    let calls = common::calls();
    let scores = common::scores(&calls);
    let days = CallDay::split(&range, 0, &calls);
    println!(
        "input: {} call records and {} scores (~{} bytes)",
        calls.len(),
        scores.len(),
        dhat::HeapStats::get().curr_bytes
    );
    measure("call_summary", calls.len(), || {
        call_summary(
            &range,
            Direction::Inbound,
            SlThreshold::DEFAULT,
            None,
            &days,
        )
    });
    measure("queue_entries", calls.len(), || {
        queue_entries(&range, Direction::Inbound, SlThreshold::DEFAULT, &days)
    });
    measure("agent_leaderboard", calls.len(), || {
        agent_leaderboard(
            &range,
            None,
            &RosterFilter::default(),
            &days,
            &scores,
            &[],
            PriorWeight::DEFAULT,
        )
    });
}
