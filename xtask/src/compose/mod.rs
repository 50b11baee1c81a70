//! `cargo xtask compose`: the ops journey of docs/operations.md, walked on a real Docker engine
//! with docker-compose.yml as shipped, each step held to what that document says.
//!
//! Builds the image from the Dockerfile (the classic builder, through Compose, and BuildKit),
//! then runs, under a project name of its own, the compose commands of README.md and
//! docs/operations.md exactly as written, read from the documents ([`documented`]): the demo
//! brought up with its `.env`, a key issued, nginx reloaded, a replica started, the status read,
//! Prometheus brought up. Between them, the drills: every endpoint through nginx, a HIT from the
//! other replica, the client's address named by the front (two addresses, two anonymous
//! quotas), api1 stopped under load (no error; a live stream through nginx on api1 ends, and its
//! client reconnects to api2, where the events go on), nginx restarted while api1 is stopped
//! (serving) and reloaded under load (no error), api1 killed (it stays down until started), Redis
//! restarted under load (no 5xx), Postgres stopped 60 s under load (no 429, cached answers 200,
//! the others 503 with `Retry-After`), both replicas stopped and started (nginx's 503s, and how
//! soon after the replicas answer again they end), `down` and `up` (keys and data kept,
//! `demo-data` exit 0), Prometheus (every target up, nginx's exporter too; every rule healthy),
//! SIGTERM to a replica with a request in flight (200), a replica without the platform's URL
//! (exit 2, saying why) and every container's log bound. Prints each step's outcome, its counts
//! and its time as a markdown table and fails if any step did not behave as documented.
//!
//! Never pulls: every image docker-compose.yml and the Dockerfile name must be on the machine
//! already. `--stand-ins` builds them from Debian's packages first (deploy/stand-ins/README.md),
//! each kept for the next run until its inputs change; `--stand-ins-only` builds them and stops.

mod documented;

use std::collections::BTreeMap;
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use callstats_domain::calendar::Day;

use crate::process::target_dir;
use crate::serve::seconds;
use crate::sse::{Block, EventSource};
use documented::Documented;

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Build the registry images docker-compose.yml and the Dockerfile name from Debian's
    /// packages first (a debootstrap base; kept across runs until their inputs change)
    #[arg(long)]
    pub stand_ins: bool,
    /// Build the stand-in images (as `--stand-ins`) and stop there
    #[arg(long, conflicts_with_all = ["no_build", "keep"])]
    pub stand_ins_only: bool,
    /// Use the `callstats:local` image as it is (built by an earlier run) instead of building it
    #[arg(long)]
    pub no_build: bool,
    /// Leave the deployment running at the end (it is taken down, volumes and all, otherwise)
    #[arg(long)]
    pub keep: bool,
}

/// The compose project the journey runs under (`COMPOSE_PROJECT_NAME`, for the documented
/// commands too), so that it never touches a deployment of the default name on the same engine.
const PROJECT: &str = "callstats-journey";
/// Where docker-compose.yml publishes nginx and Prometheus.
const LB: &str = "127.0.0.1:8080";
const PROMETHEUS: &str = "127.0.0.1:9090";
/// The replicas' own API addresses on the compose network (docker-compose.yml's fixed
/// addresses), which the host reaches directly.
const REPLICAS: [&str; 2] = ["172.28.80.11:8080", "172.28.80.12:8080"];
/// The sim's delay before each answer (`CALLSTATS_SIM_LATENCY_MS`, which docker-compose.yml
/// passes to it).
const SIM_LATENCY_MS: &str = "100";
const ALL_SCOPES: &str = "calls,kpi:aggregate,kpi:detail,operators,scripts";
/// The anonymous quota of each client address (`CALLSTATS_ANON_RATE_LIMIT`'s default).
const ANON_QUOTA: usize = 60;
/// nginx's `Retry-After` on its own 503 (deploy/nginx/nginx.conf).
const LB_RETRY_AFTER: &str = "5";
/// The live figures, a Server-Sent Events stream with `Accept: text/event-stream`.
const LIVE: &str = "/api/v1/calls/live";
/// A stream's `retry:` (docs/operations.md, "Live streams"): its client reconnects this long after
/// it ends.
const LIVE_RETRY: Duration = Duration::from_secs(5);
/// How soon after a replica is stopped its streams' clients must have figures again, from the
/// other replica.
const LIVE_BACK_WITHIN: Duration = Duration::from_secs(30);

/// The images docker-compose.yml and the Dockerfile name, and the stand-in of each
/// (`deploy/stand-ins/<folder>`); the base `debian:bookworm-slim` is made by debootstrap.
const STAND_INS: [(&str, &str); 6] = [
    ("rust:1.95-slim-bookworm", "rust"),
    ("postgres:16-alpine", "postgres"),
    ("redis:7-alpine", "redis"),
    ("nginx:1.27-alpine", "nginx"),
    ("nginx/nginx-prometheus-exporter:1.3.0", "nginx-exporter"),
    ("prom/prometheus:v2.53.0", "prometheus"),
];
const BASE: &str = "debian:bookworm-slim";
const STAND_IN_LABEL: &str = "org.callstats.stand-in";

