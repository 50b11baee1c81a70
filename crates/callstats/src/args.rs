//! The settings the commands share (docs/command-line.md): the portal database and its pool,
//! and how the service listens, caches, counts and reaches the call platform. Every setting is
//! a `--flag` and a `CALLSTATS_*` variable; every default is the constant of the crate that uses
//! it, which `--help` shows.

use std::fmt;
use std::num::ParseIntError;
use std::str::FromStr;
use std::time::Duration;

use anyhow::anyhow;
use callstats_application::fair_queue::QueueSettings;
use callstats_application::live::LiveSettings;
use callstats_application::{
    BackfillSettings, CallDaySettings, ComputePool, Computing, WarmerSettings,
};
use callstats_callplatform::{BearerToken, HttpPlatformConfig};
use callstats_domain::limits::{
    DEFAULT_DAY_FETCHES_PER_MINUTE, DEFAULT_HISTORY_DAYS, DayBounds, DayBudget,
};
use callstats_domain::stats::{AggregateMinRows, PriorWeight};
use callstats_domain::use_cases::DEFAULT_ANON_RATE_LIMIT;
use callstats_redis::RedisSettings;
use callstats_store::Store;
use callstats_store::config::{
    Access, DEFAULT_CONNECT_TIMEOUT, DEFAULT_STATEMENT_TIMEOUT, DatabaseUrl, IfMissing, StoreConfig,
};
use callstats_web::ServerSettings;
use clap::{ArgAction, Args};

use crate::failure::Failure;
use crate::secret::Secret;

/// Default bound of the in-process response cache: some thousands of answers of a few KB for
/// their 1 to 10 minutes (docs/operations.md, "Memory").
const DEFAULT_CACHE_MIB: Mebibytes = Mebibytes(64);
/// `CALLSTATS_LIVE_POLL_MS`'s default, in milliseconds.
const DEFAULT_LIVE_POLL_MS: u64 = 2000;
/// Default bound of the in-process call days: the whole history horizon (400 days) of a centre
/// of 5,000 calls a weekday at 24 bytes a call, with room to spare (docs/operations.md).
const DEFAULT_CALL_DAY_CACHE_MIB: Mebibytes = Mebibytes(72);

/// Defines a setting that is a whole number of some unit: read and shown as that number.
macro_rules! whole_number_setting {
    ($(#[$doc:meta])* $name:ident($inner:ty), $from:expr, $to:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(pub $inner);

        impl FromStr for $name {
            type Err = ParseIntError;

            fn from_str(raw: &str) -> Result<Self, ParseIntError> {
                raw.parse::<u64>().map($from).map(Self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", $to(self.0))
            }
        }
    };
}

whole_number_setting!(
    /// A duration written as whole seconds.
    Seconds(Duration),
    Duration::from_secs,
    |d: Duration| d.as_secs()
);
whole_number_setting!(
    /// A duration written as whole milliseconds.
    Millis(Duration),
    Duration::from_millis,
    |d: Duration| d.as_millis()
);
whole_number_setting!(
    /// A size written in mebibytes.
    Mebibytes(u64),
    std::convert::identity,
    std::convert::identity
);

impl Mebibytes {
    #[must_use]
    pub const fn bytes(self) -> u64 {
        self.0.saturating_mul(1 << 20)
    }
}

/// The portal database of the admin commands (`migrate`, `seed`, `keys`) and `serve`.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// Portal database: sqlite://PATH (a file; created when missing, except by serve) or
    /// postgres://USER@HOST/DB.
    #[arg(
        long,
        env = "CALLSTATS_DATABASE_URL",
        hide_env_values = true,
        default_value = "sqlite://callstats.db",
        value_name = "URL"
    )]
    pub database_url: Secret,

    #[command(flatten)]
    pub pool: PoolArgs,
}

impl DatabaseArgs {
    /// A store that may write (migrations, seeding, keys), creating a missing SQLite file.
    pub fn open_admin(&self) -> Result<Store, Failure> {
        self.pool.open(
            self.database_url.expose(),
            Access::ReadWrite,
            IfMissing::Create,
        )
    }

