//! Throughput of the call statistics over 155,000 records (31 days × 5,000 calls).

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::print_stdout,
    reason = "benchmark harness: a panic is a failed run, and printing figures is its job"
)]

use std::hint::black_box;

use callstats_domain::call_day::CallDay;
use callstats_domain::params::{Direction, RosterFilter, SlThreshold};
use callstats_domain::stats::queues::queue_entries;
use callstats_domain::stats::{PriorWeight, agent_leaderboard, call_summary};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

mod common;

fn bench(c: &mut Criterion) {
    let range = common::range();
    let calls = common::calls();
    let scores = common::scores(&calls);
    let days = CallDay::split(&range, 0, &calls);
    let mut group = c.benchmark_group("stats");
    group.throughput(Throughput::Elements(u64::try_from(calls.len()).unwrap()));
    group.bench_function("call_summary_155k", |b| {
        b.iter(|| {
            call_summary(
                black_box(&range),
                Direction::Inbound,
                SlThreshold::DEFAULT,
                None,
                black_box(&days),
            )
        });
    });
    group.bench_function("queue_entries_155k", |b| {
        b.iter(|| {
            queue_entries(
                black_box(&range),
                Direction::Inbound,
                SlThreshold::DEFAULT,
                black_box(&days),
            )
        });
    });
    group.bench_function("agent_leaderboard_155k", |b| {
        b.iter(|| {
            agent_leaderboard(
                black_box(&range),
                None,
                &RosterFilter::default(),
                black_box(&days),
                black_box(&scores),
                &[],
                PriorWeight::DEFAULT,
            )
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
