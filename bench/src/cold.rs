//! `cold`: the service's cold path. A request whose answer is not cached has to
//! fetch call records from the upstream call platform; this task measures how long such
//! requests take and how many upstream requests they cost, when the upstream answers every
//! page after a delay, like a platform across a WAN.
//!
//! Everything runs on loopback: `callstats sim` with `--latency-ms` as the upstream, a SQLite
//! portal seeded with the demo data, `callstats serve` in front of it, and for the last rows a
//! private `redis-server` shared by two more replicas. Upstream requests are read from the
//! serve process's own Prometheus counter, so they are what the service asked for, retries
//! included. The last rows start a server whose warmer holds the last 35 days, wait for its
//! warm-up, and ask for the last 31 days ending today, a miss of the response cache (the
//! agents as JSON and as CSV, with their bytes, and 7 days of 15-minute intervals). The
//! figures are printed as they are: a missed target is a finding, not a failure.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};
use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::call_day::CallDay;
use callstats_redis::testing::PrivateRedis;
use callstats_synthetic::{DEFAULT_SEED, Generator, SyntheticCall};
use xtask::process::in_scratch_dir;
use xtask::serve::{Portal, binary, sim};

use crate::harness::days::{agents_path, intervals_path, plus, span, summary_path, today};
use crate::harness::metrics::Measure as _;
use crate::harness::table::{Row, mebibytes, table};
use crate::harness::usage::peak_rss_kib;
use crate::harness::{build_name, print};

/// Days in the longest range the API answers, and so in every measured window.
const WINDOW_DAYS: i64 = 31;
/// How many cold windows are asked for at the same time.
const CONCURRENT: usize = 4;
/// The days the warm server's warmer holds (the default).
const WARM_DAYS: u32 = 35;
/// How long the warm-up may take before the task gives up.
const WARM_UP_LIMIT: Duration = Duration::from_secs(600);

/// The cold path: `callstats serve` in front of `callstats sim` answering every page after a
/// delay; time and upstream requests of uncached 31-day queries (settled days, the same days
/// through another endpoint, a window slid to today, 4 at once, two replicas sharing Redis),
/// then a server whose warmer holds the last 35 days (its warm-up, and cache misses over the
/// last 31 days ending today), and the peak RSS of both.
///
/// Needs redis-server.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// The sim's delay before every answer, in milliseconds
    #[arg(long, default_value_t = 100)]
    pub latency_ms: u64,
    /// The sim's calls on an ordinary weekday
    #[arg(long, default_value_t = 5000)]
    pub calls_per_day: u32,
    /// The debug binary instead of the release one: checks the task without a fat-LTO build,
    /// but its figures are not the service's
    #[arg(long)]
    pub debug: bool,
}

pub fn run(options: &Options) -> Result<()> {
    let binary = binary(options.debug)?;
    in_scratch_dir("cold", |dir| measure(options, &binary, dir))
}

