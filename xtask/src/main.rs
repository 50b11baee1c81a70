//! Project automation. `cargo xtask ci` runs exactly what CI runs; `.ci/run` calls it after
//! making sure the local Postgres and Redis are up.

mod client;
mod client_ts;
mod cold;
mod compose;
mod durability;
mod grafana;
mod hostile;
mod instructions;
mod isolation;
mod lint_openapi;
mod load;
mod process;
mod prometheus;
mod replicas_load;
mod schemathesis;
mod serve;
mod soak;
mod wrk;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};
use clap::{Parser, Subcommand};

/// Project automation for callstats.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Format check, clippy (-D warnings), the whole test suite, the consumer crate
    /// (examples/consumer), docs (-D warnings)
    Ci,
    /// The whole test suite (cargo test --workspace)
    Test,
    /// The benchmarks: domain throughput (criterion) and allocations (dhat), and the call
    /// platform's 31-day fetch from the sim (wall time, records/s, peak memory)
    Bench,
    /// Regenerate docs/openapi.json from the code
    Openapi,
    /// Release build, then wrk on a cached endpoint: one replica with the in-process cache,
    /// one with Redis, two sharing Redis; requests/s, p99, Redis commands/request (needs wrk
    /// and redis-server)
    ReplicasLoad(replicas_load::Options),
    /// Release build, `callstats demo` and a bare actix-web baseline on loopback, loaded with
    /// wrk in 3 rounds (`--rounds N`): median req/s and p50/p99 of a cached endpoint, a
    /// computed-then-cached one, the baseline answering each one's very bytes, and the
    /// baseline answering 150 bytes; the ratio cached / baseline (target >= 0.8), of the
    /// medians and round by round. The demo logs at its default level (info, a line per
    /// request) unless RUST_LOG is set; `--before BINARY` loads an earlier build's demo in the
    /// same rounds and prints its ratio too
    Load(load::Options),
    /// Release build, then `callstats demo` and the baseline under callgrind: the instructions
    /// a cached /operators request costs the server against the baseline answering the same
    /// bytes, and the same bytes and headers: a count a busy machine hardly changes, where
    /// rates swing (needs valgrind); `--before BINARY` counts an earlier build's demo too
    Instructions(instructions::Options),
    /// The ops journey of docs/operations.md on a real Docker engine with docker-compose.yml as
    /// shipped: the image built (classic builder and BuildKit), then the compose commands of
    /// README.md and docs/operations.md run as written (the demo up, a key, nginx reloaded, a
    /// replica started, the status, Prometheus up), and the drills between them: every endpoint
    /// through nginx, a HIT from the other replica, the client's address named by the front,
    /// api1 stopped and killed under load, nginx restarted and reloaded, Redis restarted,
    /// Postgres stopped 60 s, both replicas stopped and started, down and up, Prometheus's
    /// targets and rules, SIGTERM with a request in flight, a replica without the platform's
    /// URL, the log bounds; each step's outcome, counts and time as markdown. Never pulls:
    /// `--stand-ins` builds the registry images it needs from Debian's packages first
    /// (`--stand-ins-only`: those alone)
    Compose(compose::Options),
    /// The cold path: `callstats serve` in front of `callstats sim` answering every page after
    /// a delay; time and upstream requests of uncached 31-day queries (settled days, the same
    /// days through another endpoint, a window slid to today, 4 at once, two replicas sharing
    /// Redis), then a server whose warmer holds the last 35 days (its warm-up, and a cache miss
    /// over the last 31 days ending today), and the peak RSS of both, as a markdown table;
    /// needs redis-server
    Cold(cold::Options),
    /// What the service keeps of what it learned (settled days in the database, final days,
    /// stale if error): `callstats serve` in front of `callstats sim` answering every page after
    /// a delay, at 5,000 and 50,000 calls a day (`--calls-per-day`): the 35 warm days' warm-up
    /// again after a restart without Redis and after a Redis flush, 31 days read from the
    /// database, the warmer's upstream requests over one simulated day with and without final
    /// days, the table's bytes a day, and 31 days asked with the platform down past their
    /// lifetime; as a markdown table; needs redis-server and redis-cli
    Durability(durability::Options),
    /// A hostile upstream (100,000 agents a day, endless pages, ids of 4 KB, a duration of
    /// 1e308, a leap second), the horizon filling the call-day cache, chunked GETs without a
    /// body and 2,000 idle connections under ulimit -n 1024: each scenario's answer, upstream
    /// requests, RSS before, at its peak and 30 s after, and the slowest /healthz and held-day
    /// answers meanwhile, as markdown
    Hostile(hostile::Options),
    /// One partner cannot take the call statistics from the others: `callstats serve` in front
    /// of `callstats sim` (100 ms a page) while a victim key asks a cold day every 2 s and a
    /// held one every second, against a key asking 60 cold windows at once, one stepping back
    /// year by year, 8 keys against a sim answering 429 above a rate, and 12 keys asking a cold
    /// month each at once; answers by status and their slowest, upstream requests, as markdown
    Isolation(isolation::Options),
    /// Fuzz `callstats demo` against its OpenAPI document (every check; keys of every scope,
    /// only kpi:aggregate, and none); installs schemathesis into a virtual environment under
    /// the target directory on first use
    Schemathesis,
    /// A Python client generated from the OpenAPI document served by `callstats demo`
    /// (openapi-python-client; any generator warning fails), which must call every endpoint
    /// and parse each 200 into its models (xtask/client/check.py), and pass `mypy --strict`;
    /// installs both into a virtual environment under the target directory on first use
    Client,
    /// TypeScript types generated from the OpenAPI document served by `callstats demo`
    /// (openapi-typescript; any generator warning fails), with which openapi-fetch must call
    /// every endpoint and read each 200 and a 400's problem details (xtask/client-ts/check.ts),
    /// after `tsc --noEmit --strict`; installs the three, pinned, with npm into a directory under
    /// the target directory on first use
    ClientTs,
    /// Spectral's `spectral:oas` rules, as `.spectral.yaml` adjusts them, over docs/openapi.json,
    /// warnings failing too; installs Spectral, pinned, with npm into the directory `client-ts`
    /// uses
    LintOpenapi,
    /// The Grafana dashboard (deploy/grafana/callstats.json) type-checked by `tsc --strict`
    /// against `@grafana/schema`'s `Dashboard` of the Grafana release docker-compose.yml runs
    /// (installed, pinned, with npm under the target directory on first use)
    Grafana,
    /// The shipped Prometheus configuration and rules (deploy/prometheus) run by Debian's
    /// `prometheus` against two `callstats serve` replicas on loopback under a short load:
    /// every recording rule and every query of the dashboard (deploy/grafana) must return data;
    /// prints the series of each
    Prometheus,
    /// A bounded loopback soak (not in CI): every endpoint mixed, several keys, a fixed rate,
    /// the sim injecting failures; reports requests, statuses, p50/p99, RSS and open fds at
    /// start and end
    Soak(soak::Options),
}

