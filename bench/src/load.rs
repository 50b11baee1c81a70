//! `load`: `callstats demo` (release) and the bare baseline on loopback, loaded with wrk in
//! alternating rounds; the baseline answers the very bytes of each measured endpoint, so the
//! ratio compares the request pipeline and not the body size.
//!
//! Besides requests a second, each target's server CPU a request (user and system time of the
//! server process, from `/proc`, over the requests wrk counted) is reported: wrk shares the
//! machine's cores with the server, so the rate depends on how the scheduler shares them too,
//! while the CPU a request is the server's own cost.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use xtask::process::{in_scratch_dir, require};
use xtask::serve::Demo;

use crate::harness::days::{plus, today};
use crate::harness::usage::cpu_time;
use crate::harness::{baseline, print, wrk};

/// wrk's settings for every target: threads, connections, duration.
const WRK_ARGS: [&str; 6] = ["-t2", "-c32", "-d10s", "--latency", "--timeout", "5s"];

/// Release build, `callstats demo` and the bare actix-web baseline on loopback, loaded with wrk
/// in rounds: median requests/s, p50/p99 and server CPU a request of a cached endpoint, a
/// computed-then-cached one, the baseline answering each one's very bytes, and the baseline
/// answering 150 bytes; the ratios cached / baseline, of the medians and round by round.
///
/// The demo logs at its default level (info, a line per request) unless RUST_LOG is set. Needs
/// wrk.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// Another `callstats` binary (an earlier commit's release build) whose demo is loaded on
    /// its cached endpoint in the same rounds, so that its ratio and this one's are measured
    /// in one run on the same machine
    #[arg(long, value_name = "BINARY")]
    before: Option<PathBuf>,
    /// How many times every target is loaded: the rates of one machine swing from round to
    /// round, so a ratio is judged on more rounds than the default
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    rounds: u16,
}

/// Loads `callstats demo` (release) and the baseline server with wrk; prints the figures.
pub fn run(options: &Options) -> Result<()> {
    require("wrk", "wrk")?;
    let (callstats, baseline) = baseline::release_builds()?;
    in_scratch_dir("load", |dir| measure(&callstats, options, &baseline, dir))
}

/// Starts the demo of `callstats` in `dir`, run by the program and arguments of `under` when
/// there are some (a profiler): the demo, and a key of its whose quota the load cannot exhaust.
pub fn start_demo(callstats: &Path, dir: &Path, under: &[String]) -> Result<(Demo, String)> {
    let metrics = format!("127.0.0.1:{}", xtask::process::free_port()?);
    let demo = Demo::start_in(
        callstats,
        dir,
        under,
        &[
            // No warm days: the warmer's background fetches (the whole warm-up, under
            // callgrind) would be counted with the requests.
            ("CALLSTATS_CALL_DAY_WARM_DAYS", "0"),
            ("CALLSTATS_CALL_DAY_BACKFILL_PER_MINUTE", "0"),
            // Metrics served, as every deployment does (docs/operations.md): without a
            // recorder the request metrics are skipped, and the figures would not be
            // production's.
            ("CALLSTATS_METRICS_BIND", &metrics),
        ],
    )?;
    let key = demo.issue("load", "calls,operators")?;
    Ok((demo, key))
}

