//! `replicas-load`: how fast a cached endpoint is served by one replica with its in-process
//! cache, by one replica with Redis, and by two replicas sharing Redis, and how many Redis
//! commands one request costs.
//!
//! Everything runs on loopback from the release binary: `callstats sim` as the upstream, a
//! SQLite portal seeded with the demo data, a private `redis-server`, and `wrk` as the load.
//! A key with a huge quota keeps 429s out of the figures.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result, bail};
use callstats_redis::testing::PrivateRedis;
use xtask::process::{get, in_scratch_dir, require};
use xtask::serve::{Portal, Server, binary, sim};

use crate::harness::{print, wrk};

/// The cached endpoint under load (answered from the upstream, 10-minute lifetime).
const PATH: &str = "/api/v1/calls/summary?start=2026-11-02";

/// Release build, then wrk on a cached endpoint: one replica with the in-process cache, one
/// with Redis, two sharing Redis; requests/s, p99, Redis commands a request.
///
/// Needs wrk, redis-server and redis-cli.
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
    require("wrk", "wrk")?;
    require("redis-server", "redis-server")?;
    require("redis-cli", "redis-tools")?;
    let binary = binary(false)?;
    in_scratch_dir("replicas-load", |dir| measure(load, &binary, dir))
}

fn measure(load: &Options, binary: &Path, dir: &Path) -> Result<()> {
    let (_sim, sim_url) = sim(binary, dir, "sim", &[])?;
    let portal = Portal::seeded_demo(binary, dir, "portal.db", sim_url)?;
    let key = portal.key("load", 100_000_000)?;
    let redis = PrivateRedis::start().context("cannot start redis-server")?;
    let redis_url = redis.url();
    // A line a request would be logged at the default level: the load measures serving.
    let serve = |name: &str, redis: Option<&str>| -> Result<Server> {
        let server = portal.serve_with(name, redis, 0, &[("RUST_LOG", "warn")])?;
        warm(server.port, &key)?;
        Ok(server)
    };

    let mut rows = Vec::new();
    {
        let replica = serve("in-process", None)?;
        let measured = wrk(load, &[replica.port], &key)?;
        rows.push(("1 replica, in-process cache", measured, None));
    }
    {
        let replica = serve("redis-1", Some(&redis_url))?;
        let before = redis_commands(&redis_url)?;
        let measured = wrk(load, &[replica.port], &key)?;
        let commands = redis_commands(&redis_url)?.saturating_sub(before);
        rows.push(("1 replica, Redis", measured, Some(commands)));
    }
    {
        let a = serve("redis-2a", Some(&redis_url))?;
        let b = serve("redis-2b", Some(&redis_url))?;
        let before = redis_commands(&redis_url)?;
        let measured = wrk(load, &[a.port, b.port], &key)?;
        let commands = redis_commands(&redis_url)?.saturating_sub(before);
        rows.push(("2 replicas, Redis", measured, Some(commands)));
    }

    let mut report = format!(
        "\nGET {PATH} (cached), {} s, {} connections, wrk on this machine\n\n\
         | setup | requests/s | p99 | non-2xx | Redis commands/request |\n|---|---:|---:|---:|---:|\n",
        load.seconds, load.connections
    );
    for (name, measured, commands) in rows {
        let per_request = commands.map_or_else(
            || "-".to_owned(),
            |commands| format!("{:.2}", ratio(commands, measured.requests)),
        );
        report += &format!(
            "| {name} | {:.0} | {:.2} ms | {} | {per_request} |\n",
            measured.per_second, measured.p99_ms, measured.non_2xx
        );
    }
    print(&report)
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
    let connections = format!("-c{}", (load.connections / u32::try_from(ports.len())?).max(1));
    let duration = format!("-d{}s", load.seconds);
    let authorization = format!("Authorization: Bearer {key}");
    let runs = ports
        .iter()
        .map(|port| {
            wrk::start(
                &["-t1", &connections, &duration, "--latency"],
                &[&authorization],
                &format!("http://127.0.0.1:{port}{PATH}"),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let mut total = wrk::Report::default();
    for run in runs {
        let one = wrk::finish(run)?;
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