fn main() -> Result<()> {
    match Cli::parse().task {
        Task::Ci => ci(),
        Task::Test => test(),
        Task::Bench => bench(),
        Task::Openapi => openapi(),
        Task::ReplicasLoad(options) => replicas_load::run(&options),
        Task::Load(options) => load::run(&options),
        Task::Instructions(options) => instructions::run(&options),
        Task::Compose(options) => compose::run(&options),
        Task::Cold(options) => cold::run(&options),
        Task::Durability(options) => durability::run(&options),
        Task::Isolation(options) => isolation::run(&options),
        Task::Hostile(options) => hostile::run(&options),
        Task::Schemathesis => schemathesis::run(&workspace()),
        Task::Client => client::run(&workspace()),
        Task::ClientTs => client_ts::run(&workspace()),
        Task::LintOpenapi => lint_openapi::run(&workspace()),
        Task::Prometheus => prometheus::run(&workspace()),
        Task::Grafana => grafana::run(&workspace()),
        Task::Soak(options) => soak::run(&options),
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
    consumer()?;
    cargo(
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )
}

/// The README's test command.
fn test() -> Result<()> {
    cargo(&["test", "--workspace"], &[])
}

/// The crate outside the workspace that tests a use case through the domain's public API
/// (examples/consumer, docs/testing.md): formatted, linted (-D warnings) and its tests run, in the
/// workspace's target directory so that the domain is not compiled twice.
fn consumer() -> Result<()> {
    let root = workspace();
    let manifest = root.join("examples/consumer/Cargo.toml");
    let target = root.join("target");
    let (Some(manifest), Some(target)) = (manifest.to_str(), target.to_str()) else {
        bail!("the workspace's path is not UTF-8");
    };
    cargo(&["fmt", "--manifest-path", manifest, "--", "--check"], &[])?;
    cargo(
        &[
            "clippy",
            "--manifest-path",
            manifest,
            "--all-targets",
            "--locked",
            "--target-dir",
            target,
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(
        &[
            "test",
            "--manifest-path",
            manifest,
            "--locked",
            "--target-dir",
            target,
        ],
        &[],
    )
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

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, Parser as _};

    use super::{Cli, Task};

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn options_have_defaults_and_read_values() {
        let cold = |args: &[&str]| {
            let line = ["cargo xtask", "cold"].iter().chain(args);
            match Cli::try_parse_from(line).map_err(|err| err.kind())?.task {
                Task::Cold(options) => {
                    Ok((options.latency_ms, options.calls_per_day, options.debug))
                }
                _ => Err(clap::error::ErrorKind::InvalidSubcommand),
            }
        };
        assert_eq!(cold(&[]), Ok((100, 5000, false)));
        assert_eq!(
            cold(&["--latency-ms", "20", "--debug", "--calls-per-day", "10"]),
            Ok((20, 10, true))
        );
        assert_eq!(
            cold(&["--latency-ms"]),
            Err(clap::error::ErrorKind::InvalidValue)
        );
        assert_eq!(
            cold(&["--fast"]),
            Err(clap::error::ErrorKind::UnknownArgument)
        );
        assert!(Cli::try_parse_from(["cargo xtask", "soak", "--rate", "0"]).is_err());
        assert!(Cli::try_parse_from(["cargo xtask", "unknown"]).is_err());
    }
}

#[cfg(test)]
mod architecture {
    use std::collections::{BTreeMap, BTreeSet};
    use std::process::Command;

    /// The workspace dependencies of each member (build and normal ones, not dev), read from
    /// `cargo metadata`.
    fn workspace_dependencies() -> BTreeMap<String, BTreeSet<String>> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let output = Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(super::workspace())
            .output()
            .unwrap();
        assert!(output.status.success(), "cargo metadata failed");
        let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let packages = metadata["packages"].as_array().unwrap();
        let members: BTreeSet<String> = packages
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect();
        packages
            .iter()
            .map(|package| {
                let name = package["name"].as_str().unwrap().to_owned();
                let dependencies = package["dependencies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|d| d["kind"].is_null())
                    .map(|d| d["name"].as_str().unwrap().to_owned())
                    .filter(|d| members.contains(d) && *d != name)
                    .collect();
                (name, dependencies)
            })
            .collect()
    }

    #[test]
    fn the_architecture_document_draws_the_workspace_dependencies() {
        let actual = workspace_dependencies();
        let document =
            std::fs::read_to_string(super::workspace().join("docs/architecture.md")).unwrap();
        let mut drawn = BTreeMap::new();
        for row in document.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let (Some(crate_cell), Some(deps)) = (cells.get(1), cells.get(2)) else {
                continue;
            };
            let name = crate_cell.trim_matches('`').to_owned();
            if !actual.contains_key(&name) {
                continue;
            }
            let deps: BTreeSet<String> = if *deps == "every crate above" {
                drawn.keys().cloned().collect()
            } else {
                deps.split(',')
                    .map(|d| d.trim().trim_matches('`').to_owned())
                    .filter(|d| d.starts_with("callstats"))
                    .collect()
            };
            drawn.insert(name, deps);
        }
        assert_eq!(drawn, actual);
    }
}