fn measure(callstats: &Path, options: &Options, baseline: &Path, dir: &Path) -> Result<()> {
    let (before, rounds) = (options.before.as_deref(), options.rounds);
    let (demo, key) = start_demo(callstats, dir, &[])?;
    let demo_port = demo.port;
    let demo_address = format!("127.0.0.1:{demo_port}");
    let today = today();
    let header = format!("X-API-Key: {key}");
    let cached_path = "/api/v1/operators".to_owned();
    let computed_path = format!("/api/v1/calls/summary?start={today}");
    let agents_path = format!("/api/v1/calls/agents?start={}&end={today}", plus(today, -6));
    // Warm them (the first call statistics compute their days), then keep the very bytes they
    // answer for the baseline to serve.
    let mut bodies = Vec::new();
    let mut agents_etag = String::new();
    for (name, path) in [
        ("operators", &cached_path),
        ("summary", &computed_path),
        ("agents", &agents_path),
    ] {
        wait_until_answering(&format!("http://{demo_address}{path}"), &[&header])?;
        let file = dir.join(format!("{name}.json"));
        let (headers, body) = baseline::record(demo_port, path, &key)?;
        if name == "agents" {
            agents_etag = headers
                .lines()
                .find_map(|line| line.strip_prefix("etag: "))
                .ok_or_else(|| anyhow!("{path} answered no ETag"))?
                .to_owned();
        }
        std::fs::write(&file, body)?;
        bodies.push(format!("/{name}={}", file.display()));
        if name == "operators" {
            // The same body again, with the very headers the endpoint answered.
            let headers_file = dir.join(format!("{name}.headers"));
            std::fs::write(&headers_file, headers)?;
            bodies.push(format!(
                "/{name}-headers={}={}",
                file.display(),
                headers_file.display()
            ));
        }
    }

    let (baseline_server, baseline_port) = baseline::start::<&str>(baseline, &[], dir, &bodies)?;
    let baseline_pid = baseline_server.0.id();
    let base = format!("http://127.0.0.1:{baseline_port}");
    let demo_url = |path: &str| format!("http://{demo_address}{path}");
    let if_none_match = format!("If-None-Match: {agents_etag}");
    let mut targets: Vec<(&str, String, Vec<&str>)> = vec![
        ("/operators (cached)", demo_url(&cached_path), vec![]),
        (
            "baseline, the same bytes",
            format!("{base}/operators"),
            vec![],
        ),
        (
            "/calls/summary (computed, then cached)",
            demo_url(&computed_path),
            vec![],
        ),
        (
            "baseline, the same bytes",
            format!("{base}/summary"),
            vec![],
        ),
        ("baseline, 150 fixed bytes", format!("{base}/"), vec![]),
        ("/calls/agents (cached)", demo_url(&agents_path), vec![]),
        (
            "/calls/agents (cached, gzip)",
            demo_url(&agents_path),
            vec!["Accept-Encoding: gzip"],
        ),
        (
            "/calls/agents (cached, br)",
            demo_url(&agents_path),
            vec!["Accept-Encoding: br"],
        ),
        (
            "/calls/agents (cached, 304)",
            demo_url(&agents_path),
            vec![&if_none_match],
        ),
        (
            "baseline, the same bytes and headers",
            format!("{base}/operators-headers"),
            vec![],
        ),
    ];
    wait_until_answering(&format!("{base}/"), &[&header])?;
    // The earlier binary's demo, loaded on its cached endpoint in the same rounds.
    let before_demo = before
        .map(|binary| start_demo(binary, &dir.join("before"), &[]))
        .transpose()?;
    let before_header = before_demo
        .as_ref()
        .map(|(_, key)| format!("X-API-Key: {key}"));
    if let (Some((before, _)), Some(before_header)) = (&before_demo, &before_header) {
        let url = format!("http://127.0.0.1:{}{cached_path}", before.port);
        wait_until_answering(&url, &[before_header])?;
        targets.push(("/operators (cached), --before binary", url, vec![]));
    }

    // Rounds, each loading every target in turn, so a machine that speeds up or slows down
    // during the run weighs on all of them alike; the medians are reported.
    let mut runs: Vec<Vec<Measured>> = targets.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        for ((name, url, headers), runs) in targets.iter().zip(&mut runs) {
            eprintln!("round {round}/{rounds}: {name}");
            // Each demo is asked with its own key.
            let (key_header, server) = match (&before_header, &before_demo) {
                (Some(before_header), Some((before, _))) if name.ends_with("--before binary") => {
                    (before_header, before.pid())
                }
                _ if url.starts_with(&format!("{base}/")) => (&header, baseline_pid),
                _ => (&header, demo.pid()),
            };
            let cpu_before = cpu_time(server)?;
            let headers: Vec<&str> = [key_header.as_str()]
                .into_iter()
                .chain(headers.iter().copied())
                .collect();
            let figures = wrk::run(&WRK_ARGS, &headers, url)?;
            // wrk counts a 304 as not 2xx: the If-None-Match target answers nothing else.
            if figures.non_2xx > 0 && !name.ends_with("304)") {
                bail!("{name}: {} responses were not 2xx", figures.non_2xx);
            }
            let cpu = cpu_time(server)?.saturating_sub(cpu_before);
            // A request's server CPU in µs; wrk's count is never 0 (`wrk::parse`).
            let requests = f64::from(u32::try_from(figures.requests).unwrap_or(u32::MAX));
            let cpu_us = cpu.as_secs_f64() * 1e6 / requests;
            runs.push(Measured { figures, cpu_us });
        }
    }
    drop((demo, before_demo, baseline_server));

    // Each target's rates in the order of the rounds, before the medians sort them.
    let rates: Vec<Vec<f64>> = runs
        .iter()
        .map(|runs| runs.iter().map(|run| run.figures.per_second).collect())
        .collect();
    let in_order: Vec<String> = rates
        .iter()
        .map(|rates| {
            let rates: Vec<String> = rates.iter().map(|rate| format!("{rate:.0}")).collect();
            rates.join(" ")
        })
        .collect();
    let per_round = |target: usize, baseline: usize| match (rates.get(target), rates.get(baseline))
    {
        (Some(target), Some(baseline)) => by_round(target, baseline),
        _ => String::new(),
    };
    let cached_by_round = per_round(0, 1);
    let before_by_round = per_round(10, 1);
    // The median round of each target by rate (its latencies are that round's), and the
    // median of its CPU a request on its own.
    let mut medians = Vec::new();
    for runs in &mut runs {
        runs.sort_by(|a, b| a.cpu_us.total_cmp(&b.cpu_us));
        let cpu_us = runs.get(runs.len() / 2).map_or(0.0, |run| run.cpu_us);
        runs.sort_by(|a, b| a.figures.per_second.total_cmp(&b.figures.per_second));
        let figures = runs
            .get(runs.len() / 2)
            .map(|run| run.figures)
            .ok_or_else(|| anyhow!("no wrk run"))?;
        medians.push(Measured { figures, cpu_us });
    }
    let rate = |i: usize| medians.get(i).map_or(0.0, |m| m.figures.per_second);
    // Baseline CPU over the target's: like the rate ratio, higher is better.
    let cpu_ratio = |target: usize, baseline: usize| {
        let cpu = |i: usize| medians.get(i).map_or(0.0, |m| m.cpu_us);
        cpu(baseline) / cpu(target)
    };
    let mut report = format!(
        "wrk {} on loopback, median of {rounds} rounds; CPU: the server's user and system time a request\n\
         {:<40} {:>12} {:>10} {:>10} {:>10}   requests/s of each round\n",
        WRK_ARGS.join(" "),
        "target",
        "requests/s",
        "p50",
        "p99",
        "CPU",
    );
    for ((name, _, _), (median, each_round)) in targets.iter().zip(medians.iter().zip(&in_order)) {
        report += &format!(
            "{:<40} {:>12.0} {:>10} {:>10} {:>8.2}µs   {each_round}\n",
            name,
            median.figures.per_second,
            wrk::latency(median.figures.p50_ms),
            wrk::latency(median.figures.p99_ms),
            median.cpu_us,
        );
    }
    report += &format!(
        "ratio cached / baseline with the same bytes: {:.2}; \
         by CPU a request: {:.2}\n\
         ratio computed-then-cached / baseline with the same bytes: {:.2}; by CPU a request: {:.2}\n\
         ratio cached / baseline with 150 fixed bytes: {:.2}\n\
         /calls/agents cached: gzip / uncompressed {:.2}, br / uncompressed {:.2}, \
         304 / uncompressed {:.2}\n\
         ratio cached / baseline with the same bytes and headers: {:.2}; by CPU a request: {:.2}\n\
         ratio cached / baseline with the same bytes, round by round: {cached_by_round}\n",
        rate(0) / rate(1),
        cpu_ratio(0, 1),
        rate(2) / rate(3),
        cpu_ratio(2, 3),
        rate(0) / rate(4),
        rate(6) / rate(5),
        rate(7) / rate(5),
        rate(8) / rate(5),
        rate(0) / rate(9),
        cpu_ratio(0, 9),
    );
    if before.is_some() {
        report += &format!(
            "ratio cached / baseline with the same bytes, --before binary: {:.2}; \
             by CPU a request: {:.2}; round by round: {before_by_round}\n",
            rate(10) / rate(1),
            cpu_ratio(10, 1),
        );
    }
    print(&report)
}

