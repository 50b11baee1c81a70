//! `cargo xtask prometheus`: the shipped Prometheus configuration, rules and dashboard against
//! real replicas, in CI.
//!
//! Starts `callstats sim`, a SQLite portal seeded with the demo data and two `callstats serve`
//! processes on loopback, each with its metrics listener and the warmer on (three days): one
//! with a private `redis-server`, the other with a Redis that is down, as one replica losing
//! Redis would be. deploy/prometheus is copied into a temporary directory with the two metrics
//! listeners as its targets and its intervals cut to a second, and Debian's `prometheus` runs
//! it. After a short load (cached and computed call statistics, the roster, the live figures as
//! JSON, an unknown path, a bad parameter), with one live event stream held open on the first
//! replica from before the load until the queries are answered, Prometheus's HTTP API is asked
//! for every recording rule and every query of deploy/grafana/callstats.json: each must return
//! data. A metric renamed in the code leaves a rule or a panel without data, and fails here.

use std::io::{BufReader, Write as _};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use callstats_redis::testing::PrivateRedis;
use serde_json::Value;

use crate::process::{free_port, get, in_scratch_dir, require, spawn, wait_for_port};
use crate::serve::{Portal, binary, sim};
use crate::sse::{Block, EventSource};

/// How long the load runs before the queries.
const LOAD: Duration = Duration::from_secs(20);

pub fn run(workspace: &Path) -> Result<()> {
    require("prometheus", "prometheus")?;
    let binary = binary(false)?;
    in_scratch_dir("prometheus", |dir| check(workspace, &binary, dir))
}

