//! `soak`: a bounded soak on loopback. Starts `callstats sim` with injected failures and
//! `callstats demo` in front of it, issues several keys, and sends a fixed rate of requests
//! over every endpoint from several keep-alive connections for a set time. Reports requests
//! served, status counts, p50/p99 latency, and the service's RSS and open file descriptors at
//! start and end. Fails when a 5xx comes from an endpoint the injected upstream failures cannot
//! reach, or when connections fail.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use xtask::process::{agent, get_on, in_scratch_dir};
use xtask::serve::{Demo, binary, sim};

use crate::harness::print;
use crate::harness::usage::{open_fds, rss_kib};

/// A bounded loopback soak, ten minutes by default: every endpoint mixed, several keys, a fixed
/// rate, the sim injecting failures; reports requests, statuses, p50/p99, RSS and open fds at
/// start and end.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// How long the load runs, in seconds
    #[arg(long = "duration-secs", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    duration_secs: u64,
    /// Requests per second over all connections
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..))]
    rate: u32,
    /// Keep-alive connections sending the requests
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    connections: u32,
    /// The share of the sim's answers that fail (passed to `callstats sim --fail-rate`)
    #[arg(long, default_value = "0.05")]
    fail_rate: String,
    /// The release binary instead of the debug one
    #[arg(long)]
    release: bool,
}

pub fn run(options: &Options) -> Result<()> {
    let binary = binary(!options.release)?;
    in_scratch_dir("soak", |dir| soak(options, &binary, dir))
}

fn soak(options: &Options, binary: &Path, dir: &Path) -> Result<()> {
    let duration = Duration::from_secs(options.duration_secs);
    let (_sim, sim_url) = sim(binary, dir, "sim", &["--fail-rate", &options.fail_rate])?;
    let demo = Demo::start_in::<&str>(
        binary,
        dir,
        &[],
        &[
            ("CALLSTATS_CALL_PLATFORM_URL", &sim_url),
            ("CALLSTATS_ANON_RATE_LIMIT", "100000000"),
            ("CALLSTATS_CACHE_MAX_MB", "32"),
            ("RUST_LOG", "error"),
        ],
    )?;
    let (port, pid) = (demo.port, demo.pid());
    let keys = vec![
        demo.issue("soak-all-1", "calls,kpi:detail,operators,scripts")?,
        demo.issue("soak-all-2", "calls,kpi:detail,operators,scripts")?,
        demo.issue("soak-aggregate", "kpi:aggregate")?,
        demo.issue("soak-roster", "operators,scripts")?,
    ];

    eprintln!(
        "==> soak: {} requests/s over {} connections for {:?} (sim fail rate {})",
        options.rate, options.connections, duration, options.fail_rate
    );
    // Warm up so the start figures include the caches' and pools' steady state.
    load(port, &keys, 20, 2, Duration::from_secs(5));
    let (rss_start, fds_start) = (rss_kib(pid)?, open_fds(pid)?);
    let started = Instant::now();
    let stats = load(port, &keys, options.rate, options.connections, duration);
    let elapsed = started.elapsed();
    let (rss_end, fds_end) = (rss_kib(pid)?, open_fds(pid)?);

    let mut latencies = stats.latencies.clone();
    latencies.sort_unstable();
    let total = latencies.len();
    let mut report = "soak report\n".to_owned();
    writeln!(report, "  duration           {:.0} s", elapsed.as_secs_f64())?;
    writeln!(
        report,
        "  requests served    {total} ({:.1}/s)",
        count_per_second(total, elapsed)
    )?;
    writeln!(report, "  connection errors  {}", stats.errors)?;
    for (status, count) in &stats.statuses {
        writeln!(report, "  status {status}         {count}")?;
    }
    writeln!(
        report,
        "  p50 latency        {:.2} ms",
        percentile(&latencies, 50)
    )?;
    writeln!(
        report,
        "  p99 latency        {:.2} ms",
        percentile(&latencies, 99)
    )?;
    writeln!(
        report,
        "  RSS                {rss_start} KiB at start, {rss_end} KiB at end"
    )?;
    writeln!(
        report,
        "  open fds           {fds_start} at start, {fds_end} at end"
    )?;
    for (path, count) in &stats.unexpected_5xx {
        writeln!(
            report,
            "  5xx not explained by injected failures: {path} x{count}"
        )?;
    }
    print(&report)?;
    if !stats.unexpected_5xx.is_empty() || stats.errors > 0 {
        bail!("the soak found failures the injected upstream errors do not explain");
    }
    Ok(())
}

