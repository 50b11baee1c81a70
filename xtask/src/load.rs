//! `cargo xtask load`: `callstats demo` (release) and a bare actix-web baseline on loopback,
//! loaded with wrk in alternating rounds; the baseline answers the very bytes of each measured
//! endpoint, so the ratio compares the request pipeline and not the body size.
//!
//! Besides requests a second, each target's server CPU a request (user and system time of the
//! server process, from `/proc`, over the requests wrk counted) is reported: wrk shares the
//! machine's cores with the server, so the rate depends on how the scheduler shares them too,
//! while the CPU a request is the server's own cost.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use callstats_domain::calendar::Day;

use crate::cargo;
use crate::process::{Running, free_port, in_scratch_dir, require, target_dir, wrapped};
use crate::wrk;

/// wrk's settings for every target: threads, connections, duration.
const WRK_ARGS: [&str; 6] = ["-t2", "-c32", "-d10s", "--latency", "--timeout", "5s"];
/// The measurement target (issue 14): cached endpoint / baseline.
const TARGET_RATIO: f64 = 0.8;

/// Options of `cargo xtask load`.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// Another `callstats` binary (an earlier commit's release build) whose demo is loaded on
    /// its cached endpoint in the same rounds, so that its ratio and this one's are measured
    /// in one run on the same machine
    #[arg(long, value_name = "BINARY")]
    pub(crate) before: Option<PathBuf>,
    /// How many times every target is loaded: the rates of one machine swing by 15 % and more
    /// between rounds, so a ratio near its target is judged on more rounds than the default
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) rounds: u16,
}

/// Loads `callstats demo` (release) and the baseline server with wrk; prints the figures.
pub fn run(options: &Options) -> Result<()> {
    require("wrk", "wrk")?;
    let (callstats, baseline) = release_builds()?;
    in_scratch_dir("load", |dir| measure(&callstats, options, &baseline, dir))
}

/// The release builds of `callstats` and of the baseline server, built first.
pub(crate) fn release_builds() -> Result<(PathBuf, PathBuf)> {
    cargo(
        &[
            "build",
            "--release",
            "-p",
            "callstats",
            "--bin",
            "callstats",
        ],
        &[],
    )?;
    cargo(
        &["build", "--release", "-p", "xtask", "--bin", "baseline"],
        &[],
    )?;
    let release = target_dir().join("release");
    Ok((release.join("callstats"), release.join("baseline")))
}

/// A server being measured: a `callstats demo` with a key wrk cannot exhaust, or a baseline
/// (its key empty).
pub(crate) struct Server {
    pub(crate) _process: Running,
    pub(crate) pid: u32,
    pub(crate) port: u16,
    pub(crate) key: String,
}

