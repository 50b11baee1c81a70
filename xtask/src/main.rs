//! Project automation. `cargo xtask ci` runs exactly what CI runs; `.ci/run` calls it after
//! making sure the local Postgres and Redis are up.

mod load;
mod process;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};

use crate::process::{Running, free_port, get, target_dir};

mod schemathesis;
mod soak;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  ci      format check, clippy (-D warnings), the whole test suite, docs (-D warnings)
  test    the whole test suite (cargo test --workspace)
  bench   the benchmarks: domain throughput (criterion) and allocations (dhat), and the
          call platform's 31-day fetch from the sim (wall time, records/s, peak memory)
  openapi regenerate docs/openapi.json from the code
  replicas-load [--seconds N] [--connections N]
          release build, then wrk on a cached endpoint: one replica with the in-process
          cache, one with Redis, two sharing Redis; requests/s, p99, Redis commands/request
          (needs wrk and redis-server)
  load    release build, `callstats demo` and a bare actix-web baseline on loopback, loaded
          with wrk in 3 rounds: median req/s and p50/p99 of a cached endpoint, a
          computed-then-cached one, the baseline answering each one's very bytes, and the
          baseline answering 150 bytes; the ratio cached / baseline (target >= 0.7). The
          demo logs at its default level (info, a line per request) unless RUST_LOG is set
  schemathesis
          fuzz `callstats demo` against its OpenAPI document (every check; keys of every
          scope, only kpi:aggregate, and none); installs schemathesis into a virtual
          environment under the target directory on first use
  soak    a bounded loopback soak (not in CI): every endpoint mixed, several keys, a fixed
          rate, the sim injecting failures; reports requests, statuses, p50/p99, RSS and
          open fds at start and end. Options: --duration-secs N (600) --rate N (40)
          --connections N (16) --fail-rate F (0.05) --release";

fn main() -> Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    match task.as_str() {
        "ci" => ci(),
        "test" => test(),
        "bench" => bench(),
        "openapi" => openapi(),
        "replicas-load" => load::replicas_load(&std::env::args().skip(2).collect::<Vec<_>>()),
        "load" => demo_load(),
        "schemathesis" => schemathesis::run(&workspace()),
        "soak" => soak::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        _ => {
            eprintln!("{USAGE}");
            bail!("unknown task {task:?}")
        }
    }
}

fn ci() -> Result<()> {
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    test()?;
    cargo(
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )
}

/// The README's test command.
fn test() -> Result<()> {
    cargo(&["test", "--workspace"], &[])
}

fn bench() -> Result<()> {
    cargo(
        &["bench", "-p", "callstats-domain", "--bench", "alloc"],
        &[],
    )?;
    cargo(
        &["bench", "-p", "callstats-domain", "--bench", "stats"],
        &[],
    )?;
    cargo(
        &["bench", "-p", "callstats-callplatform", "--bench", "fetch"],
        &[],
    )
}