pub fn run(options: &Options) -> Result<()> {
    let workspace = crate::workspace()
        .canonicalize()
        .context("cannot resolve the workspace")?;
    let mut journey = Journey::default();
    if options.stand_ins || options.stand_ins_only {
        journey.step("stand-in images from Debian's packages", || {
            stand_ins(&workspace)
        });
    }
    journey.step(
        "every image named is on the machine (nothing pulled)",
        || {
            let mut names: Vec<&str> = STAND_INS.iter().map(|(image, _)| *image).collect();
            names.push(BASE);
            let missing: Vec<&str> = names
                .into_iter()
                .filter(|name| !image_exists(name))
                .collect();
            if !missing.is_empty() {
                bail!(
                    "not on this machine: {} (pull them, or run with --stand-ins)",
                    missing.join(", ")
                );
            }
            Ok("found".to_owned())
        },
    );
    if options.stand_ins_only {
        return journey.finish();
    }
    let compose = Compose::new(&workspace)?;
    let dot_env = DotEnv::check(&workspace)?;
    compose.down_with_volumes();
    if options.no_build {
        journey.step("build: skipped (--no-build), the image as it is", || {
            if !image_exists("callstats:local") {
                bail!("callstats:local is not on this machine: run once without --no-build");
            }
            image_facts("callstats:local", &docker_now())
        });
    } else {
        journey.step("build: `docker-compose build` (classic builder)", || {
            let since = docker_now();
            compose.succeed(&["build"])?;
            image_facts("callstats:local", &since)
        });
        journey.step("build: BuildKit", || buildkit_build(&workspace));
    }
    let end = |journey: Journey| {
        if !options.keep {
            compose.down_with_volumes();
            dot_env.remove_if_ours();
        }
        journey.finish()
    };
    let Some(documented) = journey.step(
        "the compose commands of README.md and docs/operations.md, each marked",
        || compose.documented(&workspace),
    ) else {
        return end(journey);
    };
    if journey.failed() {
        return end(journey);
    }
    let up = journey.step(
        "the demo as documented (`cp deploy/demo.env .env`, `--profile demo up -d`): healthy",
        || {
            let ran = documented.run(documented::DEMO_UP)?;
            compose.wait_healthy(&["api1", "api2", "lb"], Duration::from_secs(120))?;
            let seeded = compose.exit_code("demo-data", Duration::from_secs(60))?;
            if seeded != "0" {
                bail!("demo-data exited {seeded}");
            }
            Ok(format!(
                "{ran}; api1, api2 and lb healthy; demo-data exit 0; sim logs JSON: {}",
                compose.logs_are_json("sim")?
            ))
        },
    );
    if up.is_none() {
        return end(journey);
    }
    journey.step(
        "a key as documented (`set -euo pipefail`, `exec -T api1 callstats keys create`, curl)",
        || documented.run(documented::KEY),
    );
    let Some(Key(key)) = journey.step(
        "a key for the journey (`exec -T api1 callstats keys create`)",
        || issue_key(&compose, "journey"),
    ) else {
        return end(journey);
    };
    let agent = crate::process::agent();
    let today = Day::of(time::OffsetDateTime::now_utc());
    let yesterday = today.plus_days(-1).unwrap_or(today);
    journey.step("every endpoint through nginx: 200", || {
        every_endpoint(&agent, &key, today)
    });
    journey.step("a HIT from the other replica (shared Redis)", || {
        hit_from_the_other_replica(&compose, &agent, &key)
    });
    journey.step(
        "the client's address named by the front: two addresses, two anonymous quotas",
        || front_names_the_client(&compose),
    );
    let summary = format!("/api/v1/calls/summary?start={yesterday}");
    let paths = [
        "/api/v1/operators".to_owned(),
        summary.clone(),
        "/api/v1/ping".to_owned(),
    ];
    let all_200 = |statuses: &BTreeMap<u16, u32>| statuses.keys().all(|s| *s == 200);
    // A live stream on api1, read by a client of its own while the next step stops api1; the
    // step after it says what the client saw.
    let api1_stopped = Arc::new(OnceLock::new());
    let live = LiveClient::open(&compose, &key, Arc::clone(&api1_stopped));
    journey.step("`stop api1` under a request loop: no error", || {
        under_load(&key, &paths, all_200, || {
            let _ = api1_stopped.set(Instant::now());
            compose.succeed(&["stop", "api1"])?;
            std::thread::sleep(Duration::from_secs(4));
            Ok(())
        })
    });
    journey.step(
        "a live stream through nginx while api1 is stopped: the client reconnects and the events go on",
        || live_stream_goes_on(&compose, live),
    );
    journey.step("lb restarted while api1 is stopped: serving", || {
        compose.succeed(&["restart", "lb"])?;
        wait_until(Duration::from_secs(20), || {
            Ok(ask(&agent, "/api/v1/ping", &key).is_ok_and(|a| a.status == 200))
        })?;
        let statuses = statuses_of(&agent, &key, &paths, 10);
        if statuses.keys().any(|s| *s != 200) {
            bail!("answers after the restart: {statuses:?}");
        }
        Ok(format!("{statuses:?}"))
    });
    journey.step(
        "`nginx -s reload` as documented, under a request loop: no error",
        || {
            under_load(&key, &paths, all_200, || {
                documented.run(documented::RELOAD)?;
                std::thread::sleep(Duration::from_secs(2));
                Ok(())
            })
        },
    );
    journey.step("`start api1` as documented: healthy again", || {
        let ran = documented.run(documented::START_REPLICA)?;
        compose.wait_healthy(&["api1"], Duration::from_secs(60))?;
        Ok(format!("{ran}; healthy"))
    });
    journey.step(
        "`docker kill` api1: it stays down; the status and `start` as documented",
        || killed_replica_stays_down(&compose, &documented),
    );
    journey.step("`restart redis` under load: no 5xx", || {
        under_load(
            &key,
            &paths,
            |statuses| statuses.keys().all(|s| *s < 500),
            || {
                compose.succeed(&["restart", "redis"])?;
                std::thread::sleep(Duration::from_secs(3));
                Ok(())
            },
        )
    });
    journey.step(
        "Postgres stopped 60 s under load: no 429, cached 200, uncached 503 with Retry-After",
        || postgres_stopped(&compose, &agent, &key, &summary),
    );
    journey.step(
        "both replicas stopped, then started: nginx's 503s, and after they answer again",
        || both_replicas_return(&compose, &key),
    );
    journey.step("`down`, then `up`: keys and portal data kept", || {
        let before = ask(&agent, "/api/v1/operators", &key)?.json()?;
        compose.succeed(&["down"])?;
        compose.succeed(&["up", "-d"])?;
        compose.wait_healthy(&["api1", "api2", "lb"], Duration::from_secs(120))?;
        let after = ask(&agent, "/api/v1/operators", &key)?;
        if after.status != 200 {
            bail!("the key issued before `down` answers {}", after.status);
        }
        if after.json()? != before {
            bail!("the roster changed across `down` and `up`");
        }
        let seeded = compose.exit_code("demo-data", Duration::from_secs(60))?;
        if seeded != "0" {
            bail!("demo-data exited {seeded} beside the data it loaded before");
        }
        Ok(format!(
            "the key answers 200; {} operators, as before; demo-data exit 0, the data left as it is",
            before
                .pointer("/operators")
                .and_then(|o| o.as_array())
                .map_or(0, Vec::len)
        ))
    });
    journey.step(
        "`--profile observability up -d prometheus` as documented: targets up, rules healthy",
        || {
            let ran = documented.run(documented::PROMETHEUS_UP)?;
            Ok(format!("{ran}; {}", prometheus_healthy(&agent)?))
        },
    );
    journey.step("SIGTERM to a replica with a request in flight: 200", || {
        sigterm_in_flight(&compose, &key, today)
    });
    journey.step(
        "a replica without the platform's URL: exit 2, saying why",
        || refuses_without_the_platform(&compose),
    );
    journey.step("every container's log bounded", || logs_bounded(&compose));
    end(journey)
}

/// `.env` next to docker-compose.yml, which every compose command reads and the documented
/// demo writes (`cp deploy/demo.env .env`). The journey works beside one that holds the demo's
/// settings, never beside an operator's own, and removes the one it wrote.
struct DotEnv {
    path: PathBuf,
    ours: bool,
}

impl DotEnv {
    fn check(workspace: &Path) -> Result<Self> {
        let path = workspace.join(".env");
        let demo = std::fs::read(workspace.join("deploy/demo.env"))
            .context("cannot read deploy/demo.env")?;
        let ours = match std::fs::read(&path) {
            Ok(existing) if existing == demo => false,
            Ok(_) => bail!(
                "{} holds other settings than deploy/demo.env, and the journey's documented \
                 commands would replace it: move it aside first",
                path.display()
            ),
            Err(_) => true,
        };
        Ok(Self { path, ours })
    }