fn check(workspace: &Path, binary: &Path, dir: &Path) -> Result<()> {
    let (_sim, sim_url) = sim(binary, dir, "sim", &[])?;
    let portal = Portal::seeded_demo(binary, dir, "portal.db", sim_url)?;
    let key = portal.key("prometheus", 1_000_000)?;
    let redis = PrivateRedis::start()
        .context("cannot start redis-server (apt-get install -y redis-server)")?;
    let down = format!("redis://127.0.0.1:{}", free_port()?);
    let replicas = [
        portal.serve_warm("replica-a", Some(&redis.url()), 3)?,
        portal.serve_warm("replica-b", Some(&down), 3)?,
    ];

    // The shipped configuration, its targets the two metrics listeners, every second.
    let config_dir = dir.join("prometheus");
    std::fs::create_dir_all(config_dir.join("targets"))?;
    let shipped = workspace.join("deploy").join("prometheus");
    for file in ["recording.yml", "alerts.yml"] {
        std::fs::copy(shipped.join(file), config_dir.join(file))?;
    }
    let config = std::fs::read_to_string(shipped.join("prometheus.yml"))?
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace("evaluation_interval: 15s", "evaluation_interval: 1s");
    std::fs::write(config_dir.join("prometheus.yml"), config)?;
    let targets: Vec<String> = replicas
        .iter()
        .map(|replica| format!("127.0.0.1:{}", replica.metrics_port))
        .collect();
    std::fs::write(
        config_dir.join("targets").join("callstats.json"),
        serde_json::to_string(&serde_json::json!([{ "targets": targets }]))?,
    )?;
    let port = free_port()?;
    let _prometheus = spawn(
        Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                config_dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                config_dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}")),
        dir,
        "prometheus",
    )?;
    wait_for_port(port, Duration::from_secs(30)).context("prometheus did not start")?;

    let today = callstats_domain::calendar::Day::of(time::OffsetDateTime::now_utc());
    let paths = [
        "/api/v1/operators".to_owned(),
        format!("/api/v1/calls/summary?start={today}"),
        format!(
            "/api/v1/calls/agents?start={}",
            today.plus_days(-10).unwrap_or(today)
        ),
        "/api/v1/calls/live".to_owned(),
        "/api/v1/calls/summary?start=2026-02-30".to_owned(),
        "/api/v1/nope".to_owned(),
    ];
    let (status, body) = get(replicas[0].port, "/api/v1/calls/live", &key)?;
    if status != 200 {
        bail!(
            "/api/v1/calls/live answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    // Open (and so counted in callstats_live_streams_open) until the replicas stop, after the
    // queries.
    live_stream(replicas[0].port, &key)?;
    eprintln!("==> {} s of load on both replicas", LOAD.as_secs());
    let started = Instant::now();
    while started.elapsed() < LOAD {
        for replica in &replicas {
            for path in &paths {
                get(replica.port, path, &key)?;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    let agent = ureq::Agent::new_with_defaults();
    let mut queries: Vec<String> = recorded(&shipped.join("recording.yml"))?;
    let dashboard = workspace
        .join("deploy")
        .join("grafana")
        .join("callstats.json");
    for query in dashboard_queries(&dashboard)? {
        if !queries.contains(&query) {
            queries.push(query);
        }
    }
    let mut report = String::from("| query | series |\n|---|---:|\n");
    let mut empty = Vec::new();
    for query in &queries {
        let series = series_of(&agent, port, query)?;
        report += &format!("| `{query}` | {series} |\n");
        if series == 0 {
            empty.push(query.clone());
        }
    }
    std::io::stdout()
        .lock()
        .write_all(report.as_bytes())
        .context("cannot write the report")?;
    // The live metrics start at zero, so their series are there without a stream: the one held
    // open must be counted.
    let open = value_of(&agent, port, "sum(callstats_live_streams_open)")?;
    eprintln!("==> sum(callstats_live_streams_open) = {open}");
    drop(replicas);
    if !empty.is_empty() {
        bail!("no data for: {empty:?}");
    }
    if open < 1.0 {
        bail!("sum(callstats_live_streams_open) is {open} with a live event stream open");
    }
    Ok(())
}

/// Opens `/api/v1/calls/live` on the loopback `port` as an event stream and waits (30 s at most)
/// for its first `live` event, whose data must be the live figures. A thread of its own goes on
/// reading the stream, so that the service keeps it open and sends it its events, until the
/// service ends it (when it stops).
fn live_stream(port: u16, key: &str) -> Result<()> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_recv_response(Some(Duration::from_secs(30)))
        .build()
        .into();
    let answer = agent
        .get(format!("http://127.0.0.1:{port}/api/v1/calls/live"))
        .header("Authorization", format!("Bearer {key}"))
        .header("Accept", "text/event-stream")
        .call()
        .context("GET /api/v1/calls/live as an event stream failed")?;
    let content_type = answer
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if !content_type.starts_with("text/event-stream") {
        bail!("/api/v1/calls/live with Accept: text/event-stream answered {content_type:?}");
    }
    let mut source = EventSource::new(BufReader::new(answer.into_body().into_reader()));
    let (first, event) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(Some(block)) = source.next_block() {
            if let Block::Event { name, data, .. } = block
                && name == "live"
            {
                // Only the first is awaited: a send after it fails, and is of no matter.
                let _ = first.send(data);
            }
        }
    });
    let data = event
        .recv_timeout(Duration::from_secs(30))
        .context("the live event stream sent no `live` event within 30 s")?;
    let figures: Value = serde_json::from_str(&data)
        .with_context(|| format!("the first live event's data is not JSON: {data}"))?;
    for field in ["totals", "queues", "agents"] {
        if figures.get(field).is_none() {
            bail!("the first live event has no {field}: {data}");
        }
    }
    eprintln!("==> a live event stream open on 127.0.0.1:{port}");
    Ok(())
}

/// The names the recording rules record.
fn recorded(file: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(file)?;
    Ok(text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- record: "))
        .map(str::to_owned)
        .collect())
}

/// Every query of the dashboard's panels.
fn dashboard_queries(file: &Path) -> Result<Vec<String>> {
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(file)?)?;
    let panels = dashboard
        .get("panels")
        .and_then(Value::as_array)
        .context("the dashboard has no panels")?;
    Ok(panels
        .iter()
        .filter_map(|panel| panel.get("targets").and_then(Value::as_array))
        .flatten()
        .filter_map(|target| target.get("expr").and_then(Value::as_str))
        .map(str::to_owned)
        .collect())
}

/// How many series `query` returns now, asked again for up to 20 s (a rule's first
/// evaluations, a rate's second sample).
fn series_of(agent: &ureq::Agent, port: u16, query: &str) -> Result<usize> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let series = results_of(agent, port, query)?.len();
        if series > 0 || Instant::now() > deadline {
            return Ok(series);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The value of `query`, which must return one series (`sum(…)`), now.
fn value_of(agent: &ureq::Agent, port: u16, query: &str) -> Result<f64> {
    let results = results_of(agent, port, query)?;
    let [result] = results.as_slice() else {
        bail!("query {query}: {} series, not one", results.len());
    };
    result
        .pointer("/value/1")
        .and_then(Value::as_str)
        .and_then(|value| value.parse().ok())
        .with_context(|| format!("query {query}: no value in {result}"))
}

/// The series `query` returns now (Prometheus's `data.result`).
fn results_of(agent: &ureq::Agent, port: u16, query: &str) -> Result<Vec<Value>> {
    let mut answer = agent
        .get(format!("http://127.0.0.1:{port}/api/v1/query"))
        .query("query", query)
        .call()
        .with_context(|| format!("query {query} failed"))?;
    let body: Value = serde_json::from_slice(&answer.body_mut().read_to_vec()?)?;
    if body.get("status").and_then(Value::as_str) != Some("success") {
        bail!("query {query}: {body}");
    }
    Ok(body
        .pointer("/data/result")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}