fn measure(options: &Options, binary: &Path, dir: &Path) -> Result<()> {
    let (_sim, sim_url) = sim(
        binary,
        dir,
        "sim",
        &[
            "--latency-ms",
            &options.latency_ms.to_string(),
            "--calls-per-day",
            &options.calls_per_day.to_string(),
        ],
    )?;
    let portal = Portal::seeded_demo(binary, dir, "cold.db", sim_url)?;
    // A key per group of rows: each key may make the service fetch 124 days not held a minute
    // (its day budget), and the four concurrent windows alone are 124.
    let key = portal.key("cold", 1_000_000_000)?;
    let concurrent_key = portal.key("cold-concurrent", 1_000_000_000)?;
    let replicas_key = portal.key("cold-replicas", 1_000_000_000)?;

    let today = today();
    let yesterday = plus(today, -1);
    let settled = (plus(yesterday, 1 - WINDOW_DAYS), yesterday);
    let slid = (plus(today, 1 - WINDOW_DAYS), today);
    // Windows before every day asked for so far, so each of them is cold.
    let earlier = earlier_windows(settled.0, CONCURRENT + 1);
    let (concurrent, replicas) = earlier.split_at(CONCURRENT);
    let replicas = *replicas.first().context("no window for the replicas")?;

    let mut rows = Vec::new();
    let server = portal.serve("serve", None)?;
    let cold = server.measure(&summary_path(settled, ""), &key)?;
    rows.push(Row::new(
        format!("cold, 31 settled days ({})", span(settled)),
        cold,
        "≤ 3.0 s",
    ));
    let agents = server.measure(&agents_path(settled), &key)?;
    rows.push(Row::new(
        "/calls/agents, same days",
        agents,
        "0 requests, < 100 ms",
    ));
    let outbound = server.measure(&summary_path(settled, "&direction=outbound"), &key)?;
    rows.push(Row::new(
        "direction=outbound, same days",
        outbound,
        "0 requests, < 100 ms",
    ));
    let moved = server.measure(&summary_path(slid, ""), &key)?;
    rows.push(Row::new(
        format!("window slid by one day to end today ({})", span(slid)),
        moved,
        "≤ 8 requests, ≤ 1.5 s",
    ));
    let paths: Vec<String> = concurrent
        .iter()
        .map(|&window| summary_path(window, ""))
        .collect();
    let (together, slowest) = server.measure_together(&paths, &concurrent_key)?;
    rows.push(Row::new(
        format!("{CONCURRENT} concurrent cold 31-day queries, until all answered"),
        together,
        "-",
    ));
    rows.push(Row {
        name: format!("{CONCURRENT} concurrent: the slowest one"),
        time: slowest,
        status: together.status,
        upstream: None,
        target: "-",
    });
    let peak_kib = peak_rss_kib(server.process.0.id())?;
    drop(server);

    let redis = PrivateRedis::start()
        .context("cannot start redis-server (apt-get install -y redis-server)")?;
    let redis_url = redis.url();
    let replica_a = portal.serve("replica-a", Some(&redis_url))?;
    let replica_b = portal.serve("replica-b", Some(&redis_url))?;
    let first = replica_a.measure(&summary_path(replicas, ""), &replicas_key)?;
    rows.push(Row::new(
        format!(
            "replica A, /calls/summary, cold 31 days ({})",
            span(replicas)
        ),
        first,
        "-",
    ));
    let second = replica_b.measure(&agents_path(replicas), &replicas_key)?;
    rows.push(Row::new(
        "replica B (same Redis), /calls/agents, same days",
        second,
        "0 requests",
    ));

    drop((replica_a, replica_b, redis));

    // The warm path: a server whose warmer holds the recent days; the question is a miss of
    // the response cache (the server never answered it), over days it holds. It warms up from
    // the platform, not from the days the servers before it kept in the portal database (what
    // `durability` measures).
    let warm = portal.serve_with(
        "warm",
        None,
        WARM_DAYS,
        &[("CALLSTATS_CALL_DAY_PERSIST", "false")],
    )?;
    let warm_up = warm.wait_for_warm_up(WARM_UP_LIMIT)?;
    rows.push(Row::new(
        format!("warm-up of the last {WARM_DAYS} days, in the background (ready at once)"),
        warm_up,
        "-",
    ));
    let warm_summary = warm.measure(&summary_path(slid, ""), &key)?;
    rows.push(Row::new(
        format!("warm, 31 days ending today ({}), a cache miss", span(slid)),
        warm_summary,
        "0 requests, ≤ 50 ms",
    ));
    let (warm_agents, json_bytes) = warm.measure_as(&agents_path(slid), &key, None)?;
    rows.push(Row::new(
        format!("warm, /calls/agents, same days, a cache miss ({json_bytes} bytes)"),
        warm_agents,
        "0 requests, ≤ 50 ms",
    ));
    // The same answer as CSV: an entry of its own, so a miss too.
    let (warm_csv, csv_bytes) = warm.measure_as(&agents_path(slid), &key, Some("text/csv"))?;
    rows.push(Row::new(
        format!("warm, /calls/agents as CSV, same days, a cache miss ({csv_bytes} bytes)"),
        warm_csv,
        "0 requests",
    ));
    let week = (plus(today, -6), today);
    let warm_intervals = warm.measure(&intervals_path(week, 15), &key)?;
    rows.push(Row::new(
        format!(
            "warm, /calls/intervals, 7 days ending today ({}) at 15 minutes, a cache miss",
            span(week)
        ),
        warm_intervals,
        "0 requests, ≤ 50 ms",
    ));
    let warm_peak_kib = peak_rss_kib(warm.process.0.id())?;
    drop(warm);

    let windows: Vec<String> = concurrent.iter().map(|&window| span(window)).collect();
    let report = format!(
        "\ncold path: `callstats sim` --latency-ms {} --calls-per-day {}, {} build, today in \
         Tashkent {today}\n\n{}\nthe {CONCURRENT} concurrent windows: {}\n\
         peak RSS of the first serve process (VmHWM): {} (target ≤ 64 MiB)\n\
         peak RSS of the warm serve process, {WARM_DAYS} days held (VmHWM): {}\n\
         held call days: {}\n",
        options.latency_ms,
        options.calls_per_day,
        build_name(options.debug),
        table(&rows),
        windows.join(", "),
        mebibytes(peak_kib),
        mebibytes(warm_peak_kib),
        held_bytes(options.calls_per_day, settled)?,
    );
    print(&report)
}