    fn remove_if_ours(&self) {
        if self.ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The steps walked so far, each with its outcome and time.
#[derive(Default)]
struct Journey {
    rows: Vec<(String, Result<String, String>, Duration)>,
}

impl Journey {
    /// Runs one step and records it; its value when it succeeded.
    fn step<T: StepOutcome>(&mut self, name: &str, work: impl FnOnce() -> Result<T>) -> Option<T> {
        eprintln!("==> {name}");
        let started = Instant::now();
        let outcome = work();
        let took = started.elapsed();
        let (row, value) = match outcome {
            Ok(value) => (Ok(value.describe()), Some(value)),
            Err(err) => (Err(format!("{err:#}")), None),
        };
        eprintln!(
            "    {} ({})",
            row.as_ref().unwrap_or_else(|e| e),
            seconds(took)
        );
        self.rows.push((name.to_owned(), row, took));
        value
    }

    fn failed(&self) -> bool {
        self.rows.iter().any(|(_, outcome, _)| outcome.is_err())
    }

    /// Prints the table; an error when a step failed.
    fn finish(self) -> Result<()> {
        let mut table = String::from(
            "\n`cargo xtask compose`: docker-compose.yml walked as docs/operations.md says\n\n\
             | step | outcome | time |\n|---|---|---:|\n",
        );
        for (name, outcome, took) in &self.rows {
            let outcome = match outcome {
                Ok(text) => format!("ok: {text}"),
                Err(text) => format!("**FAILED**: {text}"),
            };
            table.push_str(&format!(
                "| {name} | {} | {} |\n",
                outcome.replace('|', "\\|").replace('\n', " "),
                seconds(*took)
            ));
        }
        let total: Duration = self.rows.iter().map(|(_, _, took)| *took).sum();
        table.push_str(&format!("\ntotal: {}\n", seconds(total)));
        std::io::Write::write_all(&mut std::io::stdout(), table.as_bytes())
            .context("cannot write the table")?;
        if self.failed() {
            bail!("a step of the journey did not behave as docs/operations.md says");
        }
        Ok(())
    }
}

/// What a step's value says in the table.
trait StepOutcome {
    fn describe(&self) -> String;
}

/// A key: its plaintext is never printed.
struct Key(String);

impl StepOutcome for Key {
    fn describe(&self) -> String {
        format!(
            "`cs_…` alone on stdout ({} bytes and a newline)",
            self.0.len()
        )
    }
}

impl StepOutcome for String {
    fn describe(&self) -> String {
        self.clone()
    }
}

impl StepOutcome for Documented {
    fn describe(&self) -> String {
        self.summary()
    }
}

/// docker-compose.yml under the journey's project name, with the demo's profile (and the
/// settings of the `.env` the documented demo writes).
struct Compose {
    program: Vec<String>,
    workspace: PathBuf,
    profiles: Vec<&'static str>,
}

impl Compose {
    /// Compose v2 (`docker compose`) when the Docker client has it, else v1 (`docker-compose`).
    fn new(workspace: &Path) -> Result<Self> {
        let v2 = Command::new("docker")
            .args(["compose", "version"])
            .output()
            .is_ok_and(|output| output.status.success());
        let program = if v2 {
            vec!["docker".to_owned(), "compose".to_owned()]
        } else {
            crate::process::require("docker-compose", "docker-compose")?;
            vec!["docker-compose".to_owned()]
        };
        Ok(Self {
            program,
            workspace: workspace.to_owned(),
            profiles: vec!["demo"],
        })
    }

    fn with_profile(&self, profile: &'static str) -> Self {
        let mut profiles = self.profiles.clone();
        profiles.push(profile);
        Self {
            program: self.program.clone(),
            workspace: self.workspace.clone(),
            profiles,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let (program, first) = self
            .program
            .split_first()
            .map_or(("docker-compose", &[][..]), |(p, rest)| (p.as_str(), rest));
        let mut command = Command::new(program);
        command.args(first).current_dir(&self.workspace);
        for profile in &self.profiles {
            command.args(["--profile", profile]);
        }
        command
            .args(args)
            .envs(Self::environment())
            .stdin(Stdio::null());
        command
    }

    /// What every compose command of the journey runs with, the documented ones too: the
    /// project's name, and the sim a little way off (each page 100 ms), so that a cold request
    /// stays in flight long enough to be interrupted by a signal.
    fn environment() -> Vec<(&'static str, String)> {
        vec![
            ("COMPOSE_PROJECT_NAME", PROJECT.to_owned()),
            ("CALLSTATS_SIM_LATENCY_MS", SIM_LATENCY_MS.to_owned()),
        ]
    }

    /// The documented compose commands, run with `docker compose` as written: where this
    /// machine has only Compose v1, a `docker` first on their `PATH` sends `docker compose …`
    /// to `docker-compose` and everything else to the real client.
    fn documented(&self, workspace: &Path) -> Result<Documented> {
        let shim = if self.program.len() == 2 {
            None
        } else {
            let real = Command::new("sh")
                .args(["-c", "command -v docker"])
                .output()
                .context("cannot find the docker client")?;
            let real = String::from_utf8_lossy(&real.stdout).trim().to_owned();
            if real.is_empty() {
                bail!("no docker client on the PATH");
            }
            let dir = target_dir().join("compose-journey").join("bin");
            std::fs::create_dir_all(&dir)?;
            let docker = dir.join("docker");
            std::fs::write(
                &docker,
                format!(
                    "#!/bin/sh\n# `docker compose` as Compose v1, on a machine without the v2 plugin.\n\
                     if [ \"$1\" = compose ]; then shift; exec docker-compose \"$@\"; fi\n\
                     exec {real} \"$@\"\n"
                ),
            )?;
            let mut permissions = std::fs::metadata(&docker)?.permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
            std::fs::set_permissions(&docker, permissions)?;
            Some(dir)
        };
        Documented::read(workspace, shim.as_deref(), Self::environment())
    }

    /// The exit code of `service`'s one-shot container once it has exited (within `within`).
    fn exit_code(&self, service: &str, within: Duration) -> Result<String> {
        let mut code = String::new();
        wait_until(within, || {
            // `-a`: Compose v2 lists running containers only without it.
            let id = self.output(&["ps", "-a", "-q", service])?.stdout;
            let id = String::from_utf8_lossy(&id).trim().to_owned();
            let output = Command::new("docker")
                .args([
                    "inspect",
                    "-f",
                    "{{.State.Status}} {{.State.ExitCode}}",
                    &id,
                ])
                .output()?;
            let state = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            Ok(match state.strip_prefix("exited ") {
                Some(exited) => {
                    exited.clone_into(&mut code);
                    true
                }
                None => false,
            })
        })
        .with_context(|| format!("{service} did not exit"))?;
        Ok(code)
    }

    fn output(&self, args: &[&str]) -> Result<Output> {
        self.command(args)
            .output()
            .with_context(|| format!("cannot run {:?}", self.program))
    }

    fn succeed(&self, args: &[&str]) -> Result<()> {
        let output = self.output(args)?;
        if !output.status.success() {
            bail!(
                "`compose {}` failed with {}: {}",
                args.join(" "),
                output.status,
                tail(&output.stderr)
            );
        }
        Ok(())
    }

    /// Everything of the project gone, its volumes too (a failed earlier run's included).
    fn down_with_volumes(&self) {
        let _ =
            self.with_profile("observability")
                .output(&["down", "--volumes", "--remove-orphans"]);
    }

    fn container(&self, service: &str) -> Result<String> {
        let output = self.output(&["ps", "-q", service])?;
        let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if id.is_empty() {
            bail!("no container for {service}");
        }
        Ok(id)
    }

    /// Waits until each service's container reports its health check healthy.
    fn wait_healthy(&self, services: &[&str], within: Duration) -> Result<()> {
        for service in services {
            wait_until(within, || {
                let id = self.container(service)?;
                let output = Command::new("docker")
                    .args(["inspect", "-f", "{{.State.Health.Status}}", &id])
                    .output()?;
                Ok(String::from_utf8_lossy(&output.stdout).trim() == "healthy")
            })
            .with_context(|| format!("{service} is not healthy"))?;
        }
        Ok(())
    }

    /// Whether every line `service` logged is a JSON object (the replicas' format).
    fn logs_are_json(&self, service: &str) -> Result<String> {
        let output = self.output(&["logs", "--no-color", "--no-log-prefix", service])?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let lines: Vec<&str> = text
            .lines()
            // Compose v1 heads the output with `Attaching to …`, a line of its own.
            .filter(|line| !line.trim().is_empty() && !line.starts_with("Attaching to "))
            .collect();
        if lines.is_empty() {
            bail!("{service} logged nothing");
        }
        if let Some(line) = lines.iter().find(|line| {
            serde_json::from_str::<serde_json::Value>(line).map_or(true, |v| !v.is_object())
        }) {
            bail!("{service} logged a line that is not JSON: {line}");
        }
        Ok(format!("{} lines", lines.len()))
    }
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .skip(lines.len().saturating_sub(5))
        .copied()
        .collect::<Vec<_>>()
        .join(" / ")
}

fn image_exists(name: &str) -> bool {
    Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", name])
        .output()
        .is_ok_and(|output| output.status.success())
}

fn label_of(image: &str) -> Option<String> {
    let output = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            &format!("{{{{index .Config.Labels \"{STAND_IN_LABEL}\"}}}}"),
            image,
        ])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Builds the stand-ins whose inputs changed, or that are missing; an image of the same name
/// that is not a stand-in (a real one, pulled by someone) is left alone.
fn stand_ins(workspace: &Path) -> Result<String> {
    let root = target_dir().join("stand-ins");
    std::fs::create_dir_all(&root).context("cannot create the stand-ins' directory")?;
    let mut built = Vec::new();
    let base_print = fingerprint(&[b"debootstrap --variant=minbase bookworm".as_slice()]);
    if needs_stand_in(BASE, &base_print) {
        crate::process::require("debootstrap", "debootstrap")?;
        let rootfs = root.join("rootfs");
        let _ = std::fs::remove_dir_all(&rootfs);
        let status = Command::new("debootstrap")
            .args(["--variant=minbase", "bookworm"])
            .arg(&rootfs)
            .arg("http://deb.debian.org/debian")
            .stdout(Stdio::null())
            .status()
            .context("cannot run debootstrap")?;
        if !status.success() {
            bail!("debootstrap failed with {status}");
        }
        let tar = Command::new("tar")
            .arg("-C")
            .arg(&rootfs)
            .args(["-c", "."])
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot run tar")?;
        let imported = Command::new("docker")
            .args([
                "import",
                "--change",
                "CMD [\"bash\"]",
                "--change",
                &format!("LABEL {STAND_IN_LABEL}={base_print}"),
                "-",
                BASE,
            ])
            .stdin(tar.stdout.context("tar has no output")?)
            .stdout(Stdio::null())
            .status()
            .context("cannot run docker import")?;
        let _ = std::fs::remove_dir_all(&rootfs);
        if !imported.success() {
            bail!("docker import of the debootstrap base failed");
        }
        built.push(BASE);
    }
    for (image, folder) in STAND_INS {
        let source = workspace.join("deploy/stand-ins").join(folder);
        let mut inputs = Vec::new();
        for entry in std::fs::read_dir(&source)
            .with_context(|| format!("cannot read {}", source.display()))?
        {
            let path = entry?.path();
            inputs.push(std::fs::read(&path)?);
        }
        inputs.sort();
        let context = if folder == "rust" {
            let version = Command::new("rustc").arg("--version").output()?.stdout;
            inputs.push(version);
            root.join("rust-context")
        } else {
            source.clone()
        };
        let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let print = fingerprint(&inputs);
        if !needs_stand_in(image, &print) {
            continue;
        }
        if folder == "rust" {
            rust_context(&source, &context)?;
        }
        let status = Command::new("docker")
            .args([
                "build",
                "--quiet",
                "--label",
                &format!("{STAND_IN_LABEL}={print}"),
                "--tag",
                image,
            ])
            .arg(&context)
            .env("DOCKER_BUILDKIT", "0")
            .stdout(Stdio::null())
            .status()
            .context("cannot run docker build")?;
        if folder == "rust" {
            let _ = std::fs::remove_dir_all(&context);
        }
        if !status.success() {
            bail!("the stand-in {image} did not build");
        }
        built.push(image);
    }
    Ok(if built.is_empty() {
        "all kept from an earlier run".to_owned()
    } else {
        format!("built {}", built.join(", "))
    })
}

/// Whether `image` is missing, or a stand-in made from other inputs than `print`.
fn needs_stand_in(image: &str, print: &str) -> bool {
    match label_of(image) {
        None => true,
        // A real image (no label of ours): never replaced.
        Some(label) if label.is_empty() || label == "<no value>" => false,
        Some(label) => label != print,
    }
}

/// A short digest of the inputs a stand-in is built from (stable for one build of xtask, which
/// is all a cache on one machine needs).
fn fingerprint(inputs: &[&[u8]]) -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    inputs.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// The Rust stand-in's build context: its Dockerfile, this machine's toolchain (the sysroot's
/// bin, lib and libexec; no documentation) and its CA bundle.
fn rust_context(source: &Path, context: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(context);
    std::fs::create_dir_all(context.join("toolchain"))?;
    std::fs::copy(source.join("Dockerfile"), context.join("Dockerfile"))?;
    std::fs::copy(
        "/etc/ssl/certs/ca-certificates.crt",
        context.join("ca-certificates.crt"),
    )
    .context("cannot copy the machine's CA bundle")?;
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()?
        .stdout;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot).trim());
    for part in ["bin", "lib", "libexec"] {
        let status = Command::new("cp")
            .arg("-a")
            .arg(sysroot.join(part))
            .arg(context.join("toolchain"))
            .status()?;
        if !status.success() {
            bail!("cannot copy the toolchain's {part}");
        }
    }
    Ok(())
}

