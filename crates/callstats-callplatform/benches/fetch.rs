//! Fetching and parsing 31 days of calls from the sim over loopback, as the service would:
//! wall time, records per second, peak heap (dhat) and peak RSS of the fetching process.
//!
//! The sim runs in a child process (this same binary, started with `--sim-child`) so that the
//! memory figures are the adapter's alone. Run with `cargo bench -p callstats-callplatform
//! --bench fetch`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::indexing_slicing,
    reason = "benchmark harness: a panic is a failed run, and printing figures is its job"
)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use callstats_callplatform::{HttpCallPlatform, HttpPlatformConfig};
use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::ports::CallPlatform;
use callstats_sim::{SimOptions, serve_sim};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const TIMED_RUNS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--sim-child") {
        sim_child(args[at + 1].parse().unwrap());
        return;
    }
    // 5,000 is the weekday figure; weekends are quieter, so 31 days hold fewer than 155,000
    // calls. The second run raises the weekday figure until 31 days hold at least 155,000.
    for calls_per_day in [5_000, 5_650] {
        scenario(calls_per_day);
    }
}

/// The sim on a free loopback port, which it prints; it serves until its stdin closes.
fn sim_child(calls_per_day: u32) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    println!("port {}", listener.local_addr().unwrap().port());
    std::io::stdout().flush().unwrap();
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(0);
    });
    let options = SimOptions {
        calls_per_day,
        ..SimOptions::default()
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(serve_sim(listener, options))
        .unwrap();
}

fn start_sim(calls_per_day: u32) -> (Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--sim-child", &calls_per_day.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().strip_prefix("port ").unwrap().to_owned();
    (child, format!("http://127.0.0.1:{port}"))
}

fn scenario(calls_per_day: u32) {
    let (mut sim, base_url) = start_sim(calls_per_day);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let platform = HttpCallPlatform::new(HttpPlatformConfig::new(base_url, None)).unwrap();
    let day = |raw| Day::parse(raw).unwrap();
    let range = DateRange::up_to_31_days(day("2026-11-01"), day("2026-12-01")).unwrap();
    assert_eq!(range.days(), 31);
    let fetch = || runtime.block_on(platform.calls(range)).unwrap();

    let records = fetch().len();
    let mut times: Vec<Duration> = (0..TIMED_RUNS)
        .map(|_| {
            let started = Instant::now();
            let got = fetch();
            let took = started.elapsed();
            assert_eq!(got.len(), records);
            took
        })
        .collect();
    times.sort();
    let median = times[TIMED_RUNS / 2];
    let rss_peak = peak_rss_kib();

    let profiler = dhat::Profiler::builder().testing().build();
    let kept = fetch();
    let heap = dhat::HeapStats::get();
    drop(kept);
    drop(profiler);

    println!(
        "fetch 31 days at {calls_per_day} calls per weekday: {records} records in {} pages",
        records.div_ceil(1000)
    );
    println!(
        "  wall time: median {:.1} ms, best {:.1} ms, worst {:.1} ms over {TIMED_RUNS} runs",
        ms(median),
        ms(times[0]),
        ms(times[TIMED_RUNS - 1])
    );
    println!(
        "  throughput: {:.0} records/s (median run)",
        f64::from(u32::try_from(records).unwrap()) / median.as_secs_f64()
    );
    println!(
        "  peak heap during one fetch: {:.1} MiB ({} allocations); result kept: {:.1} MiB",
        mib(heap.max_bytes),
        heap.total_blocks,
        mib(heap.curr_bytes)
    );
    println!(
        "  peak RSS of the fetching process: {}",
        rss_peak.map_or_else(
            || "n/a".to_owned(),
            |kib| format!("{:.1} MiB", kib / 1024.0)
        )
    );

    drop(sim.stdin.take());
    let _ = sim.wait();
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mib(bytes: usize) -> f64 {
    f64::from(u32::try_from(bytes / 1024).unwrap()) / 1024.0
}

/// VmHWM of this process, in KiB (Linux).
fn peak_rss_kib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