/// A target's rate over its baseline's in each round, and their median: a round's two rates
/// are measured minutes apart at most (the cached endpoint's and its baseline's one after the
/// other), so a machine that speeds up or slows down between rounds weighs on both alike.
fn by_round(target: &[f64], baseline: &[f64]) -> String {
    let mut ratios: Vec<f64> = target.iter().zip(baseline).map(|(t, b)| t / b).collect();
    let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    ratios.sort_by(f64::total_cmp);
    match ratios.get(ratios.len() / 2) {
        Some(median) => format!("{} (median {median:.2})", each.join(" ")),
        None => String::new(),
    }
}

/// One wrk run and the server CPU it cost a request.
#[derive(Debug, Clone, Copy)]
struct Measured {
    figures: wrk::Report,
    cpu_us: f64,
}

/// Runs wrk for a second until the target answers only 200s: this also warms the cache, so
/// the first /calls/summary computes the day and the measured requests are cache hits.
fn wait_until_answering(url: &str, headers: &[&str]) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if wrk::run(&["-t1", "-c1", "-d1s"], headers, url).is_ok_and(|report| report.non_2xx == 0)
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{url} does not answer 200");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_is_its_own_ratio_and_the_median_is_theirs() {
        assert_eq!(
            by_round(&[80.0, 95.0, 60.0], &[100.0, 100.0, 100.0]),
            "0.80 0.95 0.60 (median 0.80)"
        );
        // Round by round, not the ratio of the medians (80 / 100 here).
        assert_eq!(
            by_round(&[90.0, 60.0, 80.0], &[100.0, 100.0, 80.0]),
            "0.90 0.60 1.00 (median 0.90)"
        );
        assert_eq!(by_round(&[], &[]), "", "no rounds, no ratio");
    }
}
