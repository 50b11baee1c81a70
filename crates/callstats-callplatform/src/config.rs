//! Settings of the HTTP adapter, with the defaults of the upstream contract.

use std::fmt;
use std::time::Duration;

use callstats_domain::limits::DayBounds;
use callstats_infra::redact;

/// The bearer token the upstream wants. It cannot be printed: `Debug` shows `[redacted]`, and
/// there is no `Display`; only the adapter reads it, to build the `Authorization` header.
#[derive(Clone)]
pub struct BearerToken(String);

impl BearerToken {
    #[must_use]
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken([redacted])")
    }
}

/// Everything the adapter needs. Build it with [`HttpPlatformConfig::new`], which fills in the
/// defaults below, then override single fields. `Debug` shows the base URL redacted.
#[derive(Clone)]
pub struct HttpPlatformConfig {
    /// Base address; requests go to `{base_url}/calls`. (`CALLSTATS_CALL_PLATFORM_URL`)
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set. (`CALLSTATS_CALL_PLATFORM_TOKEN`)
    pub token: Option<BearerToken>,
    /// Time allowed to open a TCP (and TLS) connection. Default 2 s.
    pub connect_timeout: Duration,
    /// Time allowed for one page: request sent, answer and body received. Default 5 s.
    pub request_timeout: Duration,
    /// Time allowed for the whole paged fetch, retries and backoff included. Default 15 s.
    pub fetch_timeout: Duration,
    /// Further attempts at one page after a connection error, a timeout or a 5xx. Default 2.
    pub max_retries: u32,
    /// Backoff before the first retry; doubles for each further one, with jitter. Default 100 ms.
    pub retry_backoff: Duration,
    /// Ceiling of the backoff. Default 2 s.
    pub retry_backoff_max: Duration,
    /// Records asked for per page (`limit`). Default 1000.
    pub page_limit: u32,
    /// Largest page body accepted; a larger one makes the answer unusable. Default 16 MiB.
    pub max_page_bytes: usize,
    /// Pages, calls and distinct agents one window may hold; past one the answer is unusable.
    pub bounds: DayBounds,
    /// Heap bytes the calls of every window being fetched at once may hold together; a fetch
    /// that would take them past it gives up. Default 64 MiB.
    /// (`CALLSTATS_CALL_DAY_IN_FLIGHT_MB`)
    pub in_flight_bytes: usize,
    /// Failed fetches in a row that open the circuit breaker. Default 5.
    pub breaker_threshold: u32,
    /// How long an open breaker refuses fetches before it lets one probe through. Default 30 s.
    pub breaker_open_for: Duration,
}

impl fmt::Debug for HttpPlatformConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpPlatformConfig")
            .field("base_url", &redact::url(&self.base_url))
            .field("token", &self.token)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("fetch_timeout", &self.fetch_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_backoff", &self.retry_backoff)
            .field("retry_backoff_max", &self.retry_backoff_max)
            .field("page_limit", &self.page_limit)
            .field("max_page_bytes", &self.max_page_bytes)
            .field("bounds", &self.bounds)
            .field("in_flight_bytes", &self.in_flight_bytes)
            .field("breaker_threshold", &self.breaker_threshold)
            .field("breaker_open_for", &self.breaker_open_for)
            .finish()
    }
}

impl HttpPlatformConfig {
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
    pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(15);
    pub const DEFAULT_MAX_RETRIES: u32 = 2;
    pub const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(100);
    pub const DEFAULT_RETRY_BACKOFF_MAX: Duration = Duration::from_secs(2);
    pub const DEFAULT_PAGE_LIMIT: u32 = 1000;
    pub const DEFAULT_MAX_PAGE_BYTES: usize = 16 * 1024 * 1024;
    pub const DEFAULT_IN_FLIGHT_BYTES: usize = 64 * 1024 * 1024;
    pub const DEFAULT_BREAKER_THRESHOLD: u32 = 5;
    pub const DEFAULT_BREAKER_OPEN_FOR: Duration = Duration::from_secs(30);

    /// The contract's defaults for an upstream at `base_url`.
    #[must_use]
    pub fn new(base_url: impl Into<String>, token: Option<BearerToken>) -> Self {
        Self {
            base_url: base_url.into(),
            token,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            fetch_timeout: Self::DEFAULT_FETCH_TIMEOUT,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            retry_backoff: Self::DEFAULT_RETRY_BACKOFF,
            retry_backoff_max: Self::DEFAULT_RETRY_BACKOFF_MAX,
            page_limit: Self::DEFAULT_PAGE_LIMIT,
            max_page_bytes: Self::DEFAULT_MAX_PAGE_BYTES,
            bounds: DayBounds::default(),
            in_flight_bytes: Self::DEFAULT_IN_FLIGHT_BYTES,
            breaker_threshold: Self::DEFAULT_BREAKER_THRESHOLD,
            breaker_open_for: Self::DEFAULT_BREAKER_OPEN_FOR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_debug_output_is_redacted() {
        let config = HttpPlatformConfig::new("http://x", Some(BearerToken::new("s3cr3t-token")));
        let printed = format!("{config:?} {:?}", config.token);
        assert!(!printed.contains("s3cr3t-token"), "{printed}");
        assert!(printed.contains("[redacted]"));
    }

    #[test]
    fn defaults_are_the_contracts() {
        let config = HttpPlatformConfig::new("http://x", None);
        assert_eq!(config.connect_timeout, Duration::from_secs(2));
        assert_eq!(config.request_timeout, Duration::from_secs(5));
        assert_eq!(config.fetch_timeout, Duration::from_secs(15));
        assert_eq!(config.max_retries, 2);
        assert_eq!(config.page_limit, 1000);
    }
}
