//! `cargo xtask isolation`: one partner cannot take the call statistics from the others.
//!
//! Release build, `callstats sim --latency-ms 100 --calls-per-day 5000` as the upstream, a
//! SQLite portal seeded with the demo data, and a fresh `callstats serve` (default settings) for
//! each scenario, so that one scenario's kept days do not help the next. In every scenario a
//! victim key asks one cold day every 2 s and one held day every second (a different sub-range
//! of 14 days fetched before the scenario starts, so that each is computed from held days, not
//! read from the response cache), while:
//!
//! 1. an attacker key asks 60 different cold 31-day windows at once, at the default quota;
//! 2. a key with a high quota asks 120 month ranges stepping back a year at a time, down to
//!    0001-01, from 4 clients at once;
//! 3. 8 keys ask every day of the history horizon, honouring `Retry-After`, against a second
//!    sim that answers 429 above `--max-rps` (50) requests a second;
//! 4. 12 keys ask one cold 31-day window each at once, and ask again after `Retry-After`.
//!
//! The figures are printed as they are: a missed target is a finding, not a failure.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow};
use callstats_domain::calendar::Day;

use crate::process::{agent, in_scratch_dir};
use crate::serve::{Portal, Server, UPSTREAM_COUNTER, binary, counter, seconds, sim};

/// Days the victim keeps held: the 14 before today.
const HELD_DAYS: i64 = 14;
/// The longest range the API answers.
const WINDOW_DAYS: i64 = 31;
/// The history horizon and day budget the service runs with (its defaults).
const HORIZON_DAYS: i64 = 400;
const DAY_BUDGET: u64 = 124;

/// Options of `cargo xtask isolation`.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// The sims' delay before every answer, in milliseconds
    #[arg(long, default_value_t = 100)]
    latency_ms: u64,
    /// The sims' calls on an ordinary weekday
    #[arg(long, default_value_t = 5000)]
    calls_per_day: u32,
    /// The rate past which the second sim answers 429 (scenario 3)
    #[arg(long, default_value_t = 50)]
    max_rps: u32,
    /// The debug binary instead of the release one: checks the task without a fat-LTO build,
    /// but its figures are not the service's
    #[arg(long)]
    debug: bool,
}

pub fn run(options: &Options) -> Result<()> {
    let binary = binary(options.debug)?;
    in_scratch_dir("isolation", |dir| measure(options, &binary, dir))
}

