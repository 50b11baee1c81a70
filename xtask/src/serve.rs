//! What the measuring tasks (`cold`, `durability`, `isolation`) share: the service's binary, a
//! portal database seeded for it, `callstats serve` processes in front of a sim with their
//! metrics, reading figures out of those metrics and out of /proc, and the markdown table the
//! figures are printed in.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use callstats_domain::calendar::Day;
use ureq::http::HeaderMap;

use crate::process::{
    Running, free_port, get, get_with, spawn, target_dir, wait_for_port, wrapped,
};

/// How long a started process may take to listen.
pub const PORT_WAIT: Duration = Duration::from_secs(30);
/// The counter the call platform client increments for every page it asks for.
pub const UPSTREAM_COUNTER: &str = "callstats_upstream_requests_total";
/// The gauge the warmer sets once its first complete pass is over.
const WARM_UP_GAUGE: &str = "callstats_call_day_warmup_seconds";

/// Builds the `callstats` binary (release, unless `debug`) and says where it is.
pub fn binary(debug: bool) -> Result<PathBuf> {
    binary_with(debug, None)
}

/// [`binary`] with a feature of the `callstats` crate (another allocator).
pub fn binary_with(debug: bool, feature: Option<&str>) -> Result<PathBuf> {
    let mut build = vec!["build", "-p", "callstats", "--bin", "callstats"];
    if !debug {
        build.push("--release");
    }
    if let Some(feature) = feature {
        build.extend(["--features", feature]);
    }
    crate::cargo(&build, &[])?;
    Ok(target_dir()
        .join(if debug { "debug" } else { "release" })
        .join("callstats"))
}

/// Starts `callstats sim` with these extra arguments on a free port; its base URL.
pub fn sim(binary: &Path, dir: &Path, name: &str, args: &[&str]) -> Result<(Running, String)> {
    let port = free_port()?;
    let process = spawn(
        Command::new(binary)
            .args(["sim", "--bind", &format!("127.0.0.1:{port}")])
            .args(args),
        dir,
        name,
    )?;
    wait_for_port(port, PORT_WAIT)?;
    Ok((process, format!("http://127.0.0.1:{port}")))
}

/// What the servers share: the binary, the work directory, the database and the upstream.
pub struct Portal<'a> {
    pub binary: &'a Path,
    pub dir: &'a Path,
    pub database: String,
    pub sim_url: String,
}

impl<'a> Portal<'a> {
    /// A SQLite portal database, `file` in `dir`, seeded with the demo data, in front of
    /// `sim_url`.
    pub fn seeded_demo(
        binary: &'a Path,
        dir: &'a Path,
        file: &str,
        sim_url: String,
    ) -> Result<Self> {
        let portal = Self {
            binary,
            dir,
            database: format!("sqlite://{}", dir.join(file).display()),
            sim_url,
        };
        portal.callstats(&["seed", "--demo"])?;
        Ok(portal)
    }

    /// The same portal database in front of another upstream.
    #[must_use]
    pub fn in_front_of(&self, sim_url: String) -> Self {
        Self {
            binary: self.binary,
            dir: self.dir,
            database: self.database.clone(),
            sim_url,
        }
    }

