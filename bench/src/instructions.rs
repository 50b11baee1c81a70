//! `instructions`: the instructions the release `callstats demo` executes for a cached
//! `/operators` request (and for yesterday's `/calls/summary`, computed by the first request and
//! cached for the others), counted by callgrind, against the bare baseline answering the same
//! bytes (and the same bytes and headers). A busy machine hardly changes the count, where the
//! rates of `load` swing from round to round (docs/performance.md).
//!
//! Callgrind counts user-space instructions of every thread of the server between a zeroing
//! and a dump (`callgrind_control -z`, then `-d`) taken around the measured requests; the
//! kernel's share (the socket calls, the scheduler) is not in it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use xtask::process::{agent, get_on, in_scratch_dir, require};

use crate::harness::days::{plus, today};
use crate::harness::{baseline, print};
use crate::load::start_demo;

/// Requests sent before the counters are zeroed: the key, the cache entry and the connection
/// are warm when the counted ones start.
const WARM_UP: u32 = 200;

/// The path measured, as `load` measures it.
const CACHED_PATH: &str = "/api/v1/operators";

/// The row of yesterday's `/calls/summary`, counted once the first request has computed it.
const SUMMARY_ROW: &str = "/calls/summary (computed, then cached)";

/// Release build, then `callstats demo` and the bare baseline under callgrind: the instructions
/// a cached /operators request costs the server against the baseline answering the same bytes,
/// and the same bytes and headers: a count a busy machine hardly changes, where rates swing.
///
/// Needs valgrind.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// Another `callstats` binary (an earlier commit's release build) whose demo is counted the
    /// same way, for its figure beside this one's
    #[arg(long, value_name = "BINARY")]
    before: Option<PathBuf>,
    /// How many requests are counted, one after the other on one kept-alive connection
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..))]
    requests: u32,
}

/// Builds the release binaries, then counts each target under callgrind; prints the figures.
pub fn run(options: &Options) -> Result<()> {
    for tool in ["valgrind", "callgrind_control"] {
        require(tool, "valgrind")?;
    }
    let (callstats, baseline) = baseline::release_builds()?;
    in_scratch_dir("instructions", |dir| {
        measure(&callstats, &baseline, options, dir)
    })
}

/// A server whose instructions are counted: its process id, its port and the key it is asked
/// with.
struct Counted {
    pid: u32,
    port: u16,
    key: String,
}

fn measure(callstats: &Path, baseline_binary: &Path, options: &Options, dir: &Path) -> Result<()> {
    let requests = options.requests;
    let (demo, key) = start_demo(callstats, dir, &callgrind(dir, "demo"))?;
    let counted = Counted {
        pid: demo.pid(),
        port: demo.port,
        key,
    };
    let client = agent();
    // The body and headers the baselines send are the demo's own.
    let (headers, body) = baseline::record(counted.port, CACHED_PATH, &counted.key)?;
    let body_file = dir.join("operators.json");
    let headers_file = dir.join("operators.headers");
    std::fs::write(&body_file, &body)?;
    std::fs::write(&headers_file, headers)?;
    let mut rows = vec![(
        "/operators (cached)",
        count(&counted, &client, CACHED_PATH, &body, requests, dir)?,
    )];
    // Yesterday's summary: computed from the synthetic calls by the first warm-up request,
    // then served from the response cache like /operators.
    let summary = format!("/api/v1/calls/summary?start={}", plus(today(), -1));
    let (_, summary_body) = baseline::record(counted.port, &summary, &counted.key)?;
    rows.push((
        SUMMARY_ROW,
        count(&counted, &client, &summary, &summary_body, requests, dir)?,
    ));
    drop(demo);

    let served = [
        format!("/operators={}", body_file.display()),
        format!(
            "/operators-headers={}={}",
            body_file.display(),
            headers_file.display()
        ),
    ];
    let (baseline_server, port) = baseline::start(
        baseline_binary,
        &callgrind(dir, "baseline"),
        dir,
        &served,
    )?;
    let base = Counted {
        pid: baseline_server.0.id(),
        port,
        key: String::new(),
    };
    for (name, path) in [
        ("baseline, the same bytes", "/operators"),
        ("baseline, the same bytes and headers", "/operators-headers"),
    ] {
        rows.push((name, count(&base, &client, path, &body, requests, dir)?));
    }
    drop(baseline_server);

    if let Some(before) = &options.before {
        let before_dir = dir.join("before");
        let (demo, key) = start_demo(before, &before_dir, &callgrind(&before_dir, "before"))?;
        let counted = Counted {
            pid: demo.pid(),
            port: demo.port,
            key,
        };
        let (_, before_body) = baseline::record(counted.port, CACHED_PATH, &counted.key)?;
        rows.push((
            "/operators (cached), --before binary",
            count(
                &counted,
                &client,
                CACHED_PATH,
                &before_body,
                requests,
                &before_dir,
            )?,
        ));
    }
    print(&report(&rows, requests))
}

/// `valgrind --tool=callgrind` before a program, its dumps written as
/// `<name>.callgrind.<pid>.<n>` in `dir`.
fn callgrind(dir: &Path, name: &str) -> [String; 4] {
    let out_file = dir.join(format!("{name}.callgrind.%p"));
    [
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        "--quiet".to_owned(),
        format!("--callgrind-out-file={}", out_file.display()),
    ]
}

