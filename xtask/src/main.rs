//! Project automation. `cargo xtask ci` runs exactly what CI runs; `.ci/run` calls it after
//! making sure the local Postgres and Redis are up.

mod cold;
mod load;
mod process;
mod replicas_load;
mod schemathesis;
mod soak;
mod wrk;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

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
  cold    the cold path: `callstats serve` in front of `callstats sim` answering every page
          after a delay; time and upstream requests of uncached 31-day queries (settled
          days, the same days through another endpoint, a window slid to today, 4 at once,
          two replicas sharing Redis) and the peak RSS, as a markdown table. Options:
          --latency-ms N (100) --calls-per-day N (5000) --debug (the debug binary, to check
          the task without a release build); needs redis-server
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
        "replicas-load" => replicas_load::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        "load" => load::run(),
        "cold" => cold::run(&std::env::args().skip(2).collect::<Vec<_>>()),
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