    /// A store on a database that must exist (`serve`): a missing SQLite file is a
    /// configuration error, and is never created.
    pub fn open_existing(&self, access: Access) -> Result<Store, Failure> {
        self.pool
            .open(self.database_url.expose(), access, IfMissing::Fail)
    }
}

/// Pool bounds; the defaults suit a small server.
#[derive(Debug, Clone, Args)]
pub struct PoolArgs {
    /// Most database connections open at once [default: 8 for Postgres, 4 for SQLite].
    #[arg(long, env = "CALLSTATS_DB_POOL_SIZE", value_name = "N")]
    pub db_pool_size: Option<usize>,

    /// Seconds to wait for a database connection (connecting, or a free one from the pool).
    #[arg(
        long,
        env = "CALLSTATS_DB_CONNECT_TIMEOUT_SECS",
        default_value_t = Seconds(DEFAULT_CONNECT_TIMEOUT),
        value_name = "SECONDS"
    )]
    pub db_connect_timeout_secs: Seconds,

    /// Seconds one database statement may run.
    #[arg(
        long,
        env = "CALLSTATS_DB_STATEMENT_TIMEOUT_SECS",
        default_value_t = Seconds(DEFAULT_STATEMENT_TIMEOUT),
        value_name = "SECONDS"
    )]
    pub db_statement_timeout_secs: Seconds,
}

impl PoolArgs {
    /// Opens (without connecting) a store on `url`.
    pub fn open(&self, url: &str, access: Access, if_missing: IfMissing) -> Result<Store, Failure> {
        Store::open(&self.store_config(url, access, if_missing)?).map_err(Failure::config)
    }

    /// The store configuration for `url`; a URL or bound that cannot work, or a SQLite file
    /// that is missing and may not be created, is a configuration error (exit 2).
    pub fn store_config(
        &self,
        url: &str,
        access: Access,
        if_missing: IfMissing,
    ) -> Result<StoreConfig, Failure> {
        let url = DatabaseUrl::parse(url).map_err(Failure::config)?;
        if let DatabaseUrl::Sqlite(path) = &url
            && if_missing == IfMissing::Fail
            && !path.exists()
        {
            return Err(Failure::config(anyhow!(
                "no SQLite database at {}: serve never creates one; create it with `callstats migrate` (and load data with `callstats seed`)",
                path.display()
            )));
        }
        let (connect, statement) = (
            self.db_connect_timeout_secs.0,
            self.db_statement_timeout_secs.0,
        );
        if connect.is_zero() || statement.is_zero() {
            return Err(Failure::config(anyhow!(
                "database timeouts must be at least 1 second"
            )));
        }
        let defaults = StoreConfig::new(url, access);
        Ok(StoreConfig {
            if_missing,
            pool_size: self.db_pool_size.unwrap_or(defaults.pool_size),
            connect_timeout: connect,
            statement_timeout: statement,
            ..defaults
        })
    }
}

