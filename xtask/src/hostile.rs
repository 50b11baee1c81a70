//! `cargo xtask hostile`: a broken or hostile upstream, a slow client, a spike, and what the
//! server does about them.
//!
//! Release build, a SQLite portal seeded with the demo data, and for each scenario a fresh
//! `callstats serve` with its default settings in front of `hostile` (xtask/src/bin/hostile.rs,
//! 100 ms a page), whose answers for the last 7 days are ordinary and for older days follow
//! the scenario's mode; the cache-filling scenario uses `callstats sim` instead. Each scenario
//! prints the API's answer (status and time), the upstream requests it caused, the serve
//! process's RSS before it, at its peak and 30 s after it, and the slowest `/healthz` and
//! held-day answer (a different range of the 7 ordinary days each time, so it is computed, not
//! read from the response cache) asked every 250 ms while it ran. The figures are printed as
//! they are: a missed target is a finding, not a failure.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow};
use callstats_domain::calendar::Day;

use crate::process::{Running, agent, free_port, in_scratch_dir, spawn, target_dir, wait_for_port};
use crate::serve::{PORT_WAIT, Portal, Server, binary_with, mebibytes, rss_kib, seconds, sim};

/// How long after a scenario its RSS is read again.
const SETTLE: Duration = Duration::from_secs(30);
/// Days before today the hostile platform answers ordinarily (the held days).
const ORDINARY_DAYS: i64 = 7;

/// Options of `cargo xtask hostile`.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// The upstreams' delay before every answer, in milliseconds
    #[arg(long, default_value_t = 100)]
    latency_ms: u64,
    /// The debug binaries instead of the release ones: checks the task without a fat-LTO
    /// build, but its figures are not the service's
    #[arg(long)]
    debug: bool,
    /// The global allocator of the service: glibc's, or the `callstats` crate's feature of
    /// that name
    #[arg(long, default_value = "glibc", value_parser = ["glibc", "mimalloc", "jemalloc"])]
    allocator: String,
    /// Only the scenarios whose name holds this text (all of them by default)
    #[arg(long)]
    only: Option<String>,
}

pub fn run(options: &Options) -> Result<()> {
    let feature = (options.allocator != "glibc").then_some(options.allocator.as_str());
    let binary = binary_with(options.debug, feature)?;
    // The hostile platform is a debug build either way: its own speed is not measured (a page
    // of 1,000 calls takes it a few milliseconds, against the 100 ms of latency), and a second
    // fat-LTO build of actix would cost more than the whole run.
    crate::cargo(&["build", "-p", "xtask", "--bin", "hostile"], &[])?;
    let hostile = target_dir().join("debug").join("hostile");
    in_scratch_dir("hostile", |dir| measure(options, &binary, &hostile, dir))
}