/// The instructions a request of `server` on `path`, its dumps in `dumps`: every answer must
/// be a 200 with `body`.
fn count(
    server: &Counted,
    client: &ureq::Agent,
    path: &str,
    body: &[u8],
    requests: u32,
    dumps: &Path,
) -> Result<u64> {
    let ask = || -> Result<()> {
        let (status, answer) = get_on(client, server.port, path, &server.key)?;
        if status != 200 || answer != body {
            bail!("{path} answered {status}, or other bytes than the demo's");
        }
        Ok(())
    };
    for _ in 0..WARM_UP {
        ask()?;
    }
    callgrind_control("-z", server.pid)?;
    for _ in 0..requests {
        ask()?;
    }
    // A process's dumps are numbered from 1: this one follows those already written.
    let number = dumps_of(dumps, server.pid)?.len() + 1;
    callgrind_control("-d", server.pid)?;
    let totals = dumped_totals(dumps, server.pid, number)?;
    Ok(totals / u64::from(requests))
}

fn callgrind_control(option: &str, pid: u32) -> Result<()> {
    let output = Command::new("callgrind_control")
        .args([option, &pid.to_string()])
        .output()
        .context("could not run callgrind_control")?;
    if !output.status.success() {
        bail!(
            "callgrind_control {option} {pid} failed with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// The dumps of process `pid` in `dir` (`<name>.callgrind.<pid>.<n>`).
fn dumps_of(dir: &Path, pid: u32) -> Result<Vec<PathBuf>> {
    let infix = format!(".callgrind.{pid}.");
    Ok(std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().contains(&infix))
        .map(|entry| entry.path())
        .collect())
}

/// The instructions of dump `number` of process `pid`, once callgrind has written it whole
/// (its `totals:` line is the last one).
fn dumped_totals(dir: &Path, pid: u32, number: usize) -> Result<u64> {
    let suffix = format!(".callgrind.{pid}.{number}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let dump = dumps_of(dir, pid)?
            .into_iter()
            .find(|path| path.to_string_lossy().ends_with(&suffix));
        if let Some(totals) = dump
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| totals_of(&text))
        {
            return Ok(totals);
        }
        if Instant::now() > deadline {
            return Err(anyhow!(
                "callgrind wrote no dump {number} for process {pid}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The `totals:` of a callgrind dump: its instructions, the only event counted by default.
fn totals_of(dump: &str) -> Option<u64> {
    dump.lines()
        .find_map(|line| line.strip_prefix("totals:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
}

/// The table, and each demo's ratio to the baselines: baseline over demo, so that higher is
/// better, like the rate ratio of `load`.
fn report(rows: &[(&str, u64)], requests: u32) -> String {
    let mut out = format!(
        "callgrind: instructions the server executed a request (every thread, user space), \
         over {requests} requests on one kept-alive connection after {WARM_UP} to warm\n\
         {:<40} {:>12}\n",
        "target", "instructions"
    );
    for (name, instructions) in rows {
        out += &format!("{name:<40} {instructions:>12}\n");
    }
    let of = |name: &str| {
        rows.iter()
            .find(|(row, _)| *row == name)
            .map(|&(_, count)| count)
    };
    for demo in [
        "/operators (cached)",
        "/operators (cached), --before binary",
    ] {
        if let (Some(demo_count), Some(bytes), Some(headers)) = (
            of(demo),
            of("baseline, the same bytes"),
            of("baseline, the same bytes and headers"),
        ) {
            out += &format!(
                "ratio baseline / {demo}: {:.2} with the same bytes, {:.2} with the same bytes and headers\n",
                ratio(bytes, demo_count),
                ratio(headers, demo_count),
            );
        }
    }
    out
}

fn ratio(baseline: u64, demo: u64) -> f64 {
    // A request's instructions are far below 2^32.
    let float = |count: u64| f64::from(u32::try_from(count).unwrap_or(u32::MAX));
    float(baseline) / float(demo.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_totals_are_read_from_their_own_line() {
        let dump = "# callgrind format\nversion: 1\nevents: Ir\nsummary: 133113905\n\
                    fn=(1) main\n16 42\ntotals: 133143561\n";
        assert_eq!(totals_of(dump), Some(133_143_561));
        assert_eq!(
            totals_of("events: Ir\nsummary: 12\n"),
            None,
            "not written whole"
        );
        assert_eq!(totals_of("totals: many\n"), None);
    }

    #[test]
    fn each_demo_is_compared_with_both_baselines() {
        let rows = [
            ("/operators (cached)", 60_000),
            ("baseline, the same bytes", 30_000),
            ("baseline, the same bytes and headers", 45_000),
            ("/operators (cached), --before binary", 75_000),
        ];
        let text = report(&rows, 2000);
        assert!(text.contains("over 2000 requests"), "{text}");
        assert!(
            text.contains(
                "ratio baseline / /operators (cached): 0.50 with the same bytes, 0.75 with the same bytes and headers"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "ratio baseline / /operators (cached), --before binary: 0.40 with the same bytes, 0.60"
            ),
            "{text}"
        );
        // Without the baselines, no ratio.
        assert!(!report(&rows[..1], 2000).contains("ratio"));
    }
}