/// Writes the document the API serves to docs/openapi.json (a test keeps the two equal).
fn openapi() -> Result<()> {
    let path = workspace().join("docs/openapi.json");
    std::fs::write(&path, callstats_api::openapi::document_bytes())
        .with_context(|| format!("could not write {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("could not run {cargo}"))?;
    if !status.success() {
        bail!("`cargo {}` failed with {status}", args.join(" "));
    }
    Ok(())
}

/// wrk's settings for every target: threads, connections, duration.
const WRK_ARGS: [&str; 6] = ["-t2", "-c32", "-d10s", "--latency", "--timeout", "5s"];
/// How many times every target is loaded.
const ROUNDS: usize = 3;
/// The measurement target of issue 5: cached endpoint / baseline.
const TARGET_RATIO: f64 = 0.7;

/// One wrk run's figures.
struct Figures {
    requests_per_second: f64,
    p50: String,
    p99: String,
    non_2xx: u64,
}

/// Loads `callstats demo` (release) and the baseline server with wrk; prints the figures.
fn demo_load() -> Result<()> {
    if Command::new("wrk").arg("--version").output().is_err() {
        bail!("wrk is not installed (Debian/Ubuntu: apt-get install -y wrk)");
    }
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
    let callstats = release.join("callstats");
    let baseline = release.join("baseline");

    let dir = std::env::temp_dir().join(format!("callstats-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = measure(&callstats, &baseline, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn measure(callstats: &Path, baseline: &Path, dir: &Path) -> Result<()> {
    let demo_port = free_port()?;
    let demo_address = format!("127.0.0.1:{demo_port}");
    let mut demo = Command::new(callstats)
        .args(["demo", "--bind", &demo_address])
        .current_dir(dir)
        // Its default log level (info: one line per request) unless RUST_LOG says otherwise;
        // the log goes to a file so the terminal shows only the figures.
        .env_remove("CALLSTATS_CALL_PLATFORM_URL")
        .env_remove("CALLSTATS_DATABASE_URL")
        .env_remove("CALLSTATS_REDIS_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("demo.log"))?)
        .spawn()
        .context("could not start callstats demo")?;
    let stdout = demo
        .stdout
        .take()
        .ok_or_else(|| anyhow!("no demo stdout"))?;
    let demo = Running(demo);
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

    // A key whose quota wrk cannot exhaust, issued in the demo's database.
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

    let today = today_in_tashkent()?;
    let header = format!("X-API-Key: {key}");
    let cached_path = "/api/v1/operators".to_owned();
    let computed_path = format!("/api/v1/calls/summary?start={today}");
    // Warm both (the first /calls/summary computes the day), then keep the very bytes they
    // answer for the baseline to serve.
    let mut bodies = Vec::new();
    for (name, path) in [("operators", &cached_path), ("summary", &computed_path)] {
        wait_until_answering(&format!("http://{demo_address}{path}"), &header)?;
        let file = dir.join(format!("{name}.json"));
        let (status, body) = get(demo_port, path, &key)?;
        if status != 200 {
            bail!("{path} answered {status}");
        }
        std::fs::write(&file, body)?;
        bodies.push(format!("/{name}={}", file.display()));
    }

    let baseline_address = format!("127.0.0.1:{}", free_port()?);
    let _baseline = Running(
        Command::new(baseline)
            .arg(&baseline_address)
            .args(&bodies)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("could not start the baseline server")?,
    );
    let base = format!("http://{baseline_address}");
    let targets = [
        (
            "/operators (cached)",
            format!("http://{demo_address}{cached_path}"),
        ),
        ("baseline, the same bytes", format!("{base}/operators")),
        (
            "/calls/summary (computed, then cached)",
            format!("http://{demo_address}{computed_path}"),
        ),
        ("baseline, the same bytes", format!("{base}/summary")),
        ("baseline, 150 fixed bytes", format!("{base}/")),
    ];
    wait_until_answering(&format!("{base}/"), &header)?;

    // Rounds, each loading every target in turn, so a machine that speeds up or slows down
    // during the run weighs on all of them alike; the medians are reported.
    let mut runs: Vec<Vec<Figures>> = targets.iter().map(|_| Vec::new()).collect();
    for round in 1..=ROUNDS {
        for ((name, url), runs) in targets.iter().zip(&mut runs) {
            eprintln!("round {round}/{ROUNDS}: {name}");
            let output = Command::new("wrk")
                .args(WRK_ARGS)
                .args(["-H", &header, url])
                .output()
                .context("could not run wrk")?;
            if !output.status.success() {
                bail!("wrk failed with {}", output.status);
            }
            let figures = parse_wrk(&String::from_utf8(output.stdout)?)?;
            if figures.non_2xx > 0 {
                bail!("{name}: {} responses were not 2xx", figures.non_2xx);
            }
            runs.push(figures);
        }
    }
    drop(demo);

    let rounds_of = |runs: &[Figures]| -> String {
        let rates: Vec<String> = runs
            .iter()
            .map(|f| format!("{:.0}", f.requests_per_second))
            .collect();
        rates.join(" ")
    };
    let in_order: Vec<String> = runs.iter().map(|runs| rounds_of(runs)).collect();
    for runs in &mut runs {
        runs.sort_by(|a, b| a.requests_per_second.total_cmp(&b.requests_per_second));
    }
    let medians: Vec<&Figures> = runs
        .iter()
        .map(|runs| {
            runs.get(runs.len() / 2)
                .ok_or_else(|| anyhow!("no wrk run"))
        })
        .collect::<Result<_>>()?;
    let rate = |i: usize| medians.get(i).map_or(0.0, |f| f.requests_per_second);
    let mut report = format!(
        "wrk {} on loopback, median of {ROUNDS} rounds\n{:<40} {:>12} {:>10} {:>10}   requests/s of each round\n",
        WRK_ARGS.join(" "),
        "target",
        "requests/s",
        "p50",
        "p99"
    );
    for ((name, _), (median, rounds)) in targets.iter().zip(medians.iter().zip(&in_order)) {
        report += &format!(
            "{:<40} {:>12.0} {:>10} {:>10}   {rounds}\n",
            name, median.requests_per_second, median.p50, median.p99,
        );
    }
    report += &format!(
        "ratio cached / baseline with the same bytes: {:.2} (target >= {TARGET_RATIO})\n\
         ratio computed-then-cached / baseline with the same bytes: {:.2}\n\
         ratio cached / baseline with 150 fixed bytes: {:.2}\n",
        rate(0) / rate(1),
        rate(2) / rate(3),
        rate(0) / rate(4),
    );
    std::io::stdout()
        .lock()
        .write_all(report.as_bytes())
        .context("cannot write the report")?;
    Ok(())
}

/// Runs wrk for a second until the target answers only 200s: this also warms the cache, so
/// the first /calls/summary computes the day and the measured requests are cache hits.
fn wait_until_answering(url: &str, header: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let output = Command::new("wrk")
            .args(["-t1", "-c1", "-d1s", "-H", header, url])
            .output()
            .context("could not run wrk")?;
        let text = String::from_utf8_lossy(&output.stdout);
        if output.status.success() && !text.contains("Non-2xx") && !text.contains(" 0 requests") {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{url} does not answer 200");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Requests/sec, the 50 % and 99 % latencies and the non-2xx count from wrk's report.
fn parse_wrk(report: &str) -> Result<Figures> {
    let field = |prefix: &str| {
        report
            .lines()
            .map(str::trim)
            .find_map(|line| line.strip_prefix(prefix))
            .map(|rest| rest.trim().to_owned())
    };
    let requests_per_second = field("Requests/sec:")
        .ok_or_else(|| anyhow!("no Requests/sec in wrk's report"))?
        .parse()?;
    let p50 = field("50%").ok_or_else(|| anyhow!("no 50% latency in wrk's report"))?;
    let p99 = field("99%").ok_or_else(|| anyhow!("no 99% latency in wrk's report"))?;
    let non_2xx = field("Non-2xx or 3xx responses:").map_or(Ok(0), |n| n.parse())?;
    Ok(Figures {
        requests_per_second,
        p50,
        p99,
        non_2xx,
    })
}

/// Today's date in Tashkent (UTC+5, no daylight saving), from `date`.
fn today_in_tashkent() -> Result<String> {
    let output = Command::new("date")
        .args(["-u", "-d", "+5 hours", "+%Y-%m-%d"])
        .output()
        .context("could not run date")?;
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}