fn measure(options: &Options, binary: &Path, hostile: &Path, dir: &Path) -> Result<()> {
    let today = Day::of(time::OffsetDateTime::now_utc());
    let day = |back: i64| today.plus_days(-back).unwrap_or(today);
    let port = free_port()?;
    let _hostile: Running = spawn(
        Command::new(hostile).args([
            format!("127.0.0.1:{port}"),
            options.latency_ms.to_string(),
            day(ORDINARY_DAYS).to_string(),
        ]),
        dir,
        "hostile",
    )?;
    wait_for_port(port, PORT_WAIT)?;
    let (_sim, sim_url) = sim(
        binary,
        dir,
        "sim",
        &["--latency-ms", &options.latency_ms.to_string()],
    )?;
    let mode_url = |name: &str| format!("http://127.0.0.1:{port}/{name}");
    let seeded = Portal::seeded_demo(binary, dir, "hostile.db", mode_url("ordinary"))?;
    let mode = |name: &str| seeded.in_front_of(mode_url(name));
    let key = seeded.key("hostile", 1_000_000)?;
    let fillers: Vec<String> = (0..4)
        .map(|index| seeded.key(&format!("filler-{index}"), 1_000_000))
        .collect::<Result<_>>()?;
    let held = (day(ORDINARY_DAYS), day(1));
    let summary = |start: Day, end: Day| format!("/api/v1/calls/summary?start={start}&end={end}");
    let agents = |start: Day, end: Day| format!("/api/v1/calls/agents?start={start}&end={end}");

    let mut rows = Vec::new();
    let mut run = |name: &str,
                   upstream: &Portal<'_>,
                   launcher: &[&str],
                   action: &dyn Fn(&Server) -> Result<String>|
     -> Result<()> {
        if options
            .only
            .as_ref()
            .is_some_and(|only| !name.contains(only.as_str()))
        {
            return Ok(());
        }
        let slug: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let server = upstream.serve_under(&slug, None, launcher)?;
        let row = Scenario::run(&server, name, &key, held, action)?;
        rows.push(row);
        Ok(())
    };

    run(
        "100,000 agents a day: /calls/agents over 31 days",
        &mode("agents"),
        &[],
        &|server| Ok(answer(server, &agents(day(45), day(15)), &key)),
    )?;
    run(
        "100,000 agents a day: two such ranges at once",
        &mode("agents"),
        &[],
        &|server| {
            Ok(at_once(
                server,
                &[agents(day(80), day(50)), agents(day(120), day(90))],
                &key,
            ))
        },
    )?;
    run(
        "endless pages, 1,000 new calls each",
        &mode("endless"),
        &[],
        &|server| Ok(answer(server, &summary(day(20), day(20)), &key)),
    )?;
    run(
        "endless pages of 1,000 valid calls, ids of 40 bytes: one day",
        &mode("endless-40"),
        &[],
        &|server| {
            let answered = answer(server, &summary(day(20), day(20)), &key);
            Ok(format!("{answered}; {}", until_quiet(server)))
        },
    )?;
    run(
        "endless pages of 1,000 valid calls, ids of 40 bytes: 8 days at once",
        &mode("endless-40"),
        &[],
        &|server| {
            let paths: Vec<String> = (30..38).map(|back| summary(day(back), day(back))).collect();
            let answered = at_once(server, &paths, &key);
            Ok(format!("{answered}; {}", until_quiet(server)))
        },
    )?;
    run(
        "endless pages with ids of 4 KB",
        &mode("long-ids"),
        &[],
        &|server| Ok(answer(server, &summary(day(20), day(20)), &key)),
    )?;
    run(
        "duration_seconds 1e308",
        &mode("huge-duration"),
        &[],
        &|server| Ok(answer(server, &summary(day(20), day(20)), &key)),
    )?;
    run(
        "started_at 23:59:60+05:00 (a leap second)",
        &mode("leap-second"),
        &[],
        &|server| Ok(answer(server, &summary(day(20), day(20)), &key)),
    )?;
    let horizon: Vec<(Day, Day)> = (0..12)
        .map(|window| {
            (
                day(ORDINARY_DAYS + 31 * window + 31),
                day(ORDINARY_DAYS + 31 * window + 1),
            )
        })
        .collect();
    run(
        "the horizon fetched (sim, 5,000 calls a weekday): the call-day cache filled",
        &seeded.in_front_of(sim_url),
        &[],
        &|server| {
            let paths: Vec<String> = horizon
                .iter()
                .map(|(start, end)| summary(*start, *end))
                .collect();
            Ok(spread(server, &paths, &fillers))
        },
    )?;
    run(
        "1,000 GETs with Transfer-Encoding: chunked and no body",
        &mode("ordinary"),
        &[],
        &|server| bodiless(server, &key, 1_000),
    )?;
    run(
        "2,000 idle connections, ulimit -n 1024",
        &mode("ordinary"),
        &["prlimit", "--nofile=1024:1024", "--"],
        &|server| idle_connections(server, &key, 2_000),
    )?;

    let mut report = format!(
        "\nhostile: a platform {} ms a page, {} build, {} allocator, `callstats serve` with its \
         defaults (a fresh one per scenario), today in Tashkent {today}\n\n\
         | scenario | answer | upstream requests | RSS before / peak / {} s after | /healthz, slowest | held days, slowest |\n\
         |---|---|---:|---|---:|---:|\n",
        options.latency_ms,
        if options.debug { "debug" } else { "release" },
        options.allocator,
        SETTLE.as_secs(),
    );
    for row in rows {
        let _ = writeln!(report, "{row}");
    }
    std::io::stdout()
        .lock()
        .write_all(report.as_bytes())
        .context("cannot write the report")
}

/// One GET with `key`: `200 in 1.23 s`.
fn answer(server: &Server, path: &str, key: &str) -> String {
    let (status, took) = timed(server.port, path, key);
    format!("{status} in {}", seconds(took))
}

fn timed(port: u16, path: &str, key: &str) -> (u16, Duration) {
    let started = Instant::now();
    let status = agent()
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Authorization", format!("Bearer {key}"))
        .call()
        .map_or(0, |mut answer| {
            let _ = answer.body_mut().read_to_vec();
            answer.status().as_u16()
        });
    (status, started.elapsed())
}