/// Size of the image, its user, and whether its binary is stripped; and what the build left
/// behind (untagged images).
fn image_facts(image: &str, since: &str) -> Result<String> {
    let inspect = |format: &str| -> Result<String> {
        let output = Command::new("docker")
            .args(["image", "inspect", "--format", format, image])
            .output()?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let size: u64 = inspect("{{.Size}}")?.parse().context("no image size")?;
    let uid = Command::new("docker")
        .args(["run", "--rm", "--entrypoint", "id", image, "-u"])
        .output()?;
    let uid = String::from_utf8_lossy(&uid.stdout).trim().to_owned();
    if uid != "10001" {
        bail!("the image runs as uid {uid:?}, not 10001");
    }
    let binary = target_dir().join("compose-callstats");
    let created = Command::new("docker").args(["create", image]).output()?;
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    let copied = Command::new("docker")
        .args(["cp", &format!("{id}:/usr/local/bin/callstats")])
        .arg(&binary)
        .status()?;
    let _ = Command::new("docker").args(["rm", &id]).output();
    if !copied.success() {
        bail!("cannot copy the binary out of the image");
    }
    let sections = Command::new("readelf").arg("-S").arg(&binary).output()?;
    let binary_size = std::fs::metadata(&binary)?.len();
    let _ = std::fs::remove_file(&binary);
    let sections = String::from_utf8_lossy(&sections.stdout);
    if sections.contains(".symtab") || sections.contains(".debug_") {
        bail!("the binary keeps its symbols or debug information");
    }
    // What this build left behind: untagged images made since it began (the build stage, whose
    // size counts the Rust image it starts from too).
    let dangling = Command::new("docker")
        .args([
            "images",
            "--filter",
            "dangling=true",
            "--format",
            "{{.CreatedAt}}\t{{.Size}}",
        ])
        .output()?;
    let dangling: Vec<String> = String::from_utf8_lossy(&dangling.stdout)
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .filter(|(created, _)| *created >= since)
        .map(|(_, size)| size.to_owned())
        .collect();
    Ok(format!(
        "image {} MB, binary {} MB stripped, uid 10001; untagged images this build left: {}",
        size / 1_000_000,
        binary_size / 1_000_000,
        if dangling.is_empty() {
            "none".to_owned()
        } else {
            dangling.join(", ")
        }
    ))
}

/// Now, as `docker images` writes a creation time (`2026-11-26 11:41:22 +0000 UTC`), so that
/// the two compare as strings.
fn docker_now() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} +0000 UTC",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

/// The Dockerfile through BuildKit: `docker buildx build` where the client has buildx, else a
/// client from before Docker 23 with `DOCKER_BUILDKIT=1` (Debian's `docker.io`), which has
/// BuildKit built in.
fn buildkit_build(workspace: &Path) -> Result<String> {
    let buildx = Command::new("docker")
        .args(["buildx", "version"])
        .output()
        .is_ok_and(|output| output.status.success());
    let mut command = if buildx {
        let mut command = Command::new("docker");
        command.args(["buildx", "build", "--load"]);
        command
    } else {
        let client = ["/usr/bin/docker", "docker"]
            .into_iter()
            .find(|client| {
                Command::new(client)
                    .args(["version", "--format", "{{.Client.Version}}"])
                    .output()
                    .ok()
                    .and_then(|output| {
                        let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
                        version.split('.').next()?.parse::<u32>().ok()
                    })
                    .is_some_and(|major| major < 23)
            })
            .context("no Docker client with BuildKit: install buildx, or Debian's docker.io")?;
        let mut command = Command::new(client);
        command.arg("build").env("DOCKER_BUILDKIT", "1");
        command
    };
    let output = command
        .args(["--progress", "plain", "--tag", "callstats:buildkit", "."])
        .current_dir(workspace)
        .output()
        .context("cannot run the BuildKit build")?;
    if !output.status.success() {
        bail!("the BuildKit build failed: {}", tail(&output.stderr));
    }
    let version = Command::new("docker")
        .args(["run", "--rm", "callstats:buildkit", "--version"])
        .output()?;
    let _ = Command::new("docker")
        .args(["rmi", "callstats:buildkit"])
        .output();
    if !version.status.success() {
        bail!("the BuildKit image does not run");
    }
    Ok(format!(
        "built with {}; it runs: {}",
        if buildx {
            "buildx"
        } else {
            "DOCKER_BUILDKIT=1"
        },
        String::from_utf8_lossy(&version.stdout).trim()
    ))
}

fn issue_key(compose: &Compose, name: &str) -> Result<Key> {
    let output = compose.output(&[
        "exec",
        "-T",
        "api1",
        "callstats",
        "keys",
        "create",
        "--name",
        name,
        "--scopes",
        ALL_SCOPES,
        "--rate-limit",
        "100000",
    ])?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!("keys create failed: {}", tail(&output.stderr));
    }
    // The key alone on one line, with nothing else (no carriage return, no message).
    let key = stdout.strip_suffix('\n').unwrap_or(&stdout);
    if !key.starts_with("cs_") || key.len() != 46 || key.contains(['\r', '\n', ' ']) {
        bail!("stdout is not the key alone: {} bytes", stdout.len());
    }
    Ok(Key(key.to_owned()))
}