/// What the days of `window` cost the serve process a call: the sim's very calls (its default
/// seed, at `calls_per_day`), kept as the call-day store keeps them.
fn held_bytes(calls_per_day: u32, (start, end): (Day, Day)) -> Result<String> {
    let generator = Generator::new(DEFAULT_SEED, calls_per_day);
    let range = DateRange::up_to_31_days(start, end).context("not a window")?;
    let (mut bytes, mut calls) = (0_usize, 0_usize);
    for day in range.iter_days() {
        let records = generator
            .calls_on(day)
            .iter()
            .map(SyntheticCall::to_record)
            .collect::<Vec<_>>();
        calls += records.len();
        bytes += CallDay::from_records(day, 0, records).size_bytes();
    }
    let as_f64 = |n: usize| f64::from(u32::try_from(n).unwrap_or(u32::MAX));
    Ok(format!(
        "{:.1} bytes a call ({} for the {calls} calls of the settled window)",
        as_f64(bytes) / as_f64(calls.max(1)),
        mebibytes(u64::try_from(bytes / 1024).unwrap_or(u64::MAX)),
    ))
}

/// `count` windows of 31 days, each ending on the last day of a month and all before
/// `before`, latest first. Each one ends on the last month end before the previous one's
/// start, so no two share a day: every one of them is cold, whatever the lengths of the
/// months (the 31 days ending on a 30-day month's last day reach into the month before).
fn earlier_windows(before: Day, count: usize) -> Vec<(Day, Day)> {
    let mut windows = Vec::with_capacity(count);
    let mut start = before;
    for _ in 0..count {
        // The last day of the month before `start`'s.
        let end = plus(start, -i64::from(start.date().day()));
        start = plus(end, 1 - WINDOW_DAYS);
        windows.push((start, end));
    }
    windows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Day {
        Day::parse(text).unwrap()
    }

    /// Days from `start` to `end`.
    fn between(start: Day, end: Day) -> i64 {
        end.number() - start.number()
    }

    #[test]
    fn earlier_windows_are_31_days_on_month_ends_and_share_no_day() {
        let windows: Vec<String> = earlier_windows(day("2026-10-23"), 5)
            .into_iter()
            .map(span)
            .collect();
        assert_eq!(
            windows,
            [
                "2026-08-31..2026-09-30",
                "2026-07-01..2026-07-31",
                "2026-05-31..2026-06-30",
                "2026-03-31..2026-04-30",
                "2026-01-29..2026-02-28",
            ]
        );
        for first in 0..800 {
            let before = plus(day("2023-01-01"), first);
            let mut previous_start = before;
            for (start, end) in earlier_windows(before, 5) {
                assert_eq!(between(start, end) + 1, WINDOW_DAYS);
                assert_eq!(plus(end, 1).date().day(), 1);
                assert!(end < previous_start);
                previous_start = start;
            }
        }
    }
}
