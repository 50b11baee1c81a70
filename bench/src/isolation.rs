//! `isolation`: one partner cannot take the call statistics from the others.
//!
//! Release build, `callstats sim --latency-ms 100 --calls-per-day 5000` as the upstream, a
//! SQLite portal seeded with the demo data, and a fresh `callstats serve` (default settings, but
//! for keeping no call days in the portal database the scenarios share) for each scenario, so
//! that one scenario's kept days do not help the next. In every scenario a
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

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow};
use callstats_domain::calendar::Day;
use xtask::process::{agent, get, in_scratch_dir};
use xtask::serve::{Portal, Server, binary, seconds, sim};

use crate::harness::ask::{Connect, Probe, Reply, ask, at_once, by_status, share_out};
use crate::harness::days::{sub_ranges, summary_path, today};
use crate::harness::metrics::{Measure as _, UPSTREAM_COUNTER, counter};
use crate::harness::{build_name, print};

/// Days the victim keeps held: the 14 before today.
const HELD_DAYS: i64 = 14;
/// The longest range the API answers.
const WINDOW_DAYS: i64 = 31;
/// The history horizon and day budget the service runs with (its defaults).
const HORIZON_DAYS: i64 = 400;
const DAY_BUDGET: u64 = 124;
/// The victim's targets where no other key's work is ahead of it in the fetch queue.
const COLD_DAY_TARGET: &str = "200 in ≤ 3 s every time";
const HELD_DAYS_TARGET: &str = "200 in ≤ 50 ms every time";

/// One partner cannot take the call statistics from the others: `callstats serve` in front of
/// `callstats sim` (100 ms a page) while a victim key asks a cold day every 2 s and a held one
/// every second, against a key asking 60 cold windows at once, one stepping back year by year,
/// 8 keys against a sim answering 429 above a rate, and 12 keys asking a cold month each at
/// once; answers by status and their slowest, upstream requests.
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
    let today = today();
    let plan = Plan::new(today);

    let mut report = format!(
        "\nisolation: `callstats sim` --latency-ms {} --calls-per-day {}, {} build, today in \
         Tashkent {today}; `callstats serve` with its defaults (quota 120 a minute, day budget \
         {DAY_BUDGET} a minute, horizon {HORIZON_DAYS} days, 8 day fetches at once), a fresh \
         one per scenario\n\n\
         | scenario | who | requests | answers (slowest) | target |\n|---|---|---:|---|---|\n",
        options.latency_ms,
        options.calls_per_day,
        build_name(options.debug),
    );

    let attacker = portal.key("attacker", 120)?;
    let server = Scenario::start(&portal, "burst", &plan, &victim)?;
    let run = server.while_victim_asks(&plan.cold_recent, || {
        Ok(at_once(
            server.server.port,
            &attacker,
            &plan.overlapping_windows(),
        ))
    })?;
    run.rows(
        &mut report,
        "60 cold 31-day windows from one key at once",
        (
            "attacker",
            run.attack.as_slice(),
            "429 (budget) or 503 with Retry-After in < 100 ms; no 503 after a 15 s wait",
        ),
        (COLD_DAY_TARGET, HELD_DAYS_TARGET),
    );
    drop(server);

    let stepper = portal.key("stepper", 1_000_000)?;
    let server = Scenario::start(&portal, "stepping", &plan, &victim)?;
    let days_before = server.server.days_fetched()?;
    let paths = plan.months_year_by_year();
    let run = server.while_victim_asks(&plan.cold_older, || {
        // One key, from 4 clients asking one after another.
        let clients = vec![stepper.clone(); 4];
        let attempts = share_out(server.server.port, &clients, &paths, |_| None);
        Ok(attempts.concat())
    })?;
    let days = server.server.days_fetched()?.saturating_sub(days_before);
    let victim_days = run
        .cold
        .iter()
        .filter(|reply| reply.status == 200)
        .count();
    run.rows(
        &mut report,
        "120 month ranges stepping back a year at a time, 4 clients",
        (
            "stepper",
            run.attack.as_slice(),
            "400 before the horizon, never asked upstream; ≤ 124 days fetched",
        ),
        (COLD_DAY_TARGET, HELD_DAYS_TARGET),
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
    let run = server.while_victim_asks(&plan.cold_recent, || {
        // Well-behaved clients: after a 429 or 503 they wait the `Retry-After` they were given.
        let attempts = share_out(
            server.server.port,
            &payers,
            &plan.horizon_windows(),
            |reply| {
                (reply.status != 200)
                    .then_some(reply.retry_after.map(Duration::from_secs))
                    .flatten()
            },
        );
        Ok(attempts.concat())
    })?;
    let samples = sampler.stop();
    let circuit_open = counter(
        &server.server.metrics()?,
        "callstats_upstream_fetches_total",
        "outcome=\"circuit_open\"",
    )?;
    let breaker_lines = log_lines(dir, "throttled", "circuit opened")?;
    run.rows(
        &mut report,
        &format!(
            "the sim answers 429 above {} requests a second; 8 keys ask the whole horizon",
            options.max_rps
        ),
        (
            "8 keys, honouring Retry-After",
            run.attack.as_slice(),
            "200 in the end; the breaker never opens",
        ),
        (
            "its turn after a job of each key ahead: 200, or 503 with Retry-After at once",
            "200 every time",
        ),
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
    let run = server.while_victim_asks(&plan.cold_recent_few, || {
        Ok(twelve_months(
            server.server.port,
            &keys,
            &plan.disjoint_windows(12),
        ))
    })?;
    let firsts: Vec<Reply> = run.attack.iter().map(|month| month.first).collect();
    run.rows(
        &mut report,
        "12 cold 31-day windows from 12 keys at once",
        (
            "12 keys, first answers",
            firsts.as_slice(),
            "the first 200 in ≤ 3 s; the others 503 with Retry-After in < 100 ms",
        ),
        (
            "its turn after a job of each of the 12 keys: 200, or 503 with Retry-After at once",
            HELD_DAYS_TARGET,
        ),
    );
    report.push_str(
        "\nthe 12 keys of scenario 4, by when they got their 200:\n\n\
         | key | first answer | Retry-After | asked | 200 after |\n|---|---|---:|---:|---:|\n",
    );
    let mut by_end: Vec<&Month> = run.attack.iter().collect();
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

    print(&report)
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
        sub_ranges(self.held.0, self.held.1)
            .into_iter()
            .map(|range| summary_path(range, ""))
            .collect()
    }
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
}