fn count_per_second(count: usize, elapsed: Duration) -> f64 {
    f64::from(u32::try_from(count).unwrap_or(u32::MAX)) / elapsed.as_secs_f64().max(0.001)
}

/// Nearest-rank percentile of sorted latencies in microseconds, in milliseconds.
fn percentile(sorted: &[u32], p: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (sorted.len().saturating_mul(p).div_ceil(100)).clamp(1, sorted.len());
    sorted
        .get(rank.saturating_sub(1))
        .map_or(0.0, |&micros| f64::from(micros) / 1000.0)
}

#[derive(Default)]
struct Stats {
    latencies: Vec<u32>,
    statuses: BTreeMap<u16, u64>,
    unexpected_5xx: BTreeMap<String, u64>,
    errors: u64,
}

/// Sends `rate` requests a second over `connections` keep-alive connections for `duration`.
fn load(port: u16, keys: &[String], rate: u32, connections: u32, duration: Duration) -> Stats {
    let stats = Arc::new(Mutex::new(Stats::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let interval = Duration::from_secs_f64(f64::from(connections) / f64::from(rate));
    let handles: Vec<_> = (0..connections)
        .map(|worker| {
            let (stats, stop, keys) = (Arc::clone(&stats), Arc::clone(&stop), keys.to_vec());
            std::thread::spawn(move || {
                let mut random = fastrand::Rng::with_seed(u64::from(worker));
                // One agent per worker: its connection is kept alive between requests.
                let agent = agent();
                let mut next =
                    Instant::now() + interval.mul_f64(f64::from(worker) / f64::from(connections));
                while !stop.load(Ordering::Relaxed) {
                    if let Some(wait) = next.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    next += interval;
                    let key = random.choice(&keys).cloned().unwrap_or_default();
                    let path = random_path(&mut random);
                    let started = Instant::now();
                    let outcome = get_on(&agent, port, &path, &key).map(|(status, _)| status);
                    let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
                    let Ok(mut stats) = stats.lock() else { return };
                    match outcome {
                        Ok(status) => {
                            stats.latencies.push(micros);
                            *stats.statuses.entry(status).or_default() += 1;
                            // Only the call endpoints reach the upstream, whose failures are injected.
                            if status >= 500 && !(status == 503 && path.contains("/calls/")) {
                                *stats.unexpected_5xx.entry(route(&path)).or_default() += 1;
                            }
                        }
                        Err(_) => stats.errors += 1,
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        let _ = handle.join();
    }
    Arc::try_unwrap(stats)
        .ok()
        .and_then(|stats| stats.into_inner().ok())
        .unwrap_or_default()
}

fn route(path: &str) -> String {
    path.split('?').next().unwrap_or(path).to_owned()
}

/// One request of the mix: every endpoint, dates spread over about two months so the cache
/// both hits and misses.
fn random_path(random: &mut fastrand::Rng) -> String {
    let day = |random: &mut fastrand::Rng| {
        let (month, last) = if random.u32(..2) == 0 {
            (10, 31)
        } else {
            (11, 30)
        };
        format!("2026-{month:02}-{:02}", random.u32(..last) + 1)
    };
    let week = random.u32(..20);
    match random.u32(..12) {
        0 => "/api/v1/ping".to_owned(),
        1 | 2 => format!("/api/v1/calls/summary?start={}", day(random)),
        // A week, as dashboards ask: a 31-day range is up to 155 upstream pages.
        3 => format!(
            "/api/v1/calls/summary?start=2026-11-{:02}&end=2026-11-{:02}&direction=outbound",
            1 + week,
            7 + week
        ),
        4 => format!("/api/v1/calls/agents?start={}", day(random)),
        5 => "/api/v1/kpi/months".to_owned(),
        6 => format!("/api/v1/kpi/2026-{:02}", 9 + random.u32(..3)),
        7 => "/api/v1/operators".to_owned(),
        8 => format!("/api/v1/schedule?month=2026-{:02}", 9 + random.u32(..3)),
        9 => format!("/api/v1/scripts/stats?limit={}", 1 + random.u32(..100)),
        10 => "/api/v1/openapi.json".to_owned(),
        _ => "/readyz".to_owned(),
    }
}
