//! The service on loopback, started from a build: `callstats sim`, a portal database seeded
//! with the demo data, `callstats serve` processes in front of a sim with their metrics
//! listeners, and `callstats demo` with keys of its own.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};

use crate::process::{Running, free_port, get, spawn, target_dir, wait_for_port, wrapped};

/// How long a started process may take to listen.
pub const PORT_WAIT: Duration = Duration::from_secs(30);
/// The quota of a key issued for a task: more requests a minute than any run sends.
pub const HIGH_QUOTA: &str = "100000000";

/// Builds the `callstats` binary (release, unless `debug`) and says where it is.
pub fn binary(debug: bool) -> Result<PathBuf> {
    let mut build = vec!["build", "-p", "callstats", "--bin", "callstats"];
    if !debug {
        build.push("--release");
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
    /// of a run on the same prefix, so they share it), its warmer and backfill off (the
    /// measurements count the upstream requests of the questions they ask); waits until both of
    /// its ports listen.
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
            // Off unless `env` says otherwise: it would fetch older days in the background.
            .env("CALLSTATS_CALL_DAY_BACKFILL_PER_MINUTE", "0")
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

impl Server {
    /// The serve process's metrics, as Prometheus text.
    pub fn metrics(&self) -> Result<String> {
        let (status, body) = get(self.metrics_port, "/metrics", "")?;
        if status != 200 {
            bail!("/metrics answered {status}");
        }
        Ok(String::from_utf8(body)?)
    }
}

/// `callstats demo` on a free loopback port, with its database in a work directory of its own
/// and the platform, database and Redis of its defaults; stopped when dropped.
pub struct Demo {
    /// The work directory (the database, the log, reports).
    pub dir: PathBuf,
    pub port: u16,
    /// The key the demo printed (every scope, the default quota).
    pub key: String,
    binary: PathBuf,
    database: String,
    process: Running,
}

impl Demo {
    /// Builds the debug binary and starts its demo in `target/<task>-run-<pid>` (emptied
    /// first), with `env` added to its environment and its log on this process's stderr.
    pub fn start(task: &str, env: &[(&str, &str)]) -> Result<Self> {
        let binary = binary(true)?;
        let dir = target_dir().join(format!("{task}-run-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot empty {}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let env = [&[("RUST_LOG", "warn")], env].concat();
        Self::launch::<&str>(&binary, &dir, &[], &env, Stdio::inherit())
    }

    /// Starts the demo of `binary` in `dir`, run by `launcher` (a profiler, say) when it is not
    /// empty, with `env` added to its environment and its log in `demo.log` there.
    pub fn start_in<S: AsRef<std::ffi::OsStr>>(
        binary: &Path,
        dir: &Path,
        launcher: &[S],
        env: &[(&str, &str)],
    ) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let log = std::fs::File::create(dir.join("demo.log"))?;
        Self::launch(binary, dir, launcher, env, log.into())
    }

    fn launch<S: AsRef<std::ffi::OsStr>>(
        binary: &Path,
        dir: &Path,
        launcher: &[S],
        env: &[(&str, &str)],
        log: Stdio,
    ) -> Result<Self> {
        let database = format!("sqlite://{}/callstats-demo.db", dir.display());
        let port = free_port()?;
        let mut child = wrapped(launcher, binary)
            .args(["demo", "--bind", &format!("127.0.0.1:{port}")])
            .args(["--database-url", &database])
            .current_dir(dir)
            .env_remove("CALLSTATS_CALL_PLATFORM_URL")
            .env_remove("CALLSTATS_DATABASE_URL")
            .env_remove("CALLSTATS_REDIS_URL")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start {} demo", binary.display()))?;
        let stdout = child.stdout.take().context("demo has no stdout")?;
        let process = Running(child);
        let mut lines = BufReader::new(stdout).lines();
        let mut demo_key = None;
        for line in lines.by_ref() {
            let line = line.context("cannot read the demo's stdout")?;
            if let Some(key) = line.strip_prefix("key: ") {
                demo_key = Some(key.to_owned());
                break;
            }
        }
        let Some(key) = demo_key else {
            bail!("callstats demo exited before printing its key");
        };
        // The demo goes on printing its curl lines: keep reading, or its writes fail.
        std::thread::spawn(move || lines.for_each(drop));
        wait_for_port(port, PORT_WAIT)?;
        Ok(Self {
            dir: dir.to_owned(),
            port,
            key,
            binary: binary.to_owned(),
            database,
            process,
        })
    }

    /// The demo's process id.
    pub fn pid(&self) -> u32 {
        self.process.0.id()
    }

    /// A new key with these scopes (comma list) and a quota no run reaches.
    pub fn issue(&self, name: &str, scopes: &str) -> Result<String> {
        let output = Command::new(&self.binary)
            .args([
                "keys",
                "create",
                "--database-url",
                &self.database,
                "--name",
                name,
                "--scopes",
                scopes,
                "--rate-limit",
                HIGH_QUOTA,
            ])
            .stderr(Stdio::null())
            .output()
            .context("cannot run callstats keys create")?;
        if !output.status.success() {
            bail!(
                "callstats keys create --name {name} failed: {}",
                output.status
            );
        }
        Ok(String::from_utf8(output.stdout)
            .context("the key is not UTF-8")?
            .trim()
            .to_owned())
    }
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
    fn times_print_in_seconds_or_below_a_second_in_milliseconds() {
        assert_eq!(seconds(Duration::from_millis(14_236)), "14.24 s");
        assert_eq!(seconds(Duration::from_micros(2_600)), "3 ms");
    }
}
