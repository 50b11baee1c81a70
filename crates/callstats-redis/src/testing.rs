//! Test support (feature `testing`): the shared test Redis from `CALLSTATS_TEST_REDIS_URL`,
//! key prefixes no other test uses, and private `redis-server` processes that a test can stop
//! and start again to take Redis away.
//!
//! Without `CALLSTATS_TEST_REDIS_URL` (or without a `redis-server` to start) a test prints a
//! notice and skips, unless `CALLSTATS_TEST_REQUIRE_SERVICES=1` (set by `.ci/run`), where it
//! fails instead.

#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "test support: a Redis that cannot be set up is a failed test"
)]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Where the tests find the shared Redis.
pub const REDIS_URL_VAR: &str = "CALLSTATS_TEST_REDIS_URL";
/// When `1`, tests that need a service fail rather than skip without it.
pub const REQUIRE_SERVICES_VAR: &str = "CALLSTATS_TEST_REQUIRE_SERVICES";

/// Whether the tests that need a service must fail rather than skip without it.
#[must_use]
pub fn services_required() -> bool {
    std::env::var(REQUIRE_SERVICES_VAR).is_ok_and(|v| v == "1")
}

/// The shared test Redis, or `None` (skip) when it is not configured and not required.
#[must_use]
pub fn shared_redis_url() -> Option<String> {
    match std::env::var(REDIS_URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if services_required() => {
            panic!("{REDIS_URL_VAR} is not set but {REQUIRE_SERVICES_VAR}=1")
        }
        _ => {
            eprintln!("skipped: set {REDIS_URL_VAR} to run the tests that need Redis");
            None
        }
    }
}

/// A plain connection to `url`, for checking what the adapters wrote.
pub async fn connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("a valid Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("a reachable Redis")
}

/// Asserts that Redis at `url` holds `key` with a lifetime left of at most `ttl_ms` (its
/// `PTTL`), so it is set to expire when the adapter said.
pub async fn assert_expires_within(url: &str, key: &str, ttl_ms: i64) {
    let ttl: i64 = redis::cmd("PTTL")
        .arg(key)
        .query_async(&mut connection(url).await)
        .await
        .expect("PTTL answered");
    assert!((1..=ttl_ms).contains(&ttl), "PTTL of {key}: {ttl}");
}

/// A key prefix no other test (or run) uses.
#[must_use]
pub fn unique_prefix(test: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "callstats-test:{}:{}:{test}:",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A `redis-server` of the test's own, on a free loopback port, stopped on drop.
pub struct PrivateRedis {
    port: u16,
    /// Required of every client (`--requirepass`), when set.
    password: Option<String>,
    /// Served over TLS only, with the distribution's self-signed certificate.
    tls: bool,
    child: Option<Child>,
}

/// The self-signed certificate Debian's ssl-cert package makes (Postgres uses it too).
const SNAKEOIL: (&str, &str) = (
    "/etc/ssl/certs/ssl-cert-snakeoil.pem",
    "/etc/ssl/private/ssl-cert-snakeoil.key",
);

impl PrivateRedis {
    /// Starts one, or `None` (skip) when `redis-server` cannot run and services are not
    /// required.
    #[must_use]
    pub fn start() -> Option<Self> {
        Self::start_with(None, false)
    }

    /// Starts one that refuses clients without `password`.
    #[must_use]
    pub fn start_with_password(password: &str) -> Option<Self> {
        Self::start_with(Some(password.to_owned()), false)
    }

    /// Starts one that speaks TLS only, with the self-signed certificate of Debian's ssl-cert
    /// package (the URL skips verifying it: `#insecure`).
    #[must_use]
    pub fn start_with_tls() -> Option<Self> {
        Self::start_with(None, true)
    }

    fn start_with(password: Option<String>, tls: bool) -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let mut redis = Self {
            port,
            password,
            tls,
            child: None,
        };
        redis.spawn()?;
        Some(redis)
    }

    /// Starts the server again on the same port (after [`stop`](Self::stop)), empty.
    pub fn spawn(&mut self) -> Option<()> {
        let mut command = Command::new("redis-server");
        let port = self.port.to_string();
        if self.tls {
            command.args([
                "--port",
                "0",
                "--tls-port",
                &port,
                "--tls-cert-file",
                SNAKEOIL.0,
                "--tls-key-file",
                SNAKEOIL.1,
                "--tls-auth-clients",
                "no",
            ]);
        } else {
            command.args(["--port", &port]);
        }
        command.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
        if let Some(password) = &self.password {
            command.args(["--requirepass", password]);
        }
        let spawned = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(err) if services_required() => panic!("cannot start redis-server: {err}"),
            Err(err) => {
                eprintln!("skipped: cannot start redis-server ({err})");
                return None;
            }
        };
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(())
    }

    /// `redis://127.0.0.1:PORT`, with `:PASSWORD@` when one is required.
    #[must_use]
    pub fn url(&self) -> String {
        match (&self.password, self.tls) {
            (_, true) => format!("rediss://127.0.0.1:{}/#insecure", self.port),
            (Some(password), false) => format!("redis://:{password}@127.0.0.1:{}", self.port),
            (None, false) => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// Kills the server: from now on connections are refused.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}