fn measure(options: &Options, binary: &Path, dir: &Path) -> Result<()> {
    let load = [
        "--latency-ms",
        &options.latency_ms.to_string(),
        "--calls-per-day",
        &options.calls_per_day.to_string(),
    ];
    let (_sim, sim_url) = sim(binary, dir, "sim", &load)?;
    let max_rps = options.max_rps.to_string();
    let (_limited, limited_url) = sim(
        binary,
        dir,
        "sim-limited",
        &[&load[..], &["--max-rps", &max_rps]].concat(),
    )?;
    let portal = Portal::seeded_demo(binary, dir, "isolation.db", sim_url)?;
    let limited = portal.in_front_of(limited_url);
    let victim = portal.key("victim", 120)?;
    let today = Day::of(time::OffsetDateTime::now_utc());
    let plan = Plan::new(today);

    let mut report = format!(
        "\nisolation: `callstats sim` --latency-ms {} --calls-per-day {}, {} build, today in \
         Tashkent {today}; `callstats serve` with its defaults (quota 120 a minute, day budget \
         {DAY_BUDGET} a minute, horizon {HORIZON_DAYS} days, 8 day fetches at once), a fresh \
         one per scenario\n\n\
         | scenario | who | requests | answers (slowest) | target |\n|---|---|---:|---|---|\n",
        options.latency_ms,
        options.calls_per_day,
        if options.debug { "debug" } else { "release" },
    );

    let attacker = portal.key("attacker", 120)?;
    let server = Scenario::start(&portal, "burst", &plan, &victim)?;
    let (replies, upstream) = server.while_victim_asks(&plan.cold_recent, || {
        Ok(at_once(
            server.server.port,
            &attacker,
            &plan.overlapping_windows(),
        ))
    })?;
    let victim_rows = server.victim_rows();
    rows(
        &mut report,
        "60 cold 31-day windows from one key at once",
        &[
            (
                "attacker",
                replies.as_slice(),
                "429 (budget) or 503 with Retry-After in < 100 ms; no 503 after a 15 s wait",
            ),
            (
                "victim, cold day",
                victim_rows.0.as_slice(),
                "200 in ≤ 3 s every time",
            ),
            (
                "victim, held days",
                victim_rows.1.as_slice(),
                "200 in ≤ 50 ms every time",
            ),
        ],
        upstream,
    );
    drop(server);

    let stepper = portal.key("stepper", 1_000_000)?;
    let server = Scenario::start(&portal, "stepping", &plan, &victim)?;
    let days_before = server.days_fetched()?;
    let paths = plan.months_year_by_year();
    let (replies, upstream) = server.while_victim_asks(&plan.cold_older, || {
        Ok(from_clients(server.server.port, &stepper, &paths, 4))
    })?;
    let victim_rows = server.victim_rows();
    let days = server.days_fetched()?.saturating_sub(days_before);
    let victim_days = victim_rows
        .0
        .iter()
        .filter(|reply| reply.status == 200)
        .count();
    rows(
        &mut report,
        "120 month ranges stepping back a year at a time, 4 clients",
        &[
            (
                "stepper",
                replies.as_slice(),
                "400 before the horizon, never asked upstream; ≤ 124 days fetched",
            ),
            (
                "victim, cold day",
                victim_rows.0.as_slice(),
                "200 in ≤ 3 s every time",
            ),
            (
                "victim, held days",
                victim_rows.1.as_slice(),
                "200 in ≤ 50 ms every time",
            ),
        ],
        upstream,
    );
    writeln!(
        report,
        "| | days fetched | {days} | the stepper's {}, the victim's {victim_days} | the stepper's ≤ {DAY_BUDGET}, so ≤ {} upstream requests at 5 pages a day |",
        days.saturating_sub(u64::try_from(victim_days).unwrap_or(0)),
        DAY_BUDGET * 5
    )?;
    drop(server);

    let payers: Vec<String> = (0..8)
        .map(|index| limited.key(&format!("payer-{index}"), 120))
        .collect::<Result<_>>()?;
    let server = Scenario::start(&limited, "throttled", &plan, &victim)?;
    let throttled_before = server.throttled()?;
    let sampler = Sampler::start(&server.server);
    let (replies, upstream) = server.while_victim_asks(&plan.cold_recent, || {
        Ok(patient_clients(
            server.server.port,
            &payers,
            &plan.horizon_windows(),
        ))
    })?;
    let victim_rows = server.victim_rows();
    let samples = sampler.stop();
    let circuit_open = counter(
        &server.server.metrics()?,
        "callstats_upstream_fetches_total",
        "outcome=\"circuit_open\"",
    )?;
    let breaker_lines = log_lines(dir, "throttled", "circuit opened")?;
    rows(
        &mut report,
        &format!(
            "the sim answers 429 above {} requests a second; 8 keys ask the whole horizon",
            options.max_rps
        ),
        &[
            (
                "8 keys, honouring Retry-After",
                replies.as_slice(),
                "200 in the end; the breaker never opens",
            ),
            (
                "victim, cold day",
                victim_rows.0.as_slice(),
                "its turn after a job of each key ahead: 200, or 503 with Retry-After at once",
            ),
            (
                "victim, held days",
                victim_rows.1.as_slice(),
                "200 every time",
            ),
        ],
        upstream,
    );
    writeln!(
        report,
        "| | upstream 429s | {} | per 5 s: {} | settle to a small steady number |",
        server.throttled()?.saturating_sub(throttled_before),
        samples.join(", ")
    )?;
    writeln!(
        report,
        "| | breaker | - | fetches refused by an open breaker: {circuit_open}; \"circuit opened\" log lines: {breaker_lines} | never opens |"
    )?;
    drop(server);

    let keys: Vec<String> = (0..12)
        .map(|index| portal.key(&format!("month-{index}"), 120))
        .collect::<Result<_>>()?;
    let server = Scenario::start(&portal, "twelve", &plan, &victim)?;
    let (months, upstream) = server.while_victim_asks(&plan.cold_recent_few, || {
        Ok(twelve_months(
            server.server.port,
            &keys,
            &plan.disjoint_windows(12),
        ))
    })?;
    let victim_rows = server.victim_rows();
    let firsts: Vec<Reply> = months.iter().map(|month| month.first).collect();
    rows(
        &mut report,
        "12 cold 31-day windows from 12 keys at once",
        &[
            (
                "12 keys, first answers",
                firsts.as_slice(),
                "the first 200 in ≤ 3 s; the others 503 with Retry-After in < 100 ms",
            ),
            (
                "victim, cold day",
                victim_rows.0.as_slice(),
                "its turn after a job of each of the 12 keys: 200, or 503 with Retry-After at once",
            ),
            (
                "victim, held days",
                victim_rows.1.as_slice(),
                "200 in ≤ 50 ms every time",
            ),
        ],
        upstream,
    );
    report.push_str(
        "\nthe 12 keys of scenario 4, by when they got their 200:\n\n\
         | key | first answer | Retry-After | asked | 200 after |\n|---|---|---:|---:|---:|\n",
    );
    let mut by_end: Vec<&Month> = months.iter().collect();
    by_end.sort_by_key(|month| month.done.unwrap_or(Duration::MAX));
    for month in by_end {
        writeln!(
            report,
            "| {} | {} in {} | {} | {} | {} |",
            month.key,
            month.first.status,
            seconds(month.first.took),
            month
                .first
                .retry_after
                .map_or_else(|| "-".to_owned(), |secs| format!("{secs} s")),
            month.asked,
            month.done.map_or_else(|| "never".to_owned(), seconds),
        )?;
    }
    drop(server);

    std::io::stdout()
        .lock()
        .write_all(report.as_bytes())
        .context("cannot write the report")
}