/// How the service listens, caches and counts (`serve`, `demo`).
#[derive(Debug, Clone, Args)]
pub struct ServiceArgs {
    /// Address to serve the API on.
    #[arg(
        long,
        env = "CALLSTATS_BIND",
        default_value = "127.0.0.1:8080",
        value_name = "ADDR"
    )]
    pub bind: String,

    /// Shared Redis for the response cache and quotas of several replicas (redis://HOST:PORT).
    /// Unset: both stay in this process.
    #[arg(
        long,
        env = "CALLSTATS_REDIS_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub redis_url: Option<Secret>,

    /// Prefix of every Redis key, so deployments sharing a Redis stay apart.
    #[arg(
        long,
        env = "CALLSTATS_REDIS_PREFIX",
        default_value = RedisSettings::DEFAULT_PREFIX,
        value_name = "PREFIX"
    )]
    pub redis_prefix: String,

    /// Weight C of the prior in the Bayesian checklist score.
    #[arg(
        long,
        env = "CALLSTATS_CHECKLIST_PRIOR_WEIGHT",
        default_value_t = PriorWeight::DEFAULT.get(),
        value_name = "C"
    )]
    pub checklist_prior_weight: f64,

    /// Fewest rows a KPI sheet needs for an aggregate-only key to see its distribution and
    /// ranks (5 recommended); below it such a key gets the totals alone. 1 hides nothing.
    #[arg(
        long,
        env = "CALLSTATS_KPI_AGGREGATE_MIN_ROWS",
        default_value_t = AggregateMinRows::DEFAULT.get(),
        value_name = "N"
    )]
    pub kpi_aggregate_min_rows: u32,

    /// Per-minute quota of each client IP for requests without a valid key.
    #[arg(long, env = "CALLSTATS_ANON_RATE_LIMIT", default_value_t = DEFAULT_ANON_RATE_LIMIT, value_name = "N")]
    pub anon_rate_limit: u32,

    /// Take the client IP from the first X-Forwarded-For hop (only behind a proxy that sets it).
    #[arg(long, env = "CALLSTATS_TRUST_PROXY", action = ArgAction::Set, default_value_t = false, value_name = "BOOL")]
    pub trust_proxy: bool,

    /// Serve Prometheus metrics on this address (GET /metrics); unset: no metrics endpoint.
    #[arg(long, env = "CALLSTATS_METRICS_BIND", value_name = "ADDR")]
    pub metrics_bind: Option<String>,

    /// Largest response body in mebibytes; a larger answer is a 503 (ask for a shorter period).
    #[arg(
        long,
        env = "CALLSTATS_MAX_BODY_MB",
        default_value_t = Mebibytes(Computing::DEFAULT_MAX_BODY_MIB),
        value_name = "MIB"
    )]
    pub max_body_mb: Mebibytes,

    /// Threads computing answers (statistics, JSON, compression) off the request threads, at
    /// most at once (0: one per core).
    #[arg(
        long,
        env = "CALLSTATS_COMPUTE_THREADS",
        default_value_t = 0,
        value_name = "N"
    )]
    pub compute_threads: usize,

    /// Most connections open at once; past it new ones wait in the listen backlog while the open
    /// ones are served. Kept below the process's file limit (raised toward it at start-up when it
    /// can be).
    #[arg(
        long,
        env = "CALLSTATS_MAX_CONNECTIONS",
        default_value_t = ServerSettings::DEFAULT_MAX_CONNECTIONS,
        value_name = "N"
    )]
    pub max_connections: usize,

    /// Worker threads serving requests (0: one per core).
    #[arg(long, env = "CALLSTATS_WORKERS", default_value_t = 0, value_name = "N")]
    pub workers: usize,

    /// Seconds in-flight requests may take to finish after SIGTERM.
    #[arg(
        long,
        env = "CALLSTATS_SHUTDOWN_TIMEOUT_SECS",
        default_value_t = Seconds(ServerSettings::DEFAULT_SHUTDOWN_TIMEOUT),
        value_name = "SECONDS"
    )]
    pub shutdown_timeout_secs: Seconds,

    /// Most mebibytes of response bodies kept by the in-process cache.
    #[arg(
        long,
        env = "CALLSTATS_CACHE_MAX_MB",
        default_value_t = DEFAULT_CACHE_MIB,
        value_name = "MIB"
    )]
    pub cache_max_mb: Mebibytes,

    /// Seconds after its end (Tashkent midnight) from which a day's calls are settled and kept
    /// for the call-day TTL; a day fetched before that (today) is kept for at most 60 seconds.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_SETTLE_SECS",
        default_value_t = Seconds(CallDaySettings::DEFAULT_SETTLE),
        value_name = "SECONDS"
    )]
    pub call_day_settle_secs: Seconds,

    /// Seconds a settled day's calls are kept before they are fetched again.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_TTL_SECS",
        default_value_t = Seconds(CallDaySettings::DEFAULT_TTL),
        value_name = "SECONDS"
    )]
    pub call_day_ttl_secs: Seconds,

    /// Days back from today (Tashkent, today included) whose calls may be asked for; a call
    /// period starting earlier is a 400. 0 turns the horizon off.
    #[arg(
        long,
        env = "CALLSTATS_CALL_HISTORY_DAYS",
        default_value_t = DEFAULT_HISTORY_DAYS,
        value_name = "DAYS"
    )]
    pub call_history_days: u32,

    /// Call days not held that one key's requests may make the service fetch per UTC clock
    /// minute (shared by every replica through Redis); over it: 429. 0 turns the budget off.
    #[arg(
        long,
        env = "CALLSTATS_KEY_DAY_FETCHES_PER_MINUTE",
        default_value_t = DEFAULT_DAY_FETCHES_PER_MINUTE,
        value_name = "DAYS"
    )]
    pub key_day_fetches_per_minute: u32,

    /// Most call days waiting for their fetch in this process, all keys together; a request
    /// whose days do not fit is answered 503 with Retry-After.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_QUEUE_DAYS",
        default_value_t = QueueSettings::DEFAULT_MAX_QUEUED_DAYS,
        value_name = "DAYS"
    )]
    pub call_day_queue_days: usize,

    /// Most call days waiting for their fetch in this process for one key.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_QUEUE_DAYS_PER_KEY",
        default_value_t = QueueSettings::DEFAULT_MAX_QUEUED_DAYS_PER_KEY,
        value_name = "DAYS"
    )]
    pub call_day_queue_days_per_key: usize,

    /// Days back from today (Tashkent, today included) that a background task keeps held
    /// before anyone asks, refreshing today every minute or sooner (with Redis, one replica
    /// for all); 0 turns it off.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_WARM_DAYS",
        default_value_t = WarmerSettings::DEFAULT_DAYS,
        value_name = "DAYS"
    )]
    pub call_day_warm_days: u32,

    /// Most mebibytes of call days kept in this process (also with Redis, which keeps them for
    /// every replica).
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_CACHE_MB",
        default_value_t = DEFAULT_CALL_DAY_CACHE_MIB,
        value_name = "MIB"
    )]
    pub call_day_cache_mb: Mebibytes,

    /// Keep settled call days in the service's database (table call_days), read back by every
    /// replica and after a restart; needs a database user that may write. false: memory and
    /// Redis only.
    #[arg(long, env = "CALLSTATS_CALL_DAY_PERSIST", action = ArgAction::Set, default_value_t = true, value_name = "BOOL")]
    pub call_day_persist: bool,

    /// Most call days a minute a background task fetches into the database to hold the whole
    /// history horizon, newest first, behind every key's request (with Redis, one replica for
    /// all); needs the days persisted. 0 turns it off.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_BACKFILL_PER_MINUTE",
        default_value_t = BackfillSettings::DEFAULT_PER_MINUTE,
        value_name = "DAYS"
    )]
    pub call_day_backfill_per_minute: u32,

    /// Least milliseconds between two polls of the call platform's /live for the whole
    /// deployment (with Redis, one replica polls for all); nothing is polled while nobody asks
    /// /calls/live or listens to its stream.
    #[arg(
        long,
        env = "CALLSTATS_LIVE_POLL_MS",
        default_value_t = DEFAULT_LIVE_POLL_MS,
        value_parser = clap::value_parser!(u64).range(100..=60_000),
        value_name = "MS"
    )]
    pub live_poll_ms: u64,

    /// Most open /calls/live streams one key may hold across the deployment; past it 429.
    #[arg(
        long,
        env = "CALLSTATS_LIVE_STREAMS_PER_KEY",
        default_value_t = LiveSettings::DEFAULT_STREAMS_PER_KEY,
        value_parser = clap::value_parser!(u32).range(1..=1000),
        value_name = "STREAMS"
    )]
    pub live_streams_per_key: u32,

    /// Days after its end during which a settled day is fetched again every call-day TTL;
    /// after them it is final and never fetched again.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_REVISION_DAYS",
        default_value_t = CallDaySettings::DEFAULT_REVISION_DAYS,
        value_name = "DAYS"
    )]
    pub call_day_revision_days: u32,

    /// Seconds past its lifetime a held day (today's last copy included) is still answered,
    /// marked stale, while fetching it again fails; 0 turns stale answers off.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_MAX_STALE_SECS",
        default_value_t = Seconds(CallDaySettings::DEFAULT_MAX_STALE),
        value_name = "SECONDS"
    )]
    pub call_day_max_stale_secs: Seconds,

    #[command(flatten)]
    pub platform: PlatformArgs,
}

