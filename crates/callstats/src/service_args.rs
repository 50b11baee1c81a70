//! Settings of the running service, shared by `serve` and `demo`.

use std::time::Duration;

use anyhow::anyhow;
use callstats_application::CallDaySettings;
use callstats_callplatform::{BearerToken, HttpPlatformConfig};
use callstats_domain::service::DEFAULT_ANON_RATE_LIMIT;
use callstats_domain::stats::PriorWeight;
use clap::{ArgAction, Args};

use crate::failure::Failure;
use crate::secret::Secret;

/// How the service listens, caches and counts.
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
        default_value = "callstats:",
        value_name = "PREFIX"
    )]
    pub redis_prefix: String,

    /// Weight C of the prior in the Bayesian checklist score.
    #[arg(
        long,
        env = "CALLSTATS_CHECKLIST_PRIOR_WEIGHT",
        default_value_t = 10.0,
        value_name = "C"
    )]
    pub checklist_prior_weight: f64,

    /// Per-minute quota of each client IP for requests without a valid key.
    #[arg(long, env = "CALLSTATS_ANON_RATE_LIMIT", default_value_t = DEFAULT_ANON_RATE_LIMIT, value_name = "N")]
    pub anon_rate_limit: u32,

    /// Take the client IP from the first X-Forwarded-For hop (only behind a proxy that sets it).
    #[arg(long, env = "CALLSTATS_TRUST_PROXY", action = ArgAction::Set, default_value_t = false, value_name = "BOOL")]
    pub trust_proxy: bool,

    /// Serve Prometheus metrics on this address (GET /metrics); unset: no metrics endpoint.
    #[arg(long, env = "CALLSTATS_METRICS_BIND", value_name = "ADDR")]
    pub metrics_bind: Option<String>,

    /// Worker threads serving requests (0: one per core).
    #[arg(long, env = "CALLSTATS_WORKERS", default_value_t = 0, value_name = "N")]
    pub workers: usize,

    /// Seconds in-flight requests may take to finish after SIGTERM or SIGINT.
    #[arg(
        long,
        env = "CALLSTATS_SHUTDOWN_TIMEOUT_SECS",
        default_value_t = 30,
        value_name = "SECONDS"
    )]
    pub shutdown_timeout_secs: u64,

    /// Most mebibytes of response bodies kept by the in-process cache.
    #[arg(
        long,
        env = "CALLSTATS_CACHE_MAX_MB",
        default_value_t = 256,
        value_name = "MIB"
    )]
    pub cache_max_mb: u64,

    /// Seconds after its end (Tashkent midnight) from which a day's calls are settled and kept
    /// for the call-day TTL; a day fetched before that (today) is kept for at most 60 seconds.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_SETTLE_SECS",
        default_value_t = CallDaySettings::DEFAULT_SETTLE.as_secs(),
        value_name = "SECONDS"
    )]
    pub call_day_settle_secs: u64,

    /// Seconds a settled day's calls are kept before they are fetched again.
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_TTL_SECS",
        default_value_t = CallDaySettings::DEFAULT_TTL.as_secs(),
        value_name = "SECONDS"
    )]
    pub call_day_ttl_secs: u64,

    /// Most mebibytes of call days kept in this process (also with Redis, which keeps them for
    /// every replica).
    #[arg(
        long,
        env = "CALLSTATS_CALL_DAY_CACHE_MB",
        default_value_t = 256,
        value_name = "MIB"
    )]
    pub call_day_cache_mb: u64,

    #[command(flatten)]
    pub platform: PlatformArgs,
}

impl ServiceArgs {
    pub fn prior_weight(&self) -> Result<PriorWeight, Failure> {
        PriorWeight::new(self.checklist_prior_weight).map_err(Failure::config)
    }

    /// How the call-day store fetches and keeps days.
    #[must_use]
    pub fn call_day_settings(&self) -> CallDaySettings {
        CallDaySettings {
            concurrency: self.platform.call_platform_concurrency,
            fetch_timeout: self.platform.call_platform_fetch_timeout_ms.map_or(
                CallDaySettings::DEFAULT_FETCH_TIMEOUT,
                Duration::from_millis,
            ),
            settle: Duration::from_secs(self.call_day_settle_secs),
            ttl: Duration::from_secs(self.call_day_ttl_secs),
        }
    }
}