/// Which days each scenario asks for, so that the victim's days are nobody else's.
struct Plan {
    today: Day,
    /// The first day of the history horizon.
    earliest: Day,
    /// The victim's held days: the 14 before today.
    held: (Day, Day),
    /// Cold days for the victim, one every 2 s: the 20 before the held ones, those 20 further
    /// back (where scenario 2 asks nothing), and the 8 before the held ones.
    cold_recent: Vec<Day>,
    cold_older: Vec<Day>,
    cold_recent_few: Vec<Day>,
}

impl Plan {
    fn new(today: Day) -> Self {
        let day = |back: i64| today.plus_days(-back).unwrap_or(today);
        let days = |from: i64, to: i64| (from..=to).rev().map(day).collect::<Vec<_>>();
        Self {
            today,
            earliest: day(HORIZON_DAYS - 1),
            held: (day(HELD_DAYS), day(1)),
            cold_recent: days(HELD_DAYS + 1, HELD_DAYS + 20),
            cold_older: days(131, 150),
            cold_recent_few: days(HELD_DAYS + 1, HELD_DAYS + 8),
        }
    }

    /// Scenario 1: 60 windows of 31 days, each ending 5 days before the last, before the
    /// victim's cold days.
    fn overlapping_windows(&self) -> Vec<String> {
        (0..60)
            .map(|index| {
                let end = HELD_DAYS + 21 + 5 * index;
                self.window(end)
            })
            .collect()
    }

    /// Scenario 2: the month of today in each year back to 1908, and 0001-01.
    fn months_year_by_year(&self) -> Vec<String> {
        let (year, month) = (self.today.date().year(), self.today.date().month());
        (0..119)
            .map(|back| year - back)
            .map(|year| (year, month))
            .chain([(1, time::Month::January)])
            .filter_map(|(year, month)| {
                let first = time::Date::from_calendar_date(year, month, 1).ok()?;
                let last = first.replace_day(month.length(year)).ok()?;
                Some(format!(
                    "/api/v1/calls/summary?start={}&end={}",
                    Day::new(first),
                    Day::new(last)
                ))
            })
            .collect()
    }