impl ServiceArgs {
    pub fn prior_weight(&self) -> Result<PriorWeight, Failure> {
        PriorWeight::new(self.checklist_prior_weight).map_err(Failure::config)
    }

    pub fn kpi_aggregate_min_rows(&self) -> Result<AggregateMinRows, Failure> {
        AggregateMinRows::new(self.kpi_aggregate_min_rows).map_err(Failure::config)
    }

    /// Where answers are computed and how large they may be.
    /// How the live figures are polled and streamed.
    #[must_use]
    pub fn live(&self) -> LiveSettings {
        LiveSettings {
            poll: Duration::from_millis(self.live_poll_ms),
            streams_per_key: self.live_streams_per_key,
        }
    }

    pub fn computing(&self) -> Result<Computing, Failure> {
        let max_body_bytes = usize::try_from(self.max_body_mb.bytes())
            .ok()
            .filter(|bytes| *bytes > 0)
            .ok_or_else(|| Failure::config(anyhow!("the body bound must be at least 1 MiB")))?;
        Ok(Computing {
            pool: ComputePool::new(self.compute_threads),
            max_body_bytes,
        })
    }

    /// How the call-day store fetches and keeps days.
    #[must_use]
    pub const fn call_day_settings(&self) -> CallDaySettings {
        CallDaySettings {
            concurrency: self.platform.call_platform_concurrency,
            fetch_timeout: self.platform.call_platform_fetch_timeout_ms.0,
            settle: self.call_day_settle_secs.0,
            ttl: self.call_day_ttl_secs.0,
            day_budget: DayBudget::new(self.key_day_fetches_per_minute),
            queue_days: self.call_day_queue_days,
            queue_days_per_key: self.call_day_queue_days_per_key,
            // The assembly sets it to the HTTP client's breaker period.
            unusable_hold: CallDaySettings::DEFAULT_UNUSABLE_HOLD,
            revision_days: self.call_day_revision_days,
            max_stale: self.call_day_max_stale_secs.0,
        }
    }