/// Waits until the fetches the answers left running in the background have ended (no upstream
/// request for a second, two minutes at most): how long that took.
fn until_quiet(server: &Server) -> String {
    let started = Instant::now();
    let mut last = server.upstream_requests().unwrap_or(0);
    while started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_secs(1));
        let now = server.upstream_requests().unwrap_or(0);
        if now == last {
            break;
        }
        last = now;
    }
    format!("fetches ended {} later", seconds(started.elapsed()))
}

/// Every path at once: each one's answer.
fn at_once(server: &Server, paths: &[String], key: &str) -> String {
    let port = server.port;
    std::thread::scope(|scope| {
        let asked: Vec<_> = paths
            .iter()
            .map(|path| scope.spawn(move || timed(port, path, key)))
            .collect();
        asked
            .into_iter()
            .filter_map(|asked| asked.join().ok())
            .map(|(status, took)| format!("{status} in {}", seconds(took)))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// The paths shared out to one client per key, each asking its own in turn and again after
/// `Retry-After`: how many answered 200, and how long it all took.
fn spread(server: &Server, paths: &[String], keys: &[String]) -> String {
    let port = server.port;
    let started = Instant::now();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let asked: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(index, key)| {
                scope.spawn(move || {
                    paths
                        .iter()
                        .skip(index)
                        .step_by(keys.len())
                        .map(|path| {
                            let mut status = 0;
                            for _ in 0..5 {
                                status = timed(port, path, key).0;
                                if status == 200 {
                                    break;
                                }
                                std::thread::sleep(Duration::from_secs(2));
                            }
                            status
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        asked
            .into_iter()
            .filter_map(|asked| asked.join().ok())
            .flatten()
            .collect()
    });
    let ok = statuses.iter().filter(|status| **status == 200).count();
    format!(
        "{ok} of {} windows 200 in {}",
        statuses.len(),
        seconds(started.elapsed())
    )
}

/// `count` connections each sending a GET that announces a chunked body and never sends it:
/// how many were answered, and how long until the last was closed.
fn bodiless(server: &Server, key: &str, count: usize) -> Result<String> {
    let started = Instant::now();
    let mut streams = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        stream.write_all(
            format!(
                "GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {key}\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            .as_bytes(),
        )?;
        streams.push(stream);
    }
    let mut answered = 0;
    let mut held = 0;
    for mut stream in streams {
        let mut bytes = Vec::new();
        match stream.read_to_end(&mut bytes) {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(_) => held += 1,
        }
        if bytes.starts_with(b"HTTP/1.1 200") {
            answered += 1;
        }
    }
    Ok(format!(
        "{answered} of {count} answered 200; all closed {} after sending ({held} still open after 20 s)",
        seconds(started.elapsed())
    ))
}

/// A connection that asked once (and is kept alive), then `count` idle connections opened in
/// a thread of their own (those past the listen backlog give up after 200 ms); a second of that
/// later, a GET on the kept connection and one on a new connection.
fn idle_connections(server: &Server, key: &str, count: usize) -> Result<String> {
    let address = SocketAddr::from(([127, 0, 0, 1], server.port));
    let request = format!(
        "GET /api/v1/ping HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {key}\r\n\r\n"
    );
    let mut kept = TcpStream::connect(address)?;
    kept.set_read_timeout(Some(Duration::from_secs(30)))?;
    let ask_kept = |kept: &mut TcpStream| -> Result<(String, Duration)> {
        let started = Instant::now();
        kept.write_all(request.as_bytes())?;
        let mut buffer = [0_u8; 2048];
        let read = kept.read(&mut buffer)?;
        let status = String::from_utf8_lossy(buffer.get(..read).unwrap_or_default())
            .split(' ')
            .nth(1)
            .unwrap_or("none")
            .to_owned();
        Ok((status, started.elapsed()))
    };
    ask_kept(&mut kept)?;
    let flood = std::thread::spawn(move || {
        (0..count)
            .filter_map(|_| TcpStream::connect_timeout(&address, Duration::from_millis(200)).ok())
            .collect::<Vec<_>>()
    });
    std::thread::sleep(Duration::from_secs(1));
    let (status_kept, on_kept) = ask_kept(&mut kept)?;
    let (status_new, on_new) = timed(server.port, "/api/v1/ping", key);
    let idle = flood
        .join()
        .map_err(|_| anyhow!("the connecting thread panicked"))?;
    let connected = idle.len();
    drop(idle);
    Ok(format!(
        "{connected} of {count} connected; /ping on a connection open before {status_kept} in {}, on a new one {status_new} in {}",
        seconds(on_kept),
        seconds(on_new)
    ))
}

/// One scenario on a fresh server: the held days fetched, then the action while `/healthz`
/// and held-day ranges are asked every 250 ms and the RSS is sampled, then the RSS 30 s later.
struct Scenario;

impl Scenario {
    fn run(
        server: &Server,
        name: &str,
        key: &str,
        held: (Day, Day),
        action: &dyn Fn(&Server) -> Result<String>,
    ) -> Result<String> {
        let (first, last) = held;
        let warm = timed(
            server.port,
            &format!("/api/v1/calls/summary?start={first}&end={last}"),
            key,
        );
        if warm.0 != 200 {
            return Err(anyhow!("{name}: the held days answered {}", warm.0));
        }
        let pid = server.process.0.id();
        let before = rss_kib(pid)?;
        let upstream_before = server.upstream_requests()?;
        let stop = Arc::new(AtomicBool::new(false));
        let probes = Probes::start(server.port, key, held, &stop);
        let peak = Arc::new(Mutex::new(before));
        let sampler = sample_rss(pid, &stop, &peak);
        let outcome = action(server);
        stop.store(true, Ordering::SeqCst);
        let (healthz, held_days) = probes.stop();
        let _ = sampler.join();
        let upstream = server.upstream_requests()?.saturating_sub(upstream_before);
        std::thread::sleep(SETTLE);
        let after = rss_kib(pid)?;
        let peak = peak.lock().map_or(before, |peak| *peak);
        Ok(format!(
            "| {name} | {} | {upstream} | {} / {} / {} | {healthz} | {held_days} |",
            outcome?,
            mebibytes(before),
            mebibytes(peak),
            mebibytes(after),
        ))
    }
}

/// Samples the RSS of `pid` every 20 ms into `peak` until `stop`.
fn sample_rss(pid: u32, stop: &Arc<AtomicBool>, peak: &Arc<Mutex<u64>>) -> JoinHandle<()> {
    let (stop, peak) = (Arc::clone(stop), Arc::clone(peak));
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            if let (Ok(now), Ok(mut peak)) = (rss_kib(pid), peak.lock()) {
                *peak = (*peak).max(now);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// The slowest answer of a kind, and how many of each status it got.
type Seen = (Duration, BTreeMap<u16, usize>);

/// `/healthz` and held-day ranges, asked every 250 ms until stopped: the slowest of each.
struct Probes {
    thread: JoinHandle<(Seen, Seen)>,
}

impl Probes {
    fn start(port: u16, key: &str, held: (Day, Day), stop: &Arc<AtomicBool>) -> Self {
        let (key, stop) = (key.to_owned(), Arc::clone(stop));
        let (first, last) = held;
        let days: Vec<Day> = (0..=last.number() - first.number())
            .filter_map(|offset| first.plus_days(offset))
            .collect();
        let mut ranges = Vec::new();
        for length in 1..=days.len() {
            for window in days.windows(length) {
                if let (Some(start), Some(end)) = (window.first(), window.last()) {
                    for endpoint in ["summary", "agents"] {
                        ranges.push(format!("/api/v1/calls/{endpoint}?start={start}&end={end}"));
                    }
                }
            }
        }
        let thread = std::thread::spawn(move || {
            let (mut health_slowest, mut health) = (Duration::ZERO, BTreeMap::new());
            let (mut held_slowest, mut held) = (Duration::ZERO, BTreeMap::new());
            let mut ranges = ranges.into_iter().cycle();
            while !stop.load(Ordering::SeqCst) {
                let started = Instant::now();
                let (status, took) = timed(port, "/healthz", "");
                health_slowest = health_slowest.max(took);
                *health.entry(status).or_insert(0) += 1;
                if let Some(range) = ranges.next() {
                    let (status, took) = timed(port, &range, &key);
                    held_slowest = held_slowest.max(took);
                    *held.entry(status).or_insert(0) += 1;
                }
                std::thread::sleep(Duration::from_millis(250).saturating_sub(started.elapsed()));
            }
            ((health_slowest, health), (held_slowest, held))
        });
        Self { thread }
    }

    /// The slowest of each, with the statuses seen.
    fn stop(self) -> (String, String) {
        let describe = |slowest: Duration, statuses: &BTreeMap<u16, usize>| {
            let statuses: Vec<String> = statuses
                .iter()
                .map(|(status, count)| format!("{status} ×{count}"))
                .collect();
            format!("{} ({})", seconds(slowest), statuses.join(", "))
        };
        self.thread.join().map_or_else(
            |_| ("-".to_owned(), "-".to_owned()),
            |((health_slowest, health), (held_slowest, held))| {
                (
                    describe(health_slowest, &health),
                    describe(held_slowest, &held),
                )
            },
        )
    }
}
