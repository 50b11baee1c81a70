//! `cargo xtask replicas-load`: how fast a cached endpoint is served by one replica with its
//! in-process cache, by one replica with Redis, and by two replicas sharing Redis, and how
//! many Redis commands one request costs.
//!
//! Everything runs on loopback from the release binary: `callstats sim` as the upstream, a
//! SQLite portal seeded with the demo data, a private `redis-server`, and `wrk` as the load.
//! A key with a huge quota keeps 429s out of the figures.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use callstats_redis::testing::PrivateRedis;

use crate::process::{Running, free_port, get, in_scratch_dir, spawn, target_dir, wait_for_port};
use crate::wrk;

/// The cached endpoint under load (answered from the upstream, 10-minute lifetime).
const PATH: &str = "/api/v1/calls/summary?start=2026-11-02";
/// How long a started process may take to listen.
const PORT_WAIT: Duration = Duration::from_secs(20);

/// Options of `cargo xtask replicas-load`.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// How long each configuration is loaded, in seconds
    #[arg(long, default_value_t = 10)]
    seconds: u32,
    /// Connections in all, split between the replicas when there are two
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(2..))]
    connections: u32,
}

pub fn run(load: &Options) -> Result<()> {
    for tool in ["wrk", "redis-server", "redis-cli"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            bail!("{tool} is missing: apt-get install -y wrk redis-server");
        }
    }
    crate::cargo(&["build", "--release", "-p", "callstats"], &[])?;
    let binary = target_dir().join("release/callstats");
    in_scratch_dir("load", |work| measure(load, &binary, work))
}

#[expect(clippy::print_stdout, reason = "the table is the command's result")]
fn measure(load: &Options, binary: &Path, work: &Path) -> Result<()> {
    let database = format!("sqlite://{}", work.join("portal.db").display());
    let callstats = |args: &[&str]| -> Result<Output> {
        let output = Command::new(binary)
            .args(args)
            .env("CALLSTATS_DATABASE_URL", &database)
            .env("RUST_LOG", "warn")
            .output()?;
        if !output.status.success() {
            bail!(
                "callstats {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(output)
    };
    callstats(&["migrate"])?;
    callstats(&["seed", "--demo"])?;
    let created = callstats(&[
        "keys",
        "create",
        "--name",
        "load",
        "--scopes",
        "calls",
        "--rate-limit",
        "100000000",
    ])?;
    let key = String::from_utf8(created.stdout)?.trim().to_owned();

    let sim_port = free_port()?;
    let _sim = spawn(
        Command::new(binary).args(["sim", "--bind", &format!("127.0.0.1:{sim_port}")]),
        work,
        "sim",
    )?;
    wait_for_port(sim_port, PORT_WAIT)?;
    let redis = PrivateRedis::start().context("cannot start redis-server")?;
    let redis_url = redis.url();

    let serve = |redis: Option<&str>, name: &str| -> Result<(Running, u16)> {
        let port = free_port()?;
        let mut command = Command::new(binary);
        command
            .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
            .env("CALLSTATS_DATABASE_URL", &database)
            .env(
                "CALLSTATS_CALL_PLATFORM_URL",
                format!("http://127.0.0.1:{sim_port}"),
            )
            .env("RUST_LOG", "warn");
        if let Some(url) = redis {
            command.env("CALLSTATS_REDIS_URL", url);
        }
        let child = spawn(&mut command, work, name)?;
        wait_for_port(port, PORT_WAIT)?;
        warm(port, &key)?;
        Ok((child, port))
    };

    let mut report = Vec::new();
    {
        let (_replica, port) = serve(None, "in-process")?;
        let measured = wrk(load, &[port], &key)?;
        report.push(("1 replica, in-process cache", measured, None));
    }
    {
        let (_replica, port) = serve(Some(&redis_url), "redis-1")?;
        let before = redis_commands(&redis_url)?;
        let measured = wrk(load, &[port], &key)?;
        let commands = redis_commands(&redis_url)?.saturating_sub(before);
        report.push(("1 replica, Redis", measured, Some(commands)));
    }
    {
        let (_a, port_a) = serve(Some(&redis_url), "redis-2a")?;
        let (_b, port_b) = serve(Some(&redis_url), "redis-2b")?;
        let before = redis_commands(&redis_url)?;
        let measured = wrk(load, &[port_a, port_b], &key)?;
        let commands = redis_commands(&redis_url)?.saturating_sub(before);
        report.push(("2 replicas, Redis", measured, Some(commands)));
    }

    println!(
        "\nGET {PATH} (cached), {} s, {} connections, wrk on this machine\n",
        load.seconds, load.connections
    );
    println!(
        "| setup | requests/s | p99 | non-2xx | Redis commands/request |\n|---|---:|---:|---:|---:|"
    );
    for (name, measured, commands) in report {
        let per_request = commands.map_or_else(
            || "-".to_owned(),
            |commands| format!("{:.2}", ratio(commands, measured.requests)),
        );
        println!(
            "| {name} | {:.0} | {:.2} ms | {} | {per_request} |",
            measured.per_second, measured.p99_ms, measured.non_2xx
        );
    }
    Ok(())
}

/// One request, so the entry is cached before the load starts.
fn warm(port: u16, key: &str) -> Result<()> {
    let (status, _) = get(port, PATH, key)?;
    if status != 200 {
        bail!("warm-up request failed: {status}");
    }
    Ok(())
}

/// Runs one wrk per port at the same time, the connections split between them; sums the
/// throughput and keeps the worst p99.
fn wrk(load: &Options, ports: &[u16], key: &str) -> Result<wrk::Report> {
    let connections = (load.connections / u32::try_from(ports.len())?).max(1);
    let runs = ports
        .iter()
        .map(|port| {
            Command::new("wrk")
                .args([
                    "-t1",
                    &format!("-c{connections}"),
                    &format!("-d{}s", load.seconds),
                    "--latency",
                    "-H",
                    &format!("Authorization: Bearer {key}"),
                    &format!("http://127.0.0.1:{port}{PATH}"),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .context("cannot run wrk")
        })
        .collect::<Result<Vec<_>>>()?;
    let mut total = wrk::Report::default();
    for run in runs {
        let output = run.wait_with_output()?;
        let text = String::from_utf8(output.stdout)?;
        let one = wrk::parse(&text).with_context(|| format!("unexpected wrk output:\n{text}"))?;
        total.requests += one.requests;
        total.per_second += one.per_second;
        total.p99_ms = total.p99_ms.max(one.p99_ms);
        total.non_2xx += one.non_2xx;
    }
    Ok(total)
}

/// Commands Redis has run so far (`INFO commandstats`), without the INFO calls themselves.
fn redis_commands(url: &str) -> Result<u64> {
    let output = Command::new("redis-cli")
        .args(["-u", url, "INFO", "commandstats"])
        .output()?;
    let text = String::from_utf8(output.stdout)?;
    Ok(text
        .lines()
        .filter(|line| line.starts_with("cmdstat_") && !line.starts_with("cmdstat_info:"))
        .filter_map(|line| {
            line.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum())
}

#[expect(
    clippy::as_conversions,
    reason = "a ratio for display: u64 to f64 precision loss is irrelevant"
)]
fn ratio(commands: u64, requests: u64) -> f64 {
    commands as f64 / requests.max(1) as f64
}