    /// Shared cache and quota, when a Redis is set.
    #[must_use]
    pub fn redis(&self) -> Option<RedisSettings> {
        self.redis_url.as_ref().map(|url| RedisSettings {
            prefix: self.redis_prefix.clone(),
            ..RedisSettings::new(url.expose())
        })
    }

    /// How the server runs and stops.
    #[must_use]
    pub fn server(&self) -> ServerSettings {
        ServerSettings {
            workers: self.workers,
            shutdown_timeout: self.shutdown_timeout_secs.0,
            max_connections: self.max_connections,
            ..ServerSettings::default()
        }
    }
}

/// Where the call records come from, and how patiently (docs/call-platform.md).
#[derive(Debug, Clone, Args)]
pub struct PlatformArgs {
    /// Base address of the upstream call platform (the client calls {URL}/calls).
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub call_platform_url: Option<Secret>,

    /// Bearer token for the upstream call platform.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub call_platform_token: Option<Secret>,

    /// Milliseconds to open a connection to the upstream.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_CONNECT_TIMEOUT_MS",
        default_value_t = Millis(HttpPlatformConfig::DEFAULT_CONNECT_TIMEOUT),
        value_name = "MS"
    )]
    pub call_platform_connect_timeout_ms: Millis,

    /// Milliseconds for one page.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_REQUEST_TIMEOUT_MS",
        default_value_t = Millis(HttpPlatformConfig::DEFAULT_REQUEST_TIMEOUT),
        value_name = "MS"
    )]
    pub call_platform_request_timeout_ms: Millis,

    /// Milliseconds for a request's call days, every page, retry and backoff included; also
    /// bounds the fetch of one day.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_FETCH_TIMEOUT_MS",
        default_value_t = Millis(CallDaySettings::DEFAULT_FETCH_TIMEOUT),
        value_name = "MS"
    )]
    pub call_platform_fetch_timeout_ms: Millis,

    /// Day windows fetched from the upstream at once by this process, whatever the number of
    /// requests.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_CONCURRENCY",
        default_value_t = CallDaySettings::DEFAULT_CONCURRENCY,
        value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..), usize::from),
        value_name = "N"
    )]
    pub call_platform_concurrency: usize,

    /// Further attempts at one page after a connection error, timeout or 5xx.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_RETRIES",
        default_value_t = HttpPlatformConfig::DEFAULT_MAX_RETRIES,
        value_name = "N"
    )]
    pub call_platform_retries: u32,

    /// Milliseconds of backoff before the first retry; doubles per retry.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_RETRY_BACKOFF_MS",
        default_value_t = Millis(HttpPlatformConfig::DEFAULT_RETRY_BACKOFF),
        value_name = "MS"
    )]
    pub call_platform_retry_backoff_ms: Millis,

    /// Ceiling of the retry backoff in milliseconds.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_RETRY_BACKOFF_MAX_MS",
        default_value_t = Millis(HttpPlatformConfig::DEFAULT_RETRY_BACKOFF_MAX),
        value_name = "MS"
    )]
    pub call_platform_retry_backoff_max_ms: Millis,

    /// Calls asked for per page.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_PAGE_LIMIT",
        default_value_t = HttpPlatformConfig::DEFAULT_PAGE_LIMIT,
        value_name = "N"
    )]
    pub call_platform_page_limit: u32,

    /// Largest page body accepted, in bytes.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_MAX_PAGE_BYTES",
        default_value_t = HttpPlatformConfig::DEFAULT_MAX_PAGE_BYTES,
        value_name = "BYTES"
    )]
    pub call_platform_max_page_bytes: usize,

    /// Pages of one day's window followed at most; past it the day's answer is unusable.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_MAX_PAGES_PER_DAY",
        default_value_t = DayBounds::DEFAULT_PAGES,
        value_name = "N"
    )]
    pub call_platform_max_pages_per_day: u32,

    /// Calls one day may hold; past it the day's answer is unusable.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_MAX_CALLS",
        default_value_t = DayBounds::DEFAULT_CALLS,
        value_name = "N"
    )]
    pub call_day_max_calls: usize,

    /// Distinct agents one day may hold; past it the day's answer is unusable.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_MAX_AGENTS",
        default_value_t = DayBounds::DEFAULT_AGENTS,
        value_name = "N"
    )]
    pub call_day_max_agents: usize,

    /// MiB of calls all the days being fetched at once may hold together; a fetch that would
    /// go past it fails (503), so concurrency times the day bounds cannot multiply.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_IN_FLIGHT_MB",
        default_value_t = HttpPlatformConfig::DEFAULT_IN_FLIGHT_BYTES / (1024 * 1024),
        value_name = "MIB"
    )]
    pub call_day_in_flight_mb: usize,

    /// Failed fetches in a row that open the circuit breaker; 0 turns it off.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_BREAKER_THRESHOLD",
        default_value_t = HttpPlatformConfig::DEFAULT_BREAKER_THRESHOLD,
        value_name = "N"
    )]
    pub call_platform_breaker_threshold: u32,

    /// Milliseconds an open breaker refuses fetches before a probe.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_BREAKER_OPEN_MS",
        default_value_t = Millis(HttpPlatformConfig::DEFAULT_BREAKER_OPEN_FOR),
        value_name = "MS"
    )]
    pub call_platform_breaker_open_ms: Millis,
}