/// Where the call records come from, and how patiently.
#[derive(Debug, Clone, Args)]
pub struct PlatformArgs {
    /// Base address of the upstream call platform (the client calls {URL}/calls).
    #[arg(long, env = "CALLSTATS_CALL_PLATFORM_URL", value_name = "URL")]
    pub call_platform_url: Option<String>,

    /// Bearer token for the upstream call platform.
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub call_platform_token: Option<Secret>,

    /// Milliseconds to open a connection to the upstream [default: 2000].
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_CONNECT_TIMEOUT_MS",
        value_name = "MS"
    )]
    pub call_platform_connect_timeout_ms: Option<u64>,

    /// Milliseconds for one page [default: 5000].
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_REQUEST_TIMEOUT_MS",
        value_name = "MS"
    )]
    pub call_platform_request_timeout_ms: Option<u64>,

    /// Milliseconds for a request's call days, every page, retry and backoff included; also
    /// bounds the fetch of one day [default: 15000].
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_FETCH_TIMEOUT_MS",
        value_name = "MS"
    )]
    pub call_platform_fetch_timeout_ms: Option<u64>,

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

    /// Further attempts at one page after a connection error, timeout or 5xx [default: 2].
    #[arg(long, env = "CALLSTATS_CALL_PLATFORM_RETRIES", value_name = "N")]
    pub call_platform_retries: Option<u32>,

    /// Milliseconds of backoff before the first retry; doubles per retry [default: 100].
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_RETRY_BACKOFF_MS",
        value_name = "MS"
    )]
    pub call_platform_retry_backoff_ms: Option<u64>,

    /// Ceiling of the retry backoff in milliseconds [default: 2000].
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_RETRY_BACKOFF_MAX_MS",
        value_name = "MS"
    )]
    pub call_platform_retry_backoff_max_ms: Option<u64>,

    /// Calls asked for per page [default: 1000].
    #[arg(long, env = "CALLSTATS_CALL_PLATFORM_PAGE_LIMIT", value_name = "N")]
    pub call_platform_page_limit: Option<u32>,

    /// Largest page body accepted, in bytes [default: 16777216].
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_MAX_PAGE_BYTES",
        value_name = "BYTES"
    )]
    pub call_platform_max_page_bytes: Option<usize>,

    /// Failed fetches in a row that open the circuit breaker; 0 turns it off [default: 5].
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_BREAKER_THRESHOLD",
        value_name = "N"
    )]
    pub call_platform_breaker_threshold: Option<u32>,

    /// Milliseconds an open breaker refuses fetches before a probe [default: 30000].
    #[arg(
        long,
        env = "CALLSTATS_CALL_PLATFORM_BREAKER_OPEN_MS",
        value_name = "MS"
    )]
    pub call_platform_breaker_open_ms: Option<u64>,
}

impl PlatformArgs {
    /// The HTTP adapter's configuration, or `None` when no upstream URL is set.
    pub fn http_config(&self) -> Result<Option<HttpPlatformConfig>, Failure> {
        let Some(url) = &self.call_platform_url else {
            return Ok(None);
        };
        if url.trim().is_empty() {
            return Err(Failure::config(anyhow!(
                "CALLSTATS_CALL_PLATFORM_URL is empty"
            )));
        }
        let mut config = HttpPlatformConfig::new(
            url.clone(),
            self.call_platform_token
                .as_ref()
                .map(|token| BearerToken::new(token.expose())),
        );
        let ms = Duration::from_millis;
        if let Some(v) = self.call_platform_connect_timeout_ms {
            config.connect_timeout = ms(v);
        }
        if let Some(v) = self.call_platform_request_timeout_ms {
            config.request_timeout = ms(v);
        }
        if let Some(v) = self.call_platform_fetch_timeout_ms {
            config.fetch_timeout = ms(v);
        }
        if let Some(v) = self.call_platform_retries {
            config.max_retries = v;
        }
        if let Some(v) = self.call_platform_retry_backoff_ms {
            config.retry_backoff = ms(v);
        }
        if let Some(v) = self.call_platform_retry_backoff_max_ms {
            config.retry_backoff_max = ms(v);
        }
        if let Some(v) = self.call_platform_page_limit {
            config.page_limit = v;
        }
        if let Some(v) = self.call_platform_max_page_bytes {
            config.max_page_bytes = v;
        }
        if let Some(v) = self.call_platform_breaker_threshold {
            config.breaker_threshold = v;
        }
        if let Some(v) = self.call_platform_breaker_open_ms {
            config.breaker_open_for = ms(v);
        }
        Ok(Some(config))
    }
}