/// Starts `callstats demo` in `dir`, run by the program and arguments of `under` when there
/// are some (a profiler), and issues a key whose quota wrk cannot exhaust.
pub(crate) fn start_demo(callstats: &Path, dir: &Path, under: &[String]) -> Result<Server> {
    std::fs::create_dir_all(dir)?;
    let port = free_port()?;
    let mut demo = wrapped(under, callstats)
        .args(["demo", "--bind", &format!("127.0.0.1:{port}")])
        .current_dir(dir)
        // Its default log level (info: one line per request) unless RUST_LOG says otherwise;
        // the log goes to a file so the terminal shows only the figures.
        .env_remove("CALLSTATS_CALL_PLATFORM_URL")
        .env_remove("CALLSTATS_DATABASE_URL")
        .env_remove("CALLSTATS_REDIS_URL")
        // No warm days: the warmer's background fetches (the whole warm-up, under callgrind)
        // would be counted with the requests, and since the synthetic calls carry waits and
        // queues they cost more to make (issue 37: +16 % on /operators with it, -0.4 % without).
        .env("CALLSTATS_CALL_DAY_WARM_DAYS", "0")
        // Metrics served, as every deployment does (docs/operations.md): without a recorder
        // the request metrics are skipped, and the figures would not be production's.
        .env(
            "CALLSTATS_METRICS_BIND",
            format!("127.0.0.1:{}", free_port()?),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("demo.log"))?)
        .spawn()
        .with_context(|| format!("could not start {} demo", callstats.display()))?;
    let stdout = demo
        .stdout
        .take()
        .ok_or_else(|| anyhow!("no demo stdout"))?;
    let pid = demo.id();
    let process = Running(demo);
    // The demo prints its key once it listens; the key itself is not needed (it has the
    // default quota of 120 a minute), only the moment.
    let mut stdout = BufReader::new(stdout);
    let mut first = String::new();
    stdout.read_line(&mut first)?;
    if !first.starts_with("key: cs_") {
        bail!("callstats demo did not print its key");
    }
    // The demo goes on printing its curl lines: keep reading, or its writes fail.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));

    let created = Command::new(callstats)
        .args([
            "keys",
            "create",
            "--name",
            "load",
            "--scopes",
            "calls,operators",
            "--rate-limit",
            "1000000000",
            "--database-url",
            "sqlite://callstats-demo.db",
        ])
        .current_dir(dir)
        .stderr(Stdio::null())
        .output()
        .context("could not run callstats keys create")?;
    if !created.status.success() {
        bail!("callstats keys create failed with {}", created.status);
    }
    let key = String::from_utf8(created.stdout)?.trim().to_owned();
    Ok(Server {
        _process: process,
        pid,
        port,
        key,
    })
}

fn measure(callstats: &Path, options: &Options, baseline: &Path, dir: &Path) -> Result<()> {
    let (before, rounds) = (options.before.as_deref(), options.rounds);
    let demo = start_demo(callstats, dir, &[])?;
    let (demo_port, key) = (demo.port, demo.key.clone());
    let demo_address = format!("127.0.0.1:{demo_port}");
    let today = Day::of(time::OffsetDateTime::now_utc());
    let header = format!("X-API-Key: {key}");
    let cached_path = "/api/v1/operators".to_owned();
    let computed_path = format!("/api/v1/calls/summary?start={today}");
    let agents_path = format!(
        "/api/v1/calls/agents?start={}&end={today}",
        today.plus_days(-6).unwrap_or(today)
    );
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
        let (headers, body) = answer_of(demo_port, path, &key)?;
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

    let baseline_address = format!("127.0.0.1:{}", free_port()?);
    let baseline_server = Running(
        Command::new(baseline)
            .arg(&baseline_address)
            .args(&bodies)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("could not start the baseline server")?,
    );
    let baseline_pid = baseline_server.0.id();
    let base = format!("http://{baseline_address}");
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
        .map(|before| format!("X-API-Key: {}", before.key));
    if let (Some(before), Some(before_header)) = (&before_demo, &before_header) {
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
                (Some(before_header), Some(before)) if name.ends_with("--before binary") => {
                    (before_header, before.pid)
                }
                _ if url.starts_with(&format!("{base}/")) => (&header, baseline_pid),
                _ => (&header, demo.pid),
            };
            let cpu_before = cpu_time(server)?;
            let output = Command::new("wrk")
                .args(WRK_ARGS)
                .args(["-H", key_header])
                .args(headers.iter().flat_map(|h| ["-H", h]))
                .arg(url)
                .output()
                .context("could not run wrk")?;
            if !output.status.success() {
                bail!("wrk failed with {}", output.status);
            }
            let text = String::from_utf8(output.stdout)?;
            let figures =
                wrk::parse(&text).with_context(|| format!("unexpected wrk output:\n{text}"))?;
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
    drop(demo);
    let before_measured = before_demo.is_some();
    drop(before_demo);

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
        "ratio cached / baseline with the same bytes: {:.2} (target >= {TARGET_RATIO}); \
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
    if before_measured {
        report += &format!(
            "ratio cached / baseline with the same bytes, --before binary: {:.2}; \
             by CPU a request: {:.2}; round by round: {before_by_round}\n",
            rate(10) / rate(1),
            cpu_ratio(10, 1),
        );
    }
    std::io::stdout()
        .lock()
        .write_all(report.as_bytes())
        .context("cannot write the report")?;
    Ok(())
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

/// The user and system time `pid` has used so far.
fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("cannot read the CPU time of process {pid}"))?;
    cpu_time_of(&stat).ok_or_else(|| anyhow!("unexpected /proc/{pid}/stat: {stat}"))
}

