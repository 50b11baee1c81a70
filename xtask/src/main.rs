//! Project automation. `cargo xtask ci` runs exactly what CI runs; `.ci/run` calls it after
//! making sure the local Postgres and Redis are up.

mod client;
mod client_ts;
mod compose;
mod figures;
mod grafana;
mod lint_openapi;
mod node;
mod prometheus;
mod schemathesis;

use anyhow::{Context as _, Result, bail};
use clap::{Parser, Subcommand};
// The library's modules under the names the tasks use (`crate::process`, `crate::serve`).
use xtask::{cargo, process, serve, sse, workspace};

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
    /// Regenerate docs/openapi.json, and docs/behaviour.md's figure tables, from the code
    Openapi,
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
}

fn main() -> Result<()> {
    match Cli::parse().task {
        Task::Ci => ci(),
        Task::Openapi => openapi(),
        Task::Compose(options) => compose::run(&options),
        Task::Schemathesis => schemathesis::run(&workspace()),
        Task::Client => client::run(&workspace()),
        Task::ClientTs => client_ts::run(&workspace()),
        Task::LintOpenapi => lint_openapi::run(&workspace()),
        Task::Prometheus => prometheus::run(&workspace()),
        Task::Grafana => grafana::run(&workspace()),
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

/// Writes the figure tables of docs/behaviour.md from the document the API serves, then the
/// document to docs/openapi.json (a test keeps each equal to the code). The document does not
/// embed docs/behaviour.md (its `info.description` is the web crate's `openapi/summary.md`), so
/// the tables do not change it: when they change, the task runs once more, which finds them
/// written and writes the document.
fn openapi() -> Result<()> {
    let bytes = callstats_web::openapi::document_bytes();
    let document = serde_json::from_slice(&bytes).context("the document is not JSON")?;
    let path = workspace().join("docs/behaviour.md");
    let page = std::fs::read_to_string(&path)
        .with_context(|| format!("could not read {}", path.display()))?;
    let written = figures::rewrite(&page, &figures::tables(&document)?)?;
    if written != page {
        std::fs::write(&path, written)
            .with_context(|| format!("could not write {}", path.display()))?;
        eprintln!("wrote the figure tables of {}", path.display());
        let manifest = workspace().join("Cargo.toml");
        let manifest = manifest
            .to_str()
            .context("the workspace path is not UTF-8")?;
        return cargo(
            &[
                "run",
                "--quiet",
                "--manifest-path",
                manifest,
                "--package",
                "xtask",
                "--",
                "openapi",
            ],
            &[],
        );
    }

    let path = workspace().join("docs/openapi.json");
    std::fs::write(&path, &bytes).with_context(|| format!("could not write {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, Parser as _};

    use super::Cli;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn only_what_ci_and_a_contributor_run_is_a_task() {
        assert!(Cli::try_parse_from(["cargo xtask", "prometheus"]).is_ok());
        // The benchmarks are callstats-bench's (bench/).
        for task in ["load", "hostile", "soak", "unknown"] {
            assert!(Cli::try_parse_from(["cargo xtask", task]).is_err());
        }
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
                    .filter(|d| *d != "(none)")
                    .collect()
            };
            drawn.insert(name, deps);
        }
        assert_eq!(drawn, actual);
    }
}
