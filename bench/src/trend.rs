//! `trend`: a year's trend held in the database (docs/behaviour.md, "Trend"; docs/operations.md,
//! "Call days": the backfill), measured on loopback against `callstats sim`, for each
//! calls-a-day value asked (5,000 and 50,000 by default), each with its own sim and SQLite
//! database.
//!
//! 1. **The backfill**: a server whose history horizon is [`HORIZON_DAYS`] days (so 366 settled
//!    days end yesterday), warmer off, backfill at 60,000 days a minute (1 ms after each day), fills the
//!    table: the time from its first pass (`callstats_call_day_horizon_days` reported) until
//!    `callstats_call_day_horizon_days_held` reaches it, and the upstream requests it made.
//! 2. **A fresh process**: the server is stopped and a new one (backfill off) asked
//!    `/calls/trend` over the 366 days ending yesterday, `granularity=week`: the whole
//!    request's time (the rollups read from the table in one statement), its upstream
//!    requests, and the process's peak resident memory after it beside its memory bound.
//! 3. **Warm, uncached**: the same days with `sl_threshold=30` (another cache entry, the final
//!    days' rollups kept in process): the whole request's time.
//!
//! The figures are printed as they are: a missed target is a finding, not a failure.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use xtask::process::in_scratch_dir;
use xtask::serve::{Portal, Server, binary, sim};

use crate::harness::days::{plus, span, today};
use crate::harness::metrics::{Cost, Measure as _, gauge};
use crate::harness::table::{Row, mebibytes, table};
use crate::harness::usage::peak_rss_kib;
use crate::harness::{build_name, print};

/// The history horizon, today included: 366 settled days end yesterday.
const HORIZON_DAYS: i64 = 367;
/// How long the backfill may take before the task gives up.
const BACKFILL_LIMIT: Duration = Duration::from_secs(3600);

/// A year's trend held in the database: `callstats serve` in front of `callstats sim`, at
/// 5,000 and 50,000 calls a day: the backfill's time and upstream requests over 366 days, then
/// /calls/trend over them (weeks) from a fresh process and again uncached, with the process's
/// peak resident memory.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// The sim's calls on an ordinary weekday; one run for each value given
    #[arg(long, num_args = 1.., default_values_t = [5000, 50000])]
    calls_per_day: Vec<u32>,
    /// The debug binary instead of the release one: checks the task without a fat-LTO build,
    /// but its figures are not the service's
    #[arg(long)]
    debug: bool,
}

pub fn run(options: &Options) -> Result<()> {
    let binary = binary(options.debug)?;
    in_scratch_dir("trend", |dir| {
        for &calls_per_day in &options.calls_per_day {
            print(&measure(options, calls_per_day, &binary, dir)?)?;
        }
        Ok(())
    })
}

fn measure(options: &Options, calls_per_day: u32, binary: &Path, dir: &Path) -> Result<String> {
    let (_sim, sim_url) = sim(
        binary,
        dir,
        &format!("sim-{calls_per_day}"),
        &["--calls-per-day", &calls_per_day.to_string()],
    )?;
    let portal = Portal::seeded_demo(binary, dir, &format!("trend-{calls_per_day}.db"), sim_url)?;
    let key = portal.key("trend", 1_000_000_000)?;
    let name = |step: &str| format!("{step}-{calls_per_day}");
    let horizon = HORIZON_DAYS.to_string();
    let today = today();
    let year = (plus(today, 1 - HORIZON_DAYS), plus(today, -1));
    let mut rows = Vec::new();

    let filling = portal.serve_with(
        &name("backfill"),
        None,
        0,
        &[
            ("CALLSTATS_CALL_HISTORY_DAYS", horizon.as_str()),
            ("CALLSTATS_CALL_DAY_BACKFILL_PER_MINUTE", "60000"),
        ],
    )?;
    rows.push(backfill(&filling)?);
    drop(filling);

    let fresh = portal.serve_with(
        &name("fresh"),
        None,
        0,
        &[
            ("CALLSTATS_CALL_HISTORY_DAYS", horizon.as_str()),
            ("CALLSTATS_CALL_DAY_BACKFILL_PER_MINUTE", "0"),
        ],
    )?;
    let path = |more: &str| {
        format!(
            "/api/v1/calls/trend?start={}&end={}&granularity=week{more}",
            year.0, year.1
        )
    };
    rows.push(Row::new(
        format!(
            "a fresh process: /calls/trend over the 366 days {} by week, a cache miss, the \
             whole request",
            span(year)
        ),
        fresh.measure(&path(""), &key)?,
        "0 requests, ≤ 300 ms at 5,000 calls a day, ≤ 1 s at 50,000",
    ));
    let peak = peak_rss_kib(fresh.process.0.id())?;
    let bound = gauge(&fresh.metrics()?, "callstats_memory_bound_bytes").unwrap_or(0.0);
    rows.push(Row::new(
        "the same days with sl_threshold=30: another cache entry, the rollups held, the whole \
         request",
        fresh.measure(&path("&sl_threshold=30"), &key)?,
        "≤ 30 ms at 5,000 calls a day, ≤ 100 ms at 50,000",
    ));
    let bound_mib = bound / 1_048_576.0;
    Ok(format!(
        "\ntrend at {calls_per_day} calls a day: `callstats sim`, {} build, SQLite, today in \
         Tashkent {today}\n\n{}\nthe fresh process's peak resident memory after the first \
         trend: {} (its memory bound: {bound_mib:.1} MiB)\n",
        build_name(options.debug),
        table(&rows),
        mebibytes(peak),
    ))
}

/// Step 1: from the backfill's first pass until it holds the horizon.
fn backfill(server: &Server) -> Result<Row> {
    let deadline = Instant::now() + BACKFILL_LIMIT;
    let reported = |name: &str| -> Result<Option<f64>> { Ok(gauge(&server.metrics()?, name)) };
    // Nothing else asks the platform (warmer off, no request): every request from here on is
    // the backfill's.
    let before = server.upstream_requests()?;
    let (started, days) = loop {
        if let Some(days) = reported("callstats_call_day_horizon_days")? {
            break (Instant::now(), days);
        }
        if Instant::now() > deadline {
            bail!("the backfill never began");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    loop {
        if reported("callstats_call_day_horizon_days_held")? >= Some(days) {
            break;
        }
        if Instant::now() > deadline {
            bail!("the backfill did not hold the horizon within {BACKFILL_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let time = started.elapsed();
    let upstream = server.upstream_requests()?.saturating_sub(before);
    // Each day is written in a task of its own: the last writes land before the next server.
    std::thread::sleep(Duration::from_secs(3));
    Ok(Row::new(
        format!("the backfill: the {days} settled days of the horizon into the table, from its first pass"),
        Cost {
            time,
            upstream,
            status: 200,
        },
        "-",
    ))
}