/// What a scenario's run got: the attack's outcome, the upstream requests of the whole run,
/// and the victim's answers, for cold days and for held ones.
struct Run<T> {
    attack: T,
    upstream: u64,
    cold: Vec<Reply>,
    held: Vec<Reply>,
}

impl<T> Run<T> {
    /// The scenario's rows: how the attacker's requests (`attack`) and the victim's were
    /// answered, by status with the slowest of each, each against its target, then the
    /// upstream requests.
    fn rows(
        &self,
        report: &mut String,
        scenario: &str,
        (who, attack, target): (&str, &[Reply], &str),
        (cold_target, held_target): (&str, &str),
    ) {
        let whos = [
            (who, attack, target),
            ("victim, cold day", self.cold.as_slice(), cold_target),
            ("victim, held days", self.held.as_slice(), held_target),
        ];
        for (index, (who, replies, target)) in whos.into_iter().enumerate() {
            let name = if index == 0 { scenario } else { "" };
            let _ = writeln!(
                report,
                "| {name} | {who} | {} | {} | {target} |",
                replies.len(),
                by_status(replies)
            );
        }
        let _ = writeln!(report, "| | upstream requests | {} | | |", self.upstream);
    }
}

impl<'a> Scenario<'a> {
    fn start(portal: &Portal<'_>, name: &str, plan: &Plan, victim: &'a str) -> Result<Self> {
        // No days kept in the portal database either: the scenarios share it.
        let server = portal.serve_with(name, None, 0, &[("CALLSTATS_CALL_DAY_PERSIST", "false")])?;
        // The held days, fetched before anything else (this also times a first fetch).
        let warm = ask(&agent(), server.port, &summary_path(plan.held, ""), victim);
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
        })
    }

    /// Runs `attack` while the victim asks a cold day (from `cold`) every 2 s and a held-day
    /// range every second, starting 2 s before it and ending 2 s after it.
    fn while_victim_asks<T>(
        &self,
        cold: &[Day],
        attack: impl FnOnce() -> Result<T>,
    ) -> Result<Run<T>> {
        let before = self.server.upstream_requests()?;
        let cold_paths: Vec<String> = cold
            .iter()
            .map(|day| format!("/api/v1/calls/summary?start={day}"))
            .collect();
        let port = self.server.port;
        let cold = Probe::start(
            port,
            self.victim,
            cold_paths.into_iter(),
            Duration::from_secs(2),
            Connect::KeptAlive,
        );
        let held = Probe::start(
            port,
            self.victim,
            self.held.clone().into_iter(),
            Duration::from_secs(1),
            Connect::KeptAlive,
        );
        std::thread::sleep(Duration::from_secs(2));
        let attack = attack();
        std::thread::sleep(Duration::from_secs(2));
        let (cold, held) = (cold.stop(), held.stop());
        let upstream = self.server.upstream_requests()?.saturating_sub(before);
        Ok(Run {
            attack: attack?,
            upstream,
            cold,
            held,
        })
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
                get(metrics_port, "/metrics", "")
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
}