    /// Runs one command against the portal database (`seed` migrates it); its stdout.
    pub fn callstats(&self, args: &[&str]) -> Result<Vec<u8>> {
        let output = Command::new(self.binary)
            .args(args)
            .args(["--database-url", &self.database])
            .env_remove("CALLSTATS_DATABASE_URL")
            .env("RUST_LOG", "warn")
            .output()
            .with_context(|| format!("cannot run callstats {}", args.join(" ")))?;
        if !output.status.success() {
            bail!(
                "callstats {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(output.stdout)
    }

    /// Issues a key with the `calls` scope and `rate_limit` requests a minute; its plaintext.
    pub fn key(&self, name: &str, rate_limit: u32) -> Result<String> {
        let created = self.callstats(&[
            "keys",
            "create",
            "--name",
            name,
            "--scopes",
            "calls",
            "--rate-limit",
            &rate_limit.to_string(),
        ])?;
        Ok(String::from_utf8(created)?.trim().to_owned())
    }

    /// Starts `callstats serve` in front of the sim, with Redis when given one (every server
    /// of a run on the same prefix, so they share it), its warmer off (the measurements count
    /// the upstream requests of the questions they ask); waits until both of its ports listen.
    pub fn serve(&self, name: &str, redis: Option<&str>) -> Result<Server> {
        self.serve_under(name, redis, &[])
    }

    /// [`Portal::serve`] with the warmer keeping the last `warm_days` days held.
    pub fn serve_warm(&self, name: &str, redis: Option<&str>, warm_days: u32) -> Result<Server> {
        self.serve_with(name, redis, warm_days, &[])
    }

    /// [`Portal::serve_warm`] with more settings in its environment (name, value).
    pub fn serve_with(
        &self,
        name: &str,
        redis: Option<&str>,
        warm_days: u32,
        env: &[(&str, &str)],
    ) -> Result<Server> {
        self.start(name, redis, &[], warm_days, env)
    }

    /// [`Portal::serve`], run by the command `launcher` (such as `prlimit --nofile=1024 --`).
    pub fn serve_under(
        &self,
        name: &str,
        redis: Option<&str>,
        launcher: &[&str],
    ) -> Result<Server> {
        self.start(name, redis, launcher, 0, &[])
    }

    fn start(
        &self,
        name: &str,
        redis: Option<&str>,
        launcher: &[&str],
        warm_days: u32,
        env: &[(&str, &str)],
    ) -> Result<Server> {
        let port = free_port()?;
        let metrics_port = free_port()?;
        let mut command = wrapped(launcher, self.binary);
        command
            .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
            .args(["--metrics-bind", &format!("127.0.0.1:{metrics_port}")])
            .args(["--database-url", &self.database])
            .env("CALLSTATS_CALL_PLATFORM_URL", &self.sim_url)
            .env("CALLSTATS_CALL_DAY_WARM_DAYS", warm_days.to_string())
            .env_remove("CALLSTATS_REDIS_URL")
            .env_remove("CALLSTATS_DATABASE_URL")
            .envs(env.iter().copied());
        if let Some(url) = redis {
            command
                .env("CALLSTATS_REDIS_URL", url)
                .env("CALLSTATS_REDIS_PREFIX", "xtask:");
        }
        let process = spawn(&mut command, self.dir, name)?;
        wait_for_port(port, PORT_WAIT).with_context(|| format!("{name} did not start"))?;
        wait_for_port(metrics_port, PORT_WAIT)
            .with_context(|| format!("{name} serves no metrics"))?;
        Ok(Server {
            process,
            port,
            metrics_port,
        })
    }
}

/// A running `callstats serve` and its two ports.
pub struct Server {
    pub process: Running,
    pub port: u16,
    pub metrics_port: u16,
}

/// What one measured step cost: its wall time and the upstream requests it caused, and how it
/// was answered (200, or the first other status of its requests).
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    pub time: Duration,
    pub upstream: u64,
    pub status: u16,
}

impl Server {
    /// The serve process's metrics, as Prometheus text.
    pub fn metrics(&self) -> Result<String> {
        let (status, body) = get(self.metrics_port, "/metrics", "")?;
        if status != 200 {
            bail!("/metrics answered {status}");
        }
        Ok(String::from_utf8(body)?)
    }

    /// The serve process's upstream requests so far, every outcome counted.
    pub fn upstream_requests(&self) -> Result<u64> {
        counter(&self.metrics()?, UPSTREAM_COUNTER, "")
    }