impl PlatformArgs {
    /// The HTTP adapter's configuration, or `None` when no upstream URL is set. An empty URL or
    /// token counts as unset: docker-compose.yml passes `${VAR:-}`, an empty string, for a
    /// variable its `.env` does not set. A URL or token the adapter would refuse is a
    /// configuration error (exit 2), its URL shown redacted.
    pub fn http_config(&self) -> Result<Option<HttpPlatformConfig>, Failure> {
        let Some(url) = self
            .call_platform_url
            .as_ref()
            .map(|url| url.expose().trim())
            .filter(|url| !url.is_empty())
        else {
            return Ok(None);
        };
        let config = HttpPlatformConfig {
            base_url: url.to_owned(),
            token: self
                .call_platform_token
                .as_ref()
                .filter(|token| !token.expose().trim().is_empty())
                .map(|token| BearerToken::new(token.expose())),
            connect_timeout: self.call_platform_connect_timeout_ms.0,
            request_timeout: self.call_platform_request_timeout_ms.0,
            fetch_timeout: self.call_platform_fetch_timeout_ms.0,
            max_retries: self.call_platform_retries,
            retry_backoff: self.call_platform_retry_backoff_ms.0,
            retry_backoff_max: self.call_platform_retry_backoff_max_ms.0,
            page_limit: self.call_platform_page_limit,
            max_page_bytes: self.call_platform_max_page_bytes,
            bounds: DayBounds {
                pages: self.call_platform_max_pages_per_day,
                calls: self.call_day_max_calls,
                agents: self.call_day_max_agents,
            },
            in_flight_bytes: self.call_day_in_flight_mb.saturating_mul(1024 * 1024),
            breaker_threshold: self.call_platform_breaker_threshold,
            breaker_open_for: self.call_platform_breaker_open_ms.0,
        };
        config.validate().map_err(Failure::config)?;
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;
    use crate::cli::Cli;

    /// Every default `--help` shows, by flag, for `serve` (which takes every setting).
    fn serve_defaults() -> Vec<(String, String)> {
        let cli = Cli::command();
        let serve = cli.find_subcommand("serve").unwrap();
        serve
            .get_arguments()
            .filter_map(|arg| {
                let default = arg.get_default_values().first()?;
                Some((
                    format!("--{}", arg.get_long()?),
                    default.to_string_lossy().into_owned(),
                ))
            })
            .collect()
    }

    /// The defaults the docs state are the ones the program uses: each settings-table row of
    /// docs/command-line.md (by flag) and docs/call-platform.md (by variable) against clap's.
    #[test]
    fn the_documented_defaults_are_the_program_s() {
        let tables = [
            (include_str!("../../../docs/command-line.md"), 3),
            (include_str!("../../../docs/call-platform.md"), 2),
        ];
        let mut checked = 0;
        for (flag, default) in serve_defaults() {
            let variable = format!(
                "`CALLSTATS_{}`",
                flag.trim_start_matches("--")
                    .replace('-', "_")
                    .to_uppercase()
            );
            let documented = tables.iter().find_map(|(doc, column)| {
                let row = doc.lines().find(|line| {
                    line.starts_with("| `")
                        && (line.contains(&format!("| `{flag} "))
                            || line.starts_with(&format!("| {variable} |")))
                })?;
                row.split('|').nth(*column)?.split_whitespace().next()
            });
            let Some(documented) = documented else {
                continue;
            };
            assert_eq!(documented.trim_matches('`'), default, "{flag}");
            checked += 1;
        }
        assert!(checked >= 25, "only {checked} documented defaults found");
    }

    #[test]
    fn whole_number_settings_read_and_show_their_number() {
        assert_eq!(
            "1500".parse::<Millis>(),
            Ok(Millis(Duration::from_millis(1500)))
        );
        assert_eq!(Seconds(Duration::from_secs(3600)).to_string(), "3600");
        assert!("-1".parse::<Seconds>().is_err());
        assert_eq!(Mebibytes(2).bytes(), 2 << 20);
        assert_eq!(Mebibytes(u64::MAX).bytes(), u64::MAX);
    }
}
