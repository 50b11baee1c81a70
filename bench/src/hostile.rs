//! `hostile`: a broken or hostile upstream, a slow client, a spike, and what the server does
//! about them.
//!
//! Release build, a SQLite portal seeded with the demo data, and for each scenario a fresh
//! `callstats serve` with its default settings in front of the hostile platform
//! (src/bin/hostile-platform.rs, 100 ms a page), whose answers for the last 7 days are ordinary
//! and for older days follow the scenario's mode; the cache-filling scenario uses `callstats
//! sim` instead. Each scenario prints the API's answer (status and time), the upstream requests
//! it caused, the serve process's RSS before it, at its peak and 30 s after it, and the
//! `/healthz` and held-day answers (a different range of the 7 ordinary days each time, so it
//! is computed, not read from the response cache) asked every 250 ms while it ran. The figures
//! are printed as they are: a missed target is a finding, not a failure.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use callstats_domain::calendar::Day;
use xtask::process::{Running, agent, free_port, in_scratch_dir, spawn, target_dir, wait_for_port};
use xtask::serve::{PORT_WAIT, Portal, Server, binary, seconds, sim};

use crate::harness::ask::{Connect, Probe, Reply, ask, at_once, by_status, share_out};
use crate::harness::days::{agents_path, plus, sub_ranges, summary_path, today};
use crate::harness::metrics::Measure as _;
use crate::harness::table::mebibytes;
use crate::harness::usage::rss_kib;
use crate::harness::{build_name, print};

/// How long after a scenario its RSS is read again.
const SETTLE: Duration = Duration::from_secs(30);
/// Days before today the hostile platform answers ordinarily (the held days).
const ORDINARY_DAYS: i64 = 7;

/// A hostile upstream (100,000 agents a day, endless pages, ids of 4 KB, a duration of 1e308,
/// a leap second), the horizon filling the call-day cache, chunked GETs without a body and 2,000
/// idle connections under ulimit -n 1024: each scenario's answer, upstream requests, RSS before,
/// at its peak and 30 s after, and the /healthz and held-day answers meanwhile.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// The upstreams' delay before every answer, in milliseconds
    #[arg(long, default_value_t = 100)]
    latency_ms: u64,
    /// The debug binaries instead of the release ones: checks the task without a fat-LTO
    /// build, but its figures are not the service's
    #[arg(long)]
    debug: bool,
    /// Only the scenarios whose name holds this text (all of them by default)
    #[arg(long)]
    only: Option<String>,
}

pub fn run(options: &Options) -> Result<()> {
    let binary = binary(options.debug)?;
    // The hostile platform is a debug build either way: its own speed is not what is measured
    // (its answers wait out the platform's latency), and a second fat-LTO build of actix would
    // cost more than the whole run.
    xtask::cargo(
        &["build", "-p", "callstats-bench", "--bin", "hostile-platform"],
        &[],
    )?;
    let hostile = target_dir().join("debug").join("hostile-platform");
    in_scratch_dir("hostile", |dir| measure(options, &binary, &hostile, dir))
}

fn measure(options: &Options, binary: &Path, hostile: &Path, dir: &Path) -> Result<()> {
    let today = today();
    let day = |back: i64| plus(today, -back);
    let port = free_port()?;
    let _hostile: Running = spawn(
        Command::new(hostile).args([
            format!("127.0.0.1:{port}"),
            options.latency_ms.to_string(),
            day(ORDINARY_DAYS).to_string(),
        ]),
        dir,
        "hostile-platform",
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
    let summary = |start: Day, end: Day| summary_path((start, end), "");
    let agents = |start: Day, end: Day| agents_path((start, end));

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
            Ok(all_at_once(
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
            let answered = all_at_once(server, &paths, &key);
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
        "\nhostile: a platform {} ms a page, {} build, `callstats serve` with its \
         defaults (a fresh one per scenario), today in Tashkent {today}\n\n\
         | scenario | answer | upstream requests | RSS before / peak / {} s after | /healthz (slowest) | held days (slowest) |\n\
         |---|---|---:|---|---|---|\n",
        options.latency_ms,
        build_name(options.debug),
        SETTLE.as_secs(),
    );
    for row in rows {
        let _ = writeln!(report, "{row}");
    }
    print(&report)
}

/// One GET with `key` on a new connection: `200 in 1.23 s`.
fn answer(server: &Server, path: &str, key: &str) -> String {
    described(&ask(&agent(), server.port, path, key))
}

fn described(reply: &Reply) -> String {
    format!("{} in {}", reply.status, seconds(reply.took))
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
fn all_at_once(server: &Server, paths: &[String], key: &str) -> String {
    at_once(server.port, key, paths)
        .iter()
        .map(described)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The paths shared out to one client per key, each asking its own in turn and again 2 s after
/// an answer other than 200: how many answered 200 in the end, and how long it all took.
fn spread(server: &Server, paths: &[String], keys: &[String]) -> String {
    let started = Instant::now();
    let attempts = share_out(server.port, keys, paths, |reply| {
        (reply.status != 200).then_some(Duration::from_secs(2))
    });
    let ok = attempts
        .iter()
        .filter(|attempts| attempts.last().is_some_and(|reply| reply.status == 200))
        .count();
    format!(
        "{ok} of {} windows 200 in {}",
        attempts.len(),
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
    let on_new = ask(&agent(), server.port, "/api/v1/ping", key);
    let idle = flood
        .join()
        .map_err(|_| anyhow!("the connecting thread panicked"))?;
    let connected = idle.len();
    drop(idle);
    Ok(format!(
        "{connected} of {count} connected; /ping on a connection open before {status_kept} in {}, on a new one {}",
        seconds(on_kept),
        described(&on_new)
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
        let warm = ask(&agent(), server.port, &summary_path(held, ""), key);
        if warm.status != 200 {
            return Err(anyhow!("{name}: the held days answered {}", warm.status));
        }
        let pid = server.process.0.id();
        let before = rss_kib(pid)?;
        let upstream_before = server.upstream_requests()?;
        let every = Duration::from_millis(250);
        // Each probe on a new connection, so that a scenario holding the server's connections
        // shows in them.
        let healthz = Probe::start(
            server.port,
            "",
            std::iter::repeat_with(|| "/healthz".to_owned()),
            every,
            Connect::Anew,
        );
        let ranges: Vec<String> = sub_ranges(held.0, held.1)
            .into_iter()
            .flat_map(|range| [summary_path(range, ""), agents_path(range)])
            .collect();
        let held_days = Probe::start(
            server.port,
            key,
            ranges.into_iter().cycle(),
            every,
            Connect::Anew,
        );
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(Mutex::new(before));
        let sampler = sample_rss(pid, &stop, &peak);
        let outcome = action(server);
        stop.store(true, Ordering::SeqCst);
        let (healthz, held_days) = (healthz.stop(), held_days.stop());
        let _ = sampler.join();
        let upstream = server.upstream_requests()?.saturating_sub(upstream_before);
        std::thread::sleep(SETTLE);
        let after = rss_kib(pid)?;
        let peak = peak.lock().map_or(before, |peak| *peak);
        Ok(format!(
            "| {name} | {} | {upstream} | {} / {} / {} | {} | {} |",
            outcome?,
            mebibytes(before),
            mebibytes(peak),
            mebibytes(after),
            by_status(&healthz),
            by_status(&held_days),
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