/// The user and system time of a `/proc/PID/stat` line, counted in the kernel's user-visible
/// clock ticks: 100 a second on Linux, whatever the kernel's own rate.
fn cpu_time_of(stat: &str) -> Option<Duration> {
    const TICKS_A_SECOND: u64 = 100;
    // The command name, in parentheses, may hold spaces and parentheses: the fields are
    // counted after its last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
    let ticks = |i: usize| fields.get(i).and_then(|t| t.parse::<u64>().ok());
    Some(Duration::from_millis(
        (ticks(11)? + ticks(12)?) * 1000 / TICKS_A_SECOND,
    ))
}

/// Runs wrk for a second until the target answers only 200s: this also warms the cache, so
/// the first /calls/summary computes the day and the measured requests are cache hits.
fn wait_until_answering(url: &str, headers: &[&str]) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let output = Command::new("wrk")
            .args(["-t1", "-c1", "-d1s"])
            .args(headers.iter().flat_map(|h| ["-H", h]))
            .arg(url)
            .output()
            .context("could not run wrk")?;
        let answered = wrk::parse(&String::from_utf8_lossy(&output.stdout))
            .is_some_and(|report| report.non_2xx == 0);
        if output.status.success() && answered {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{url} does not answer 200");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// What `path` answers with (a 200, or an error): its headers, as `name: value` lines, without
/// those actix writes itself (`date`, `content-length`), for the baseline to send the same
/// headers; and its body.
pub(crate) fn answer_of(port: u16, path: &str, key: &str) -> Result<(String, Vec<u8>)> {
    let mut response = ureq::get(format!("http://127.0.0.1:{port}{path}"))
        .header("X-API-Key", key)
        .call()
        .with_context(|| format!("GET {path}"))?;
    if response.status() != 200 {
        bail!("{path} answered {}", response.status());
    }
    let mut lines = String::new();
    for (name, value) in response.headers() {
        if matches!(name.as_str(), "date" | "content-length") {
            continue;
        }
        let value = value
            .to_str()
            .with_context(|| format!("{path} answered a header that is not text: {name}"))?;
        lines += &format!("{name}: {value}\n");
    }
    let body = response
        .body_mut()
        .read_to_vec()
        .with_context(|| format!("GET {path}: the body could not be read"))?;
    Ok((lines, body))
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

    #[test]
    fn the_cpu_time_is_utime_and_stime_after_the_command_name() {
        let stat = "4242 (tokio rt) (x)) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                    250 37 0 0 20 0 12 0 1000 100000 500 18446744073709551615";
        assert_eq!(cpu_time_of(stat), Some(Duration::from_millis(2870)));
        assert_eq!(cpu_time_of("4242 (callstats) S 1 2"), None);
        assert_eq!(cpu_time_of("no command name"), None);
    }

    #[test]
    fn the_cpu_time_of_this_process_grows_as_it_works() {
        let before = cpu_time(std::process::id()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let spin = Instant::now();
            while spin.elapsed() < Duration::from_millis(5) {}
            let used = cpu_time(std::process::id()).unwrap().saturating_sub(before);
            if used >= Duration::from_millis(50) {
                return;
            }
            assert!(Instant::now() < deadline, "20 s of spinning used {used:?}");
        }
    }
}