    /// Scenario 3: every day of the horizon before the victim's cold days, in 31-day windows.
    fn horizon_windows(&self) -> Vec<String> {
        let mut windows = Vec::new();
        let mut end = HELD_DAYS + 21;
        while let Some(start) = self.today.plus_days(-(end + WINDOW_DAYS - 1)) {
            let start = start.max(self.earliest);
            let last = self.today.plus_days(-end).unwrap_or(start);
            if last < start {
                break;
            }
            windows.push(format!("/api/v1/calls/summary?start={start}&end={last}"));
            end += WINDOW_DAYS;
        }
        windows
    }

    /// Scenario 4: `count` windows of 31 days sharing no day, before the victim's cold days.
    fn disjoint_windows(&self, count: i64) -> Vec<String> {
        (0..count)
            .map(|index| self.window(HELD_DAYS + 9 + WINDOW_DAYS * index))
            .collect()
    }

    /// The 31 days ending `end` days before today.
    fn window(&self, end: i64) -> String {
        let day = |back: i64| self.today.plus_days(-back).unwrap_or(self.today);
        format!(
            "/api/v1/calls/summary?start={}&end={}",
            day(end + WINDOW_DAYS - 1),
            day(end)
        )
    }

    /// Every sub-range of the held days (one computed answer each), shortest first.
    fn held_ranges(&self) -> Vec<String> {
        let (first, last) = self.held;
        let days: Vec<Day> = (0..HELD_DAYS)
            .filter_map(|offset| first.plus_days(offset))
            .filter(|day| *day <= last)
            .collect();
        let mut ranges = Vec::new();
        for length in 1..=days.len() {
            for window in days.windows(length) {
                if let (Some(start), Some(end)) = (window.first(), window.last()) {
                    ranges.push(format!("/api/v1/calls/summary?start={start}&end={end}"));
                }
            }
        }
        ranges
    }
}

/// One answer: its status (0 when the request failed), `Retry-After`, and how long it took.
#[derive(Debug, Clone, Copy)]
struct Reply {
    status: u16,
    retry_after: Option<u64>,
    took: Duration,
}

/// A GET with `key` on its own kept-alive connection of `agent`.
fn ask(agent: &ureq::Agent, port: u16, path: &str, key: &str) -> Reply {
    let started = Instant::now();
    let answer = agent
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Authorization", format!("Bearer {key}"))
        .call();
    let took = started.elapsed();
    match answer {
        Ok(mut answer) => {
            let retry_after = answer
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.parse().ok());
            // Read whole, so the connection is kept for the next request.
            let _ = answer.body_mut().read_to_vec();
            Reply {
                status: answer.status().as_u16(),
                retry_after,
                took,
            }
        }
        Err(_) => Reply {
            status: 0,
            retry_after: None,
            took,
        },
    }
}

/// Every path asked at once, one thread each.
fn at_once(port: u16, key: &str, paths: &[String]) -> Vec<Reply> {
    std::thread::scope(|scope| {
        let asked: Vec<_> = paths
            .iter()
            .map(|path| scope.spawn(move || ask(&agent(), port, path, key)))
            .collect();
        asked
            .into_iter()
            .filter_map(|asked| asked.join().ok())
            .collect()
    })
}