    /// Waits until the warmer has held its days once (its `callstats_call_day_warmup_seconds`
    /// gauge is set): how long it took, as the server measured it, and the upstream requests
    /// it made.
    pub fn wait_for_warm_up(&self, limit: Duration) -> Result<Cost> {
        let deadline = Instant::now() + limit;
        loop {
            let metrics = self.metrics()?;
            if let Some(took) = gauge(&metrics, WARM_UP_GAUGE) {
                return Ok(Cost {
                    time: Duration::try_from_secs_f64(took).unwrap_or_default(),
                    upstream: counter(&metrics, UPSTREAM_COUNTER, "")?,
                    status: 200,
                });
            }
            if Instant::now() > deadline {
                bail!("the warm-up did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One GET, timed, the upstream requests it caused and its status.
    pub fn measure(&self, path: &str, key: &str) -> Result<Cost> {
        self.measure_as(path, key, None).map(|(cost, _)| cost)
    }

    /// [`Server::measure`] with `accept` as the request's `Accept` (none when `None`), and the
    /// body's bytes.
    pub fn measure_as(&self, path: &str, key: &str, accept: Option<&str>) -> Result<(Cost, usize)> {
        let headers: &[(&str, &str)] = match accept {
            Some(accept) => &[("Accept", accept)],
            None => &[],
        };
        let (cost, _, body) = self.measure_answer(path, key, headers)?;
        Ok((cost, body.len()))
    }

    /// [`Server::measure`] with more request `headers` (name, value): the answer's headers
    /// and body too.
    pub fn measure_answer(
        &self,
        path: &str,
        key: &str,
        headers: &[(&str, &str)],
    ) -> Result<(Cost, HeaderMap, Vec<u8>)> {
        static AGENT: std::sync::LazyLock<ureq::Agent> =
            std::sync::LazyLock::new(crate::process::agent);
        let before = self.upstream_requests()?;
        let started = Instant::now();
        let (status, answer_headers, body) = get_with(
            &AGENT,
            &format!("127.0.0.1:{}", self.port),
            path,
            key,
            headers,
        )?;
        let time = started.elapsed();
        let upstream = self.upstream_requests()?.saturating_sub(before);
        Ok((
            Cost {
                time,
                upstream,
                status,
            },
            answer_headers,
            body,
        ))
    }

    /// One GET per path, each from its own thread, all at once: the time until every one
    /// answered and the upstream requests of all of them, then the slowest single request.
    pub fn measure_together(&self, paths: &[String], key: &str) -> Result<(Cost, Duration)> {
        let before = self.upstream_requests()?;
        let port = self.port;
        let started = Instant::now();
        let (slowest, status) = std::thread::scope(|scope| -> Result<(Duration, u16)> {
            let requests: Vec<_> = paths
                .iter()
                .map(|path| {
                    scope.spawn(move || -> Result<(Duration, u16)> {
                        let started = Instant::now();
                        let (status, _) = get(port, path, key)?;
                        Ok((started.elapsed(), status))
                    })
                })
                .collect();
            let (mut slowest, mut first_failure) = (Duration::ZERO, None);
            for request in requests {
                let (time, status) = request
                    .join()
                    .map_err(|_| anyhow!("a request thread panicked"))??;
                slowest = slowest.max(time);
                if status != 200 {
                    first_failure.get_or_insert(status);
                }
            }
            Ok((slowest, first_failure.unwrap_or(200)))
        })?;
        let time = started.elapsed();
        let upstream = self.upstream_requests()?.saturating_sub(before);
        Ok((
            Cost {
                time,
                upstream,
                status,
            },
            slowest,
        ))
    }
}

/// One line of the table.
pub struct Row {
    pub name: String,
    pub time: Duration,
    /// How it was answered: 200, or the first other status.
    pub status: u16,
    /// `None` where the requests are counted on another row.
    pub upstream: Option<u64>,
    pub target: &'static str,
}

impl Row {
    pub fn new(name: impl Into<String>, cost: Cost, target: &'static str) -> Self {
        Self {
            name: name.into(),
            time: cost.time,
            status: cost.status,
            upstream: Some(cost.upstream),
            target,
        }
    }
}

pub fn table(rows: &[Row]) -> String {
    let mut table = "| row | time | upstream requests | target |\n|---|---:|---:|---|\n".to_owned();
    for row in rows {
        let upstream = row
            .upstream
            .map_or_else(|| "-".to_owned(), |count| count.to_string());
        let answered = match row.status {
            200 => String::new(),
            status => format!(", answered {status}"),
        };
        table += &format!(
            "| {} | {}{answered} | {upstream} | {} |\n",
            row.name,
            seconds(row.time),
            row.target
        );
    }
    table
}

pub fn summary_path((start, end): (Day, Day), more: &str) -> String {
    format!("/api/v1/calls/summary?start={start}&end={end}{more}")
}

pub fn agents_path((start, end): (Day, Day)) -> String {
    format!("/api/v1/calls/agents?start={start}&end={end}")
}

pub fn intervals_path((start, end): (Day, Day), minutes: u8) -> String {
    format!("/api/v1/calls/intervals?start={start}&end={end}&interval={minutes}")
}

pub fn span((start, end): (Day, Day)) -> String {
    format!("{start}..{end}")
}

/// The day `days` after `day` (before it when negative); `day` itself past the calendar's ends,
/// which the measured days, near today, never reach.
pub fn plus(day: Day, days: i64) -> Day {
    day.plus_days(days).unwrap_or(day)
}

/// The value of the gauge `name` (without labels), if it is set.
pub fn gauge(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// The sum of every sample of the counter `name` in a Prometheus text exposition whose labels
/// contain `label` (`outcome="throttled"`; empty: every label set); 0 before the counter is
/// first rendered.
pub fn counter(metrics: &str, name: &str, label: &str) -> Result<u64> {
    let mut total = 0_u64;
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        // The labels end at the last brace (a label value may hold spaces); a longer name
        // that merely starts with the counter's is another metric.
        let (labels, value) = if rest.starts_with('{') {
            match rest.rsplit_once('}') {
                Some((labels, value)) => (labels, value),
                None => continue,
            }
        } else if rest.starts_with(' ') {
            ("", rest)
        } else {
            continue;
        };
        if !labels.contains(label) {
            continue;
        }
        let Some(value) = value.split_whitespace().next() else {
            continue;
        };
        let count: u64 = value
            .parse()
            .with_context(|| format!("unexpected metrics line {line:?}"))?;
        total = total.saturating_add(count);
    }
    Ok(total)
}

/// Peak resident set size of a process (`VmHWM` in /proc), in KiB.
pub fn peak_rss_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmHWM:")
}

/// Resident set size of a process now (`VmRSS` in /proc), in KiB.
pub fn rss_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmRSS:")
}

fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    kib_of(&status, field).with_context(|| format!("no {field} in {path}"))
}

/// A `Field:   12345 kB` line of a /proc status file.
fn kib_of(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| value.trim().strip_suffix("kB"))
        .and_then(|value| value.trim().parse().ok())
}

pub fn mebibytes(kib: u64) -> String {
    u32::try_from(kib).map_or_else(
        |_| format!("{kib} KiB"),
        |kib| format!("{:.1} MiB", f64::from(kib) / 1024.0),
    )
}

/// Seconds with two decimals, or milliseconds below a second.
pub fn seconds(time: Duration) -> String {
    let seconds = time.as_secs_f64();
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1000.0)
    } else {
        format!("{seconds:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_is_summed_over_the_label_sets_asked_for_and_nothing_else() {
        let text = "# HELP callstats_upstream_requests_total pages asked for
# TYPE callstats_upstream_requests_total counter
callstats_upstream_requests_total{outcome=\"ok\"} 131
callstats_upstream_requests_total{outcome=\"transient_error\"} 2
callstats_upstream_requests_total{outcome=\"odd } label\"} 1
callstats_upstream_requests_totally 1000
callstats_http_requests_total{route=\"/api/v1/calls/summary\"} 7
callstats_upstream_requests_total 10
";
        assert_eq!(counter(text, UPSTREAM_COUNTER, "").unwrap(), 144);
        assert_eq!(
            counter(text, UPSTREAM_COUNTER, "outcome=\"ok\"").unwrap(),
            131
        );
        assert_eq!(counter(text, UPSTREAM_COUNTER, "nothing").unwrap(), 0);
        assert_eq!(counter("", UPSTREAM_COUNTER, "").unwrap(), 0);
        assert!(
            counter(
                "callstats_upstream_requests_total{a=\"b\"} x",
                UPSTREAM_COUNTER,
                ""
            )
            .is_err()
        );
    }

    #[test]
    fn the_peak_rss_is_read_from_vm_hwm() {
        let status =
            "Name:\tcallstats\nVmPeak:\t  900000 kB\nVmHWM:\t   48128 kB\nVmRSS:\t   40000 kB\n";
        assert_eq!(kib_of(status, "VmHWM:"), Some(48128));
        assert_eq!(kib_of(status, "VmRSS:"), Some(40000));
        assert_eq!(kib_of("VmRSS:\t 1 kB\n", "VmHWM:"), None);
        assert_eq!(mebibytes(48128), "47.0 MiB");
    }

    #[test]
    fn times_print_in_seconds_or_below_a_second_in_milliseconds() {
        assert_eq!(seconds(Duration::from_millis(14_236)), "14.24 s");
        assert_eq!(seconds(Duration::from_micros(2_600)), "3 ms");
    }
}