/// One answer: its status, the headers the journey reads, its body.
struct Answer {
    status: u16,
    cache: String,
    request_id: String,
    retry_after: String,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_slice(&self.body).context("the body is not JSON")
    }

    fn error(&self) -> String {
        self.json()
            .ok()
            .and_then(|body| body.pointer("/error")?.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

fn ask(agent: &ureq::Agent, path: &str, key: &str) -> Result<Answer> {
    let (status, headers, body) = crate::process::get_from(agent, LB, path, key)?;
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    Ok(Answer {
        status,
        cache: header("x-cache"),
        request_id: header("x-request-id"),
        retry_after: header("retry-after"),
        body,
    })
}

fn wait_until(within: Duration, mut ready: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + within;
    let mut last = None;
    while Instant::now() < deadline {
        match ready() {
            Ok(true) => return Ok(()),
            Ok(false) => last = None,
            Err(err) => last = Some(err),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    match last {
        Some(err) => Err(err.context(format!("not ready after {} s", within.as_secs()))),
        None => bail!("not ready after {} s", within.as_secs()),
    }
}

fn every_endpoint(agent: &ureq::Agent, key: &str, today: Day) -> Result<String> {
    let months = ask(agent, "/api/v1/kpi/months", key)?.json()?;
    let month = months
        .pointer("/sheets/0/month")
        .and_then(|month| month.as_str())
        .context("no KPI sheet in the demo")?
        .to_owned();
    let start = today.plus_days(-6).unwrap_or(today);
    let this_month = today.to_string().get(..7).unwrap_or_default().to_owned();
    let paths = [
        "/api/v1/openapi.json".to_owned(),
        "/api/v1/ping".to_owned(),
        format!("/api/v1/calls/summary?start={today}"),
        format!("/api/v1/calls/summary?start={start}&end={today}&direction=outbound"),
        format!("/api/v1/calls/agents?start={start}&end={today}"),
        "/api/v1/kpi/months".to_owned(),
        format!("/api/v1/kpi/{month}"),
        "/api/v1/operators".to_owned(),
        format!("/api/v1/schedule?month={this_month}"),
        "/api/v1/scripts/stats?limit=5".to_owned(),
    ];
    for path in &paths {
        let answer = ask(agent, path, key)?;
        if answer.status != 200 {
            bail!("{path}: {} {}", answer.status, answer.error());
        }
    }
    Ok(format!("{} paths", paths.len()))
}

fn hit_from_the_other_replica(compose: &Compose, agent: &ureq::Agent, key: &str) -> Result<String> {
    // A path no step asked before: its first answer is a miss, computed by one replica.
    let path = "/api/v1/scripts/stats?limit=7";
    let answers = (0..8)
        .map(|_| ask(agent, path, key))
        .collect::<Result<Vec<_>>>()?;
    let first = answers.first().context("no answer")?;
    if first.cache != "MISS" {
        bail!("the first answer was {}, not MISS", first.cache);
    }
    // Request ids tell nothing of the process (docs/security.md), so the replica that answered
    // is the upstream nginx logged beside the replica's request id.
    let mut replicas = Vec::new();
    let _ = wait_until(Duration::from_secs(10), || {
        let logs = compose.output(&["logs", "--no-color", "--no-log-prefix", "lb"])?;
        let logs = String::from_utf8_lossy(&logs.stdout).into_owned();
        replicas = answers
            .iter()
            .map(|answer| upstream_of(&logs, &answer.request_id))
            .collect();
        Ok(replicas.iter().all(Option::is_some))
    });
    let Some(Some(first_replica)) = replicas.first() else {
        bail!("nginx logged no replica for request {}", first.request_id);
    };
    for (answer, replica) in answers.iter().zip(&replicas).skip(1) {
        let Some(replica) = replica else { continue };
        if replica != first_replica {
            if answer.cache != "HIT" || answer.body != first.body {
                bail!(
                    "the other replica answered {} (or other bytes)",
                    answer.cache
                );
            }
            return Ok(format!("MISS from {first_replica}, HIT from {replica}"));
        }
    }
    bail!("every answer came from one replica: {replicas:?}")
}

/// The replica nginx's access log names for the replica's request id `id`.
fn upstream_of(logs: &str, id: &str) -> Option<String> {
    let needle = format!("\"replica_request_id\":\"{id}\"");
    let line = logs.lines().find(|line| line.contains(&needle))?;
    let entry: serde_json::Value = serde_json::from_str(line.get(line.find('{')?..)?).ok()?;
    entry.get("upstream_addr")?.as_str().map(str::to_owned)
}

/// Statuses of `rounds` rounds of `paths`.
fn statuses_of(
    agent: &ureq::Agent,
    key: &str,
    paths: &[String],
    rounds: usize,
) -> BTreeMap<u16, u32> {
    let mut statuses = BTreeMap::new();
    for _ in 0..rounds {
        for path in paths {
            let status = ask(agent, path, key).map_or(0, |answer| answer.status);
            *statuses.entry(status).or_insert(0) += 1;
        }
    }
    statuses
}

/// Asks `paths` in a loop from another thread while `act` runs, then checks the statuses
/// (0 for a request that got no answer at all).
fn under_load(
    key: &str,
    paths: &[String],
    acceptable: impl Fn(&BTreeMap<u16, u32>) -> bool,
    act: impl FnOnce() -> Result<()>,
) -> Result<String> {
    let stop = Arc::new(AtomicBool::new(false));
    let looping = {
        let stop = Arc::clone(&stop);
        let key = key.to_owned();
        let paths = paths.to_vec();
        std::thread::spawn(move || {
            let agent = crate::process::agent();
            let mut statuses = BTreeMap::new();
            let mut slowest = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                for path in &paths {
                    let started = Instant::now();
                    let status = ask(&agent, path, &key).map_or(0, |answer| answer.status);
                    slowest = slowest.max(started.elapsed());
                    *statuses.entry(status).or_insert(0_u32) += 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            (statuses, slowest)
        })
    };
    std::thread::sleep(Duration::from_secs(1));
    let acted = act();
    stop.store(true, Ordering::Relaxed);
    let (statuses, slowest) = looping
        .join()
        .map_err(|_| anyhow::anyhow!("the request loop panicked"))?;
    acted?;
    let summary = format!(
        "{} requests, statuses {statuses:?}, slowest {}",
        statuses.values().sum::<u32>(),
        seconds(slowest)
    );
    if !acceptable(&statuses) {
        bail!("{summary}");
    }
    Ok(summary)
}

/// `GET /api/v1/calls/live` with `Accept: text/event-stream` through nginx, read as a browser's
/// `EventSource` reads it.
struct EventStream {
    /// The answer's `X-Request-Id`, which the replica's log line names.
    request_id: String,
    source: EventSource<std::io::BufReader<ureq::BodyReader<'static>>>,
}

impl EventStream {
    /// No bound on the whole exchange (a stream stays open), but on each read: 30 s is three
    /// heartbeats missed.
    fn agent() -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_recv_response(Some(Duration::from_secs(20)))
            .timeout_per_read(Some(Duration::from_secs(30)))
            .build()
            .into()
    }

    /// Opens the stream (with `Last-Event-ID` when there is one): an error unless it is one.
    fn open(agent: &ureq::Agent, key: &str, last_id: Option<&str>) -> Result<Self> {
        let mut request = agent
            .get(format!("http://{LB}{LIVE}"))
            .header("Authorization", format!("Bearer {key}"))
            .header("Accept", "text/event-stream");
        if let Some(id) = last_id {
            request = request.header("Last-Event-ID", id);
        }
        let answer = request
            .call()
            .with_context(|| format!("GET {LIVE} failed"))?;
        let header = |name: &str| {
            answer
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let (status, content_type, request_id) = (
            answer.status().as_u16(),
            header("content-type"),
            header("x-request-id"),
        );
        let mut body = answer.into_body();
        if status != 200 {
            let error = body.read_to_string().unwrap_or_default();
            bail!("{LIVE} answered {status}: {}", tail(error.as_bytes()));
        }
        if content_type != "text/event-stream" {
            bail!("{LIVE} answered {content_type:?}, not text/event-stream");
        }
        let reader = body.into_with_config().limit(16 << 20).reader();
        Ok(Self {
            request_id,
            source: EventSource::new(std::io::BufReader::new(reader)),
        })
    }

    /// The next block; an error when the stream ends or fails first.
    fn next_block(&mut self) -> Result<Block> {
        match self.source.next_block() {
            Ok(Some(block)) => Ok(block),
            Ok(None) => bail!("the stream ended"),
            Err(err) => Err(anyhow::Error::new(err).context("the stream failed")),
        }
    }

    /// The next event `live` (its id, after checking its data are the figures), by `deadline`
    /// (checked at each block: the heartbeat comes every 10 s).
    fn next_live(&mut self, deadline: Instant) -> Result<String> {
        loop {
            if let Block::Event { name, data, id } = self.next_block()?
                && name == "live"
            {
                let figures: serde_json::Value = serde_json::from_str(&data)
                    .context("an event `live` whose data is not JSON")?;
                if !figures
                    .get("totals")
                    .is_some_and(serde_json::Value::is_object)
                {
                    let start: String = data.chars().take(200).collect();
                    bail!("an event `live` without `totals`: {start}");
                }
                return Ok(id.unwrap_or_default());
            }
            if Instant::now() > deadline {
                bail!("no event `live` by the deadline");
            }
        }
    }
}

/// The replica whose log names request `id` (a replica logs a request when its answer starts,
/// a stream's when it opens).
fn replica_of(compose: &Compose, id: &str) -> Result<&'static str> {
    if id.is_empty() {
        bail!("an answer without X-Request-Id");
    }
    let mut found = None;
    wait_until(Duration::from_secs(10), || {
        for replica in ["api1", "api2"] {
            let logs = compose.output(&["logs", "--no-color", replica])?;
            if String::from_utf8_lossy(&logs.stdout).contains(id) {
                found = Some(replica);
                return Ok(true);
            }
        }
        Ok(false)
    })
    .with_context(|| format!("neither replica logged request {id}"))?;
    found.with_context(|| format!("neither replica logged request {id}"))
}

/// A live stream's client, as a browser's `EventSource` is one: opened through nginx on api1,
/// then read on a thread of its own while api1 is stopped; when the stream ends it waits the
/// stream's `retry:` and reconnects with `Last-Event-ID`.
struct LiveClient {
    /// How the stream on api1 was found.
    opened: String,
    /// When `stop api1` began (set by the step that stops it).
    api1_stopped: Arc<OnceLock<Instant>>,
    client: std::thread::JoinHandle<Result<Reconnected>>,
}

/// What the client saw from its first event on.
struct Reconnected {
    /// Events `live` read on api1 after the first, and how the stream ended.
    before_end: usize,
    ended: Instant,
    why: String,
    /// The `Last-Event-ID` sent, the attempts made, and when the one that opened was made.
    last_id: String,
    attempts: u32,
    reconnected: Instant,
    /// The new stream's request id, and its first event `live`: its id and when it came.
    request_id: String,
    event_id: String,
    event_at: Instant,
}

impl LiveClient {
    fn open(compose: &Compose, key: &str, api1_stopped: Arc<OnceLock<Instant>>) -> Result<Self> {
        let agent = EventStream::agent();
        // Round robin puts one of two streams opened in a row on api1; one on api2 is closed.
        let mut on_api2 = 0;
        let (stream, first_id) = loop {
            let mut stream = EventStream::open(&agent, key, None)?;
            let first_id = stream.next_live(Instant::now() + Duration::from_secs(10))?;
            if stream.source.retry != Some(LIVE_RETRY) {
                bail!(
                    "the stream's retry is {:?}, not {} ms",
                    stream.source.retry,
                    LIVE_RETRY.as_millis()
                );
            }
            if replica_of(compose, &stream.request_id)? == "api1" {
                break (stream, first_id);
            }
            on_api2 += 1;
            if on_api2 == 3 {
                bail!("three streams in a row on api2, none on api1");
            }
        };
        let opened = format!(
            "a stream on api1 (after {on_api2} on api2), `retry: 5000`, an event `live` at once (id {first_id})"
        );
        let client = {
            let key = key.to_owned();
            let api1_stopped = Arc::clone(&api1_stopped);
            std::thread::spawn(move || follow_live(&agent, &key, stream, &api1_stopped))
        };
        Ok(Self {
            opened,
            api1_stopped,
            client,
        })
    }
}

/// The client's thread: reads the stream until it ends (api1 stopped), then after its `retry:`
/// reconnects with `Last-Event-ID` (again after each failure) until an event `live` comes.
fn follow_live(
    agent: &ureq::Agent,
    key: &str,
    mut stream: EventStream,
    api1_stopped: &OnceLock<Instant>,
) -> Result<Reconnected> {
    let opened = Instant::now();
    let mut before_end = 0;
    let why = loop {
        match stream.next_block() {
            Ok(Block::Event { name, .. }) if name == "live" => before_end += 1,
            Ok(_) => {}
            Err(err) => break format!("{err:#}"),
        }
        // A stream that outlives the stop (the heartbeat keeps it read), or a stop that never
        // comes.
        match api1_stopped.get() {
            Some(stop) if stop.elapsed() > LIVE_BACK_WITHIN => bail!(
                "the stream on api1 was still open {} after `stop api1` began",
                seconds(stop.elapsed())
            ),
            None if opened.elapsed() > Duration::from_secs(300) => {
                bail!("api1 was not stopped within 300 s")
            }
            _ => {}
        }
    };
    let ended = Instant::now();
    let Some(&stop) = api1_stopped.get() else {
        bail!("the stream on api1 ended before api1 was stopped: {why}");
    };
    let retry = stream.source.retry.unwrap_or(LIVE_RETRY);
    let last_id = stream
        .source
        .last_id
        .clone()
        .context("no `id:` read before the stream ended")?;
    drop(stream);
    let mut failures = Vec::new();
    loop {
        std::thread::sleep(retry);
        let reconnected = Instant::now();
        let attempt = EventStream::open(agent, key, Some(&last_id)).and_then(|mut stream| {
            let event_id = stream.next_live(stop + LIVE_BACK_WITHIN)?;
            Ok((stream.request_id.clone(), event_id))
        });
        match attempt {
            Ok((request_id, event_id)) => {
                return Ok(Reconnected {
                    before_end,
                    ended,
                    why,
                    last_id,
                    attempts: u32::try_from(failures.len())
                        .unwrap_or(u32::MAX)
                        .saturating_add(1),
                    reconnected,
                    request_id,
                    event_id,
                    event_at: Instant::now(),
                });
            }
            Err(err) => failures.push(format!("{err:#}")),
        }
        if stop.elapsed() + retry > LIVE_BACK_WITHIN {
            bail!(
                "the stream ended {} after `stop api1` began ({why}); {} reconnections with \
                 Last-Event-ID {last_id} brought no event `live`: {}",
                seconds(ended.saturating_duration_since(stop)),
                failures.len(),
                failures.join("; ")
            );
        }
    }
}

/// What the live stream's client saw while api1 was stopped: its stream on api1 ended, it
/// reconnected after the stream's `retry:` with `Last-Event-ID`, through nginx to api2, and an
/// event `live` came within [`LIVE_BACK_WITHIN`] of the stop.
fn live_stream_goes_on(compose: &Compose, live: Result<LiveClient>) -> Result<String> {
    let live = live.context("no live stream could be opened on api1")?;
    let Some(&stop) = live.api1_stopped.get() else {
        bail!("{}; api1 was never stopped", live.opened);
    };
    let seen = live
        .client
        .join()
        .map_err(|_| anyhow::anyhow!("the stream's client panicked"))?
        .with_context(|| live.opened.clone())?;
    let replica = replica_of(compose, &seen.request_id)?;
    let summary = format!(
        "{}; {} more events `live` on it, then `{}` {} after `stop api1` began; reconnected {} \
         later with Last-Event-ID {} ({} attempt(s)), to {replica}: an event `live` (id {}) {} \
         after the stop",
        live.opened,
        seen.before_end,
        seen.why,
        seconds(seen.ended.saturating_duration_since(stop)),
        seconds(seen.reconnected.saturating_duration_since(seen.ended)),
        seen.last_id,
        seen.attempts,
        seen.event_id,
        seconds(seen.event_at.saturating_duration_since(stop)),
    );
    if replica != "api2" {
        bail!("{summary}: not api2");
    }
    if seen.event_at.saturating_duration_since(stop) > LIVE_BACK_WITHIN {
        bail!("{summary}: later than {} s", LIVE_BACK_WITHIN.as_secs());
    }
    Ok(summary)
}

/// Postgres stopped for 60 s under a request loop, as docs/operations.md's table says: an answer
/// cached just before (call statistics, kept 10 minutes) and the key seen just before keep
/// answering 200; an answer that needs the database is 503 `portal database unavailable` with
/// `Retry-After`; never a 429 (a key that could not be checked counts against no quota).
/// `/readyz` says why meanwhile, and the service answers again once Postgres is back.
fn postgres_stopped(
    compose: &Compose,
    agent: &ureq::Agent,
    key: &str,
    cached: &str,
) -> Result<String> {
    const OUTAGE: Duration = Duration::from_secs(60);
    // Both replicas have looked the key up and the answer is cached, just before the stop.
    for _ in 0..4 {
        ask(agent, cached, key)?;
    }
    compose.succeed(&["stop", "postgres"])?;
    let (mut held, mut needing) = (BTreeMap::new(), BTreeMap::new());
    let mut without_retry_after = 0;
    let started = Instant::now();
    // Answers no step asked for before (so never cached), each needing the portal database.
    let mut limit = 10;
    while started.elapsed() < OUTAGE {
        let answer = ask(agent, cached, key).map_or(0, |answer| answer.status);
        *held.entry(answer).or_insert(0_u32) += 1;
        limit = if limit >= 60 { 11 } else { limit + 1 };
        let path = format!("/api/v1/scripts/stats?limit={limit}");
        let (status, retry_after) = ask(agent, &path, key).map_or((0, false), |answer| {
            (answer.status, !answer.retry_after.is_empty())
        });
        *needing.entry(status).or_insert(0_u32) += 1;
        if status == 503 && !retry_after {
            without_retry_after += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let ready = compose.output(&[
        "exec",
        "-T",
        "api1",
        "curl",
        "-s",
        "-w",
        " %{http_code}",
        "http://127.0.0.1:8080/readyz",
    ])?;
    let ready = String::from_utf8_lossy(&ready.stdout).into_owned();
    compose.succeed(&["start", "postgres"])?;
    let restarted = Instant::now();
    wait_until(Duration::from_secs(60), || {
        Ok(ask(agent, "/api/v1/scripts/stats?limit=3", key)?.status == 200)
    })?;
    let back = restarted.elapsed();
    let summary = format!(
        "{} s down: cached {held:?}; needing the database {needing:?}, {without_retry_after} of \
         its 503s without Retry-After; 200 again {} after start",
        OUTAGE.as_secs(),
        seconds(back)
    );
    // A 429 on either would be a valid key held back by the anonymous quota.
    if held.keys().any(|status| *status != 200)
        || needing.keys().any(|status| *status != 503)
        || without_retry_after > 0
    {
        bail!("{summary}");
    }
    if !ready.contains("portal database unreachable") || !ready.ends_with(" 503") {
        bail!("{summary}; /readyz while the database was down: {ready}");
    }
    Ok(format!(
        "{summary}; /readyz 503 `portal database unreachable`"
    ))
}

/// The journey as the front proxy on the host: through the published port, nginx sees the
/// compose network's gateway, which deploy/nginx/real-ip.conf trusts to name the client in
/// `X-Forwarded-For`. Two clients so named, asking in turn without a key, get a quota each (the
/// 61st request of each is the 429), and nginx's access log names each.
fn front_names_the_client(compose: &Compose) -> Result<String> {
    let clients = ["198.51.100.1", "198.51.100.2"];
    let agent = crate::process::agent();
    // The quota counts per minute: the requests must fall in one.
    let second = time::OffsetDateTime::now_utc().second();
    if second > 40 {
        std::thread::sleep(Duration::from_secs(u64::from(61 - second)));
    }
    let mut statuses = vec![BTreeMap::new(); clients.len()];
    for _ in 0..=ANON_QUOTA {
        for (client, seen) in clients.iter().zip(&mut statuses) {
            let status = agent
                .get(format!("http://{LB}/api/v1/ping"))
                .header("X-Forwarded-For", *client)
                .call()
                .context("GET /api/v1/ping failed")?
                .status()
                .as_u16();
            *seen.entry(status).or_insert(0_usize) += 1;
        }
    }
    // Docker copies nginx's output into its log a moment later: the last lines may take a while.
    let mut logged = vec![0; clients.len()];
    let _ = wait_until(Duration::from_secs(10), || {
        let logs = compose.output(&["logs", "--no-color", "lb"])?;
        let logs = String::from_utf8_lossy(&logs.stdout).into_owned();
        for (client, count) in clients.iter().zip(&mut logged) {
            *count = logs
                .matches(&format!("\"remote_addr\":\"{client}\""))
                .count();
        }
        Ok(logged.iter().all(|count| *count > ANON_QUOTA))
    });
    let mut outcome = Vec::new();
    for ((client, seen), logged) in clients.iter().zip(&statuses).zip(&logged) {
        outcome.push(format!("{client}: {seen:?}, {logged} lines in nginx's log"));
        let expected = BTreeMap::from([(401, ANON_QUOTA), (429, 1)]);
        if *seen != expected || *logged != ANON_QUOTA + 1 {
            bail!("{}", outcome.join("; "));
        }
    }
    Ok(outcome.join("; "))
}

/// `docker kill` (SIGKILL from outside, as an operator or the OOM killer's reaper would): the
/// replica stays down, as `restart: unless-stopped` means, and the documented status shows it;
/// the documented `start` brings it back.
fn killed_replica_stays_down(compose: &Compose, documented: &Documented) -> Result<String> {
    let container = compose.container("api1")?;
    let killed = Command::new("docker").args(["kill", &container]).output()?;
    if !killed.status.success() {
        bail!("docker kill failed: {}", tail(&killed.stderr));
    }
    std::thread::sleep(Duration::from_secs(5));
    let state = Command::new("docker")
        .args([
            "inspect",
            "-f",
            "{{.State.Status}} {{.State.ExitCode}}",
            &container,
        ])
        .output()?;
    let state = String::from_utf8_lossy(&state.stdout).trim().to_owned();
    if state != "exited 137" {
        bail!("5 s after docker kill, api1 is {state:?}, not `exited 137`");
    }
    let status = documented.run(documented::STATUS)?;
    let started = documented.run(documented::START_REPLICA)?;
    compose.wait_healthy(&["api1"], Duration::from_secs(60))?;
    Ok(format!(
        "after 5 s still {state}; status {status}; start {started}; healthy"
    ))
}

/// Both replicas stopped under a request loop, then started: nginx answers 503 with
/// `Retry-After` meanwhile; once both answer `/healthz` on their own addresses (asked from the
/// host), how many more 503s nginx gives, and how long after: replicas.conf leaves a failed
/// replica alone for 1 s, so within about that (2 s allowed, for a loaded machine).
fn both_replicas_return(compose: &Compose, key: &str) -> Result<String> {
    let stop = Arc::new(AtomicBool::new(false));
    let looping = {
        let stop = Arc::clone(&stop);
        let key = key.to_owned();
        std::thread::spawn(move || {
            let agent = crate::process::agent();
            let mut answers = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                let answer = ask(&agent, "/api/v1/ping", &key)
                    .map_or((0, String::new()), |answer| {
                        (answer.status, answer.retry_after)
                    });
                answers.push((sent, answer));
                std::thread::sleep(Duration::from_millis(20));
            }
            answers
        })
    };
    let acted = (|| -> Result<Instant> {
        compose.succeed(&["stop", "api1", "api2"])?;
        std::thread::sleep(Duration::from_secs(2));
        compose.succeed(&["start", "api1", "api2"])?;
        let direct = crate::process::agent();
        let mut returned = Instant::now();
        wait_until(Duration::from_secs(60), || {
            returned = Instant::now();
            Ok(REPLICAS.iter().all(|replica| {
                direct
                    .get(format!("http://{replica}/healthz"))
                    .call()
                    .is_ok_and(|answer| answer.status() == 200)
            }))
        })?;
        std::thread::sleep(Duration::from_secs(3));
        Ok(returned)
    })();
    stop.store(true, Ordering::Relaxed);
    let answers = looping
        .join()
        .map_err(|_| anyhow::anyhow!("the request loop panicked"))?;
    let returned = acted?;
    let (before, after): (Vec<_>, Vec<_>) = answers.iter().partition(|(sent, _)| *sent < returned);
    let unavailable = |answers: &[&(Instant, (u16, String))]| {
        answers
            .iter()
            .filter(|(_, (status, _))| *status == 503)
            .count()
    };
    let while_down = unavailable(&before);
    let without_retry_after = answers
        .iter()
        .filter(|(_, (status, retry_after))| *status == 503 && retry_after != LB_RETRY_AFTER)
        .count();
    let others: BTreeMap<u16, usize> = answers
        .iter()
        .filter(|(_, (status, _))| ![200, 503].contains(status))
        .fold(BTreeMap::new(), |mut counts, (_, (status, _))| {
            *counts.entry(*status).or_insert(0) += 1;
            counts
        });
    let last = after
        .iter()
        .filter(|(_, (status, _))| *status == 503)
        .map(|(sent, _)| sent.saturating_duration_since(returned))
        .max();
    let summary = format!(
        "{} requests; {while_down} × 503 while down (Retry-After: {LB_RETRY_AFTER} on all but \
         {without_retry_after}); after both answered /healthz: {} × 503{}, then {} × 200; \
         other statuses {others:?}",
        answers.len(),
        unavailable(&after),
        last.map_or(String::new(), |last| format!(
            ", the last {} after",
            seconds(last)
        )),
        after
            .iter()
            .filter(|(_, (status, _))| *status == 200)
            .count()
    );
    if while_down == 0 || without_retry_after > 0 || !others.is_empty() {
        bail!("{summary}");
    }
    if last.is_some_and(|last| last > Duration::from_secs(2)) {
        bail!("{summary}");
    }
    Ok(summary)
}

/// A replica started without the platform's URL (empty, as docker-compose.yml passes an unset
/// one) refuses to start, exit 2, and says which setting, where `docker compose logs` shows it.
fn refuses_without_the_platform(compose: &Compose) -> Result<String> {
    let output = compose.output(&[
        "run",
        "--rm",
        "--no-deps",
        "-T",
        "-e",
        "CALLSTATS_CALL_PLATFORM_URL=",
        "setup",
        "serve",
    ])?;
    let said = [output.stdout, output.stderr].concat();
    let said = String::from_utf8_lossy(&said);
    let line = said
        .lines()
        .find(|line| line.contains("CALLSTATS_CALL_PLATFORM_URL"))
        .unwrap_or_default()
        .trim()
        .to_owned();
    if output.status.code() != Some(2) || !line.contains("required") {
        bail!("exit {:?}: {}", output.status.code(), tail(said.as_bytes()));
    }
    Ok(format!("exit 2: {line}"))
}

/// Every container of the project logs through json-file with a size bound
/// (docker-compose.yml's `x-logging`).
fn logs_bounded(compose: &Compose) -> Result<String> {
    let ids = compose
        .with_profile("observability")
        .output(&["ps", "-a", "-q"])?;
    let ids = String::from_utf8_lossy(&ids.stdout).into_owned();
    let mut bounded = Vec::new();
    for id in ids.split_whitespace() {
        let config = Command::new("docker")
            .args([
                "inspect",
                "-f",
                "{{.Name}} {{.HostConfig.LogConfig.Type}} {{index .HostConfig.LogConfig.Config \"max-size\"}} {{index .HostConfig.LogConfig.Config \"max-file\"}}",
                id,
            ])
            .output()?;
        let config = String::from_utf8_lossy(&config.stdout).trim().to_owned();
        let mut fields = config.split(' ');
        let name = fields.next().unwrap_or_default().trim_start_matches('/');
        if fields.collect::<Vec<_>>() != ["json-file", "10m", "3"] {
            bail!("{config}: not json-file, 10m, 3");
        }
        bounded.push(name.to_owned());
    }
    if bounded.len() < 8 {
        bail!("only {} containers: {bounded:?}", bounded.len());
    }
    bounded.sort();
    Ok(format!(
        "{} containers, each json-file at most 3 × 10m: {}",
        bounded.len(),
        bounded.join(", ")
    ))
}

fn prometheus_healthy(agent: &ureq::Agent) -> Result<String> {
    let get = |path: &str| -> Result<serde_json::Value> {
        let mut answer = agent
            .get(format!("http://{PROMETHEUS}{path}"))
            .call()
            .with_context(|| format!("GET {path} from Prometheus failed"))?;
        let body = answer
            .body_mut()
            .read_to_vec()
            .context("no body from Prometheus")?;
        serde_json::from_slice(&body).context("Prometheus answered no JSON")
    };
    let mut outcome = String::new();
    wait_until(Duration::from_secs(90), || {
        let targets = get("/api/v1/targets")?;
        let active = targets
            .pointer("/data/activeTargets")
            .and_then(|t| t.as_array())
            .cloned()
            .unwrap_or_default();
        let up = active
            .iter()
            .filter(|t| t.pointer("/health").is_some_and(|h| h == "up"))
            .count();
        let groups = get("/api/v1/rules")?;
        let rules: Vec<serde_json::Value> = groups
            .pointer("/data/groups")
            .and_then(|g| g.as_array())
            .into_iter()
            .flatten()
            .flat_map(|group| {
                group
                    .pointer("/rules")
                    .and_then(|r| r.as_array())
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        let healthy = rules
            .iter()
            .filter(|rule| rule.pointer("/health").is_some_and(|h| h == "ok"))
            .count();
        outcome = format!(
            "{up} of {} targets up; {healthy} of {} rules healthy",
            active.len(),
            rules.len()
        );
        let nginx = get("/api/v1/query?query=nginx_up")?
            .pointer("/data/result/0/value/1")
            .and_then(|value| value.as_str())
            .unwrap_or_default()
            == "1";
        outcome.push_str(&format!("; nginx_up {}", u8::from(nginx)));
        Ok(active.len() == 3 && up == 3 && nginx && !rules.is_empty() && healthy == rules.len())
    })
    .with_context(|| outcome.clone())?;
    Ok(outcome)
}

fn sigterm_in_flight(compose: &Compose, key: &str, today: Day) -> Result<String> {
    // Cold windows (outside the warm days, inside the horizon), one a request: each takes the
    // replica a while to fetch from the sim. Two at once, so that round robin gives one to each
    // replica.
    let windows: Vec<String> = [200_i64, 240]
        .iter()
        .map(|back| {
            let end = today.plus_days(-back).unwrap_or(today);
            let start = end.plus_days(-30).unwrap_or(end);
            format!("/api/v1/calls/agents?start={start}&end={end}")
        })
        .collect();
    let asked: Vec<_> = windows
        .into_iter()
        .map(|path| {
            let key = key.to_owned();
            std::thread::spawn(move || {
                let agent = crate::process::agent();
                ask(&agent, &path, &key)
                    .map(|answer| (answer.status, answer.request_id, Instant::now()))
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    // The signal straight from the Docker client (compose's own start-up would delay it by a
    // second or so), then the wait for the container to exit.
    let container = compose.container("api1")?;
    let signalled = Instant::now();
    let killed = Command::new("docker")
        .args(["kill", "--signal", "TERM", &container])
        .output()?;
    if !killed.status.success() {
        bail!("docker kill failed: {}", tail(&killed.stderr));
    }
    let waited = Command::new("docker").args(["wait", &container]).output()?;
    let stopped_after = signalled.elapsed();
    let exit_code = String::from_utf8_lossy(&waited.stdout).trim().to_owned();
    let mut answers = Vec::new();
    for thread in asked {
        answers.push(
            thread
                .join()
                .map_err(|_| anyhow::anyhow!("a request thread panicked"))??,
        );
    }
    let logs = compose.output(&["logs", "--no-color", "api1"])?;
    let logs = String::from_utf8_lossy(&logs.stdout).into_owned();
    let (status, _, answered) = answers
        .iter()
        .find(|(_, id, _)| !id.is_empty() && logs.contains(id.as_str()))
        .context("neither request was answered by api1")?;
    if *status != 200 {
        bail!("api1 answered {status} after SIGTERM");
    }
    // Measured from when the signal was sent: on a busy machine the Docker client itself may
    // take longer to return than the drained request takes to finish.
    if *answered < signalled {
        bail!("api1 answered before the signal: nothing was in flight (a faster machine?)");
    }
    if exit_code != "0" {
        bail!("api1 exited with {exit_code} after SIGTERM");
    }
    Ok(format!(
        "api1 answered 200 {} after SIGTERM and exited (0) {} after it",
        seconds(answered.saturating_duration_since(signalled)),
        seconds(stopped_after)
    ))
}