/// The paths shared out to `clients` threads, each asking its own one after another.
fn from_clients(port: u16, key: &str, paths: &[String], clients: usize) -> Vec<Reply> {
    std::thread::scope(|scope| {
        let asked: Vec<_> = (0..clients)
            .map(|client| {
                scope.spawn(move || {
                    let agent = agent();
                    paths
                        .iter()
                        .skip(client)
                        .step_by(clients)
                        .map(|path| ask(&agent, port, path, key))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        asked
            .into_iter()
            .filter_map(|asked| asked.join().ok())
            .flatten()
            .collect()
    })
}

/// Each key asks its share of the paths one after another, as a well-behaved client: after a
/// 429 or 503 it waits the `Retry-After` it was given (5 attempts at most per path).
fn patient_clients(port: u16, keys: &[String], paths: &[String]) -> Vec<Reply> {
    std::thread::scope(|scope| {
        let asked: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(index, key)| {
                scope.spawn(move || {
                    let agent = agent();
                    let mut replies = Vec::new();
                    for path in paths.iter().skip(index).step_by(keys.len()) {
                        for _ in 0..5 {
                            let reply = ask(&agent, port, path, key);
                            replies.push(reply);
                            match reply.retry_after {
                                Some(wait) if reply.status != 200 => {
                                    std::thread::sleep(Duration::from_secs(wait));
                                }
                                _ => break,
                            }
                        }
                    }
                    replies
                })
            })
            .collect();
        asked
            .into_iter()
            .filter_map(|asked| asked.join().ok())
            .flatten()
            .collect()
    })
}

/// How one key of scenario 4 fared.
struct Month {
    key: usize,
    first: Reply,
    asked: usize,
    /// When it got its 200, from the start.
    done: Option<Duration>,
}

/// Each key asks its window at the same moment, and again after each `Retry-After`.
fn twelve_months(port: u16, keys: &[String], paths: &[String]) -> Vec<Month> {
    let started = Instant::now();
    std::thread::scope(|scope| {
        let asked: Vec<_> = keys
            .iter()
            .zip(paths)
            .enumerate()
            .map(|(index, (key, path))| {
                scope.spawn(move || {
                    let agent = agent();
                    let first = ask(&agent, port, path, key);
                    let mut month = Month {
                        key: index + 1,
                        first,
                        asked: 1,
                        done: (first.status == 200).then(|| started.elapsed()),
                    };
                    let mut last = first;
                    while month.done.is_none() && month.asked < 6 {
                        let Some(wait) = last.retry_after else { break };
                        std::thread::sleep(Duration::from_secs(wait));
                        last = ask(&agent, port, path, key);
                        month.asked += 1;
                        if last.status == 200 {
                            month.done = Some(started.elapsed());
                        }
                    }
                    month
                })
            })
            .collect();
        asked
            .into_iter()
            .filter_map(|asked| asked.join().ok())
            .collect()
    })
}

/// A fresh `callstats serve` whose held days the victim fetched first.
struct Scenario<'a> {
    server: Server,
    victim: &'a str,
    held: Vec<String>,
    replies: Arc<Mutex<(Vec<Reply>, Vec<Reply>)>>,
}

impl<'a> Scenario<'a> {
    fn start(portal: &Portal<'_>, name: &str, plan: &Plan, victim: &'a str) -> Result<Self> {
        let server = portal.serve(name, None)?;
        // The held days, fetched before anything else (this also times a first fetch).
        let (first, last) = plan.held;
        let warm = ask(
            &agent(),
            server.port,
            &format!("/api/v1/calls/summary?start={first}&end={last}"),
            victim,
        );
        if warm.status != 200 {
            return Err(anyhow!(
                "{name}: the victim's held days answered {}",
                warm.status
            ));
        }
        Ok(Self {
            server,
            victim,
            held: plan.held_ranges(),
            replies: Arc::default(),
        })
    }

    /// Runs `attack` while the victim asks a cold day (from `cold`) every 2 s and a held-day
    /// range every second, starting 2 s before it and ending 2 s after it; what the attack
    /// got and the upstream requests of the whole run.
    fn while_victim_asks<T>(
        &self,
        cold: &[Day],
        attack: impl FnOnce() -> Result<T>,
    ) -> Result<(T, u64)> {
        let before = self.server.upstream_requests()?;
        let stop = Arc::new(AtomicBool::new(false));
        let cold_paths: Vec<String> = cold
            .iter()
            .map(|day| format!("/api/v1/calls/summary?start={day}"))
            .collect();
        let probes = [
            self.probe(cold_paths, Duration::from_secs(2), &stop, true),
            self.probe(self.held.clone(), Duration::from_secs(1), &stop, false),
        ];
        std::thread::sleep(Duration::from_secs(2));
        let outcome = attack();
        std::thread::sleep(Duration::from_secs(2));
        stop.store(true, Ordering::SeqCst);
        for probe in probes {
            probe
                .join()
                .map_err(|_| anyhow!("a victim thread panicked"))?;
        }
        let upstream = self.server.upstream_requests()?.saturating_sub(before);
        Ok((outcome?, upstream))
    }

    /// A thread asking `paths` in turn, one each `every`, until `stop`.
    fn probe(
        &self,
        paths: Vec<String>,
        every: Duration,
        stop: &Arc<AtomicBool>,
        cold: bool,
    ) -> JoinHandle<()> {
        let (port, key) = (self.server.port, self.victim.to_owned());
        let (stop, replies) = (Arc::clone(stop), Arc::clone(&self.replies));
        std::thread::spawn(move || {
            let agent = agent();
            for path in paths {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let started = Instant::now();
                let reply = ask(&agent, port, &path, &key);
                if let Ok(mut replies) = replies.lock() {
                    if cold { &mut replies.0 } else { &mut replies.1 }.push(reply);
                }
                std::thread::sleep(every.saturating_sub(started.elapsed()));
            }
        })
    }

    /// The victim's cold-day and held-day answers.
    fn victim_rows(&self) -> (Vec<Reply>, Vec<Reply>) {
        self.replies
            .lock()
            .map(|replies| replies.clone())
            .unwrap_or_default()
    }

    /// Days fetched from the upstream by this server so far.
    fn days_fetched(&self) -> Result<u64> {
        counter(
            &self.server.metrics()?,
            "callstats_call_days_fetched_total",
            "outcome=\"ok\"",
        )
    }

    /// Upstream answers asking to slow down, so far.
    fn throttled(&self) -> Result<u64> {
        counter(
            &self.server.metrics()?,
            UPSTREAM_COUNTER,
            "outcome=\"throttled\"",
        )
    }
}

/// Reads a server's throttled-answer counter every 5 s in a thread of its own.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<String>>,
}

impl Sampler {
    fn start(server: &Server) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let metrics_port = server.metrics_port;
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let read = || {
                crate::process::get(metrics_port, "/metrics", "")
                    .ok()
                    .and_then(|(_, body)| String::from_utf8(body).ok())
                    .and_then(|text| counter(&text, UPSTREAM_COUNTER, "outcome=\"throttled\"").ok())
                    .unwrap_or(0)
            };
            let mut samples = Vec::new();
            let mut last = read();
            while !flag.load(Ordering::SeqCst) {
                let started = Instant::now();
                while started.elapsed() < Duration::from_secs(5) && !flag.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                }
                let now = read();
                samples.push(now.saturating_sub(last).to_string());
                last = now;
            }
            samples
        });
        Self { stop, thread }
    }

    fn stop(self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

/// Lines of a process's log (`<name>.log`) containing `text`.
fn log_lines(dir: &Path, name: &str, text: &str) -> Result<usize> {
    let log = std::fs::read_to_string(dir.join(format!("{name}.log")))
        .with_context(|| format!("cannot read {name}.log"))?;
    Ok(log.lines().filter(|line| line.contains(text)).count())
}

/// The rows of one scenario: for each who, the answers by status with the slowest of each.
fn rows(report: &mut String, scenario: &str, whos: &[(&str, &[Reply], &str)], upstream: u64) {
    for (index, (who, replies, target)) in whos.iter().enumerate() {
        let name = if index == 0 { scenario } else { "" };
        let _ = writeln!(
            report,
            "| {name} | {who} | {} | {} | {target} |",
            replies.len(),
            by_status(replies)
        );
    }
    let _ = writeln!(report, "| | upstream requests | {upstream} | | |");
}

/// `200 ×4 (2.31 s), 429 ×56 (12 ms)`: how many of each status, and the slowest of each.
fn by_status(replies: &[Reply]) -> String {
    let mut statuses: BTreeMap<u16, (usize, Duration)> = BTreeMap::new();
    for reply in replies {
        let entry = statuses.entry(reply.status).or_default();
        entry.0 += 1;
        entry.1 = entry.1.max(reply.took);
    }
    statuses
        .iter()
        .map(|(status, (count, slowest))| {
            let status = if *status == 0 {
                "failed".to_owned()
            } else {
                status.to_string()
            };
            format!("{status} ×{count} ({})", seconds(*slowest))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(raw: &str) -> Day {
        Day::parse(raw).unwrap()
    }

    fn dates(path: &str) -> (Day, Day) {
        let query = path.split_once('?').unwrap().1;
        let mut start = None;
        let mut end = None;
        for pair in query.split('&') {
            match pair.split_once('=').unwrap() {
                ("start", value) => start = Some(day(value)),
                ("end", value) => end = Some(day(value)),
                _ => {}
            }
        }
        (start.unwrap(), end.or(start).unwrap())
    }

    fn days_of((start, end): (Day, Day)) -> Vec<Day> {
        (0..=(end.number() - start.number()))
            .filter_map(|offset| start.plus_days(offset))
            .collect()
    }

    #[test]
    fn the_victim_s_days_are_nobody_else_s_and_everything_is_within_the_horizon() {
        let plan = Plan::new(day("2026-11-25"));
        let held = days_of(plan.held);
        assert_eq!(held.len(), 14);
        assert_eq!(plan.earliest, day("2025-10-22"));
        let asked = |paths: Vec<String>| -> Vec<Day> {
            paths.iter().flat_map(|path| days_of(dates(path))).collect()
        };
        for (attack, cold) in [
            (asked(plan.overlapping_windows()), &plan.cold_recent),
            (asked(plan.horizon_windows()), &plan.cold_recent),
            (asked(plan.disjoint_windows(12)), &plan.cold_recent_few),
        ] {
            assert!(
                attack.iter().all(|day| *day >= plan.earliest),
                "within the horizon"
            );
            assert!(
                attack
                    .iter()
                    .all(|day| !held.contains(day) && !cold.contains(day)),
                "the victim's days are its own"
            );
            assert!(cold.iter().all(|day| !held.contains(day)));
        }
        let twelve = asked(plan.disjoint_windows(12));
        let distinct: std::collections::HashSet<&Day> = twelve.iter().collect();
        assert_eq!(
            (twelve.len(), distinct.len()),
            (372, 372),
            "12 × 31, none shared"
        );
        let horizon = asked(plan.horizon_windows());
        assert_eq!(
            horizon.len(),
            400 - 14 - 20 - 1,
            "every day of the horizon but today and the victim's"
        );
    }

    #[test]
    fn the_stepping_months_reach_back_to_year_one_and_only_two_are_within_the_horizon() {
        let plan = Plan::new(day("2026-11-25"));
        let months = plan.months_year_by_year();
        assert_eq!(months.len(), 120);
        assert_eq!(
            months.first().unwrap(),
            "/api/v1/calls/summary?start=2026-11-01&end=2026-11-30"
        );
        assert_eq!(
            months.last().unwrap(),
            "/api/v1/calls/summary?start=0001-01-01&end=0001-01-31"
        );
        let within = months
            .iter()
            .filter(|path| dates(path).0 >= plan.earliest)
            .count();
        assert_eq!(within, 2);
        let cold = &plan.cold_older;
        assert!(months.iter().all(|path| {
            let (start, end) = dates(path);
            cold.iter().all(|day| *day < start || *day > end)
        }));
    }

    #[test]
    fn every_sub_range_of_the_held_days_is_asked_once() {
        let plan = Plan::new(day("2026-11-25"));
        let ranges = plan.held_ranges();
        assert_eq!(ranges.len(), 14 * 15 / 2);
        let distinct: std::collections::HashSet<&String> = ranges.iter().collect();
        assert_eq!(distinct.len(), ranges.len());
    }

    #[test]
    fn answers_are_counted_by_status_with_the_slowest_of_each() {
        let reply = |status, millis| Reply {
            status,
            retry_after: None,
            took: Duration::from_millis(millis),
        };
        assert_eq!(
            by_status(&[reply(429, 3), reply(200, 2310), reply(429, 12), reply(0, 1)]),
            "failed ×1 (1 ms), 200 ×1 (2.31 s), 429 ×2 (12 ms)"
        );
    }
}
