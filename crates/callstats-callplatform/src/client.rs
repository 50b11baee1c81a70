//! The HTTP adapter of the call-platform port: pages through the upstream's `/calls`, bounded in
//! time and attempts, and answers `UpstreamError` for anything it cannot get whole; reads the
//! optional `/live` the same way, behind a breaker of its own.

use std::collections::HashSet;
use std::fmt;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use callstats_domain::calendar::DateRange;
use callstats_domain::call_day::{FetchedCalls, MAX_QUEUES_PER_DAY};
use callstats_domain::error::cause_chain;
use callstats_domain::live::{LiveError, LiveSnapshot};
use callstats_domain::ports::{CallPlatform, UpstreamError};
use callstats_infra::breaker::{Breaker, Transition};
use callstats_infra::redact;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderValue, RETRY_AFTER};
use tracing::Instrument as _;
use xxhash_rust::xxh3::xxh3_128_with_seed;

use crate::budget::InFlightBudget;
use crate::config::HttpPlatformConfig;
use crate::wire::live::{LiveIn, MAX_LIVE_BYTES};
use crate::wire::{PageIn, encode_query_value, format_instant};

/// The adapter could not be built from its settings.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// `url` is shown redacted.
    #[error("call platform URL {url:?} is not an http(s) URL without query: {reason}")]
    BaseUrl { url: String, reason: String },
    #[error("call platform token holds characters an HTTP header cannot carry")]
    Token,
    #[error("could not build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Why one fetch gave nothing usable. Logged, then turned into the domain's `UpstreamError`.
/// None of these carries the token: requests' headers never reach an error, and neither does
/// a request's URL (see [`Transient::Transport`]).
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("circuit open after repeated failures; next probe in {} ms", .retry_in.as_millis())]
    CircuitOpen { retry_in: Duration },
    #[error("the whole fetch took longer than {limit_ms} ms")]
    Deadline { limit_ms: u128 },
    #[error("no usable answer after {attempts} attempt(s)")]
    Exhausted {
        attempts: u32,
        #[source]
        last: Transient,
    },
    #[error("answered HTTP {status}, which is not retried")]
    Refused { status: StatusCode },
    #[error("answered HTTP {status}: asked to slow down{}", retry_after_text(*retry_after))]
    Throttled {
        status: StatusCode,
        retry_after: Option<Duration>,
    },
    #[error("answered an unusable page: {0}")]
    Malformed(String),
    #[error("answered an unusable page: page {page} is not the contract's JSON")]
    NotJson {
        page: u32,
        #[source]
        error: serde_json::Error,
    },
    #[error("answered a call that breaks the contract: {0}")]
    BadRecord(String),
    #[error("answered a /live that is not the contract's JSON")]
    LiveNotJson(#[source] serde_json::Error),
    #[error("answered a /live that breaks the contract: {0}")]
    BadLive(String),
    #[error("sent cursor {cursor:?} a second time; stopped a pagination loop")]
    CursorLoop { cursor: String },
    #[error("cannot express the requested window: {0}")]
    Window(String),
    #[error("cannot express the requested window")]
    Format(#[source] time::error::Format),
    #[error(
        "the days being fetched hold more than {limit_mb} MiB of calls \
         (CALLSTATS_CALL_DAY_IN_FLIGHT_MB); gave up on the window from {from}"
    )]
    InFlightBudget { from: String, limit_mb: usize },
    #[error("the window from {from} holds more than {limit} {what} ({setting}); gave up on it")]
    OverBound {
        from: String,
        what: &'static str,
        limit: usize,
        setting: &'static str,
    },
}

impl FetchError {
    /// The cause of an unusable answer, for `callstats_call_days_unusable_total`; `None` for
    /// failures another attempt may not repeat.
    const fn unusable(&self) -> Option<&'static str> {
        match self {
            Self::Malformed(_) | Self::NotJson { .. } | Self::Window(_) | Self::Format(_) => {
                Some("page")
            }
            Self::BadRecord(_) => Some("record"),
            Self::LiveNotJson(_) | Self::BadLive(_) => Some("live"),
            Self::CursorLoop { .. } => Some("cursor_loop"),
            Self::OverBound { what, .. } => Some(what),
            Self::CircuitOpen { .. }
            | Self::Deadline { .. }
            | Self::Exhausted { .. }
            | Self::Refused { .. }
            | Self::Throttled { .. }
            | Self::InFlightBudget { .. } => None,
        }
    }

    /// The domain's error: this one's message, with what caused it kept as its source.
    fn into_upstream(self) -> UpstreamError {
        let reason = self.to_string();
        let error = match self.unusable() {
            Some(_) => UpstreamError::unusable(reason),
            None => UpstreamError::new(reason),
        };
        match self {
            // The breaker says when it lets a probe through: a partner may ask again then.
            Self::CircuitOpen { retry_in } => error.with_retry_in(retry_in),
            Self::Exhausted { last, .. } => error.with_source(last),
            Self::NotJson { error: cause, .. } => error.with_source(cause),
            Self::LiveNotJson(cause) => error.with_source(cause),
            Self::Format(cause) => error.with_source(cause),
            _ => error,
        }
    }
}

const MIB: usize = 1024 * 1024;

/// What one id costs in the set of a fetch's ids: its hash and the table's control byte, at
/// the table's load factor's worst (7/8).
const ID_ENTRY_BYTES: usize = (size_of::<u128>() + 1) * 8 / 7;

/// A connection error, a timeout or a 5xx: worth another attempt.
#[derive(Debug, thiserror::Error)]
enum Transient {
    /// Held without its URL: the window's query is not for the log.
    #[error("{}", transport_failure(.0))]
    Transport(#[source] reqwest::Error),
    #[error("answered HTTP {0}")]
    Status(StatusCode),
}

impl Transient {
    fn transport(error: reqwest::Error) -> Self {
        Self::Transport(error.without_url())
    }
}

/// One attempt at one page went wrong.
enum AttemptError {
    Transient(Transient),
    /// Anything another attempt would not change.
    Fatal(FetchError),
}

/// The call-platform port over HTTP. One instance holds one connection pool; share it.
///
/// `/calls` and `/live` each have a breaker: a poll of `/live` every few seconds would
/// otherwise dominate the count, its successes closing a breaker that failing day fetches
/// should open, and a broken `/live` alone opening it for the history too.
pub struct HttpCallPlatform {
    client: reqwest::Client,
    calls_url: String,
    live_url: String,
    authorization: Option<HeaderValue>,
    config: HttpPlatformConfig,
    breaker: Breaker,
    live_breaker: Breaker,
    in_flight: InFlightBudget,
}

impl fmt::Debug for HttpCallPlatform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpCallPlatform")
            .field("calls_url", &self.calls_url)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl HttpCallPlatform {
    /// Builds the client (pooled, keep-alive) from the settings.
    ///
    /// The first call installs ring as the process's rustls crypto provider unless another one
    /// is installed already; this keeps aws-lc-rs (a long C build) out of the workspace.
    pub fn new(config: HttpPlatformConfig) -> Result<Self, BuildError> {
        let calls_url = endpoint_url(&config.base_url, "calls")?;
        let live_url = endpoint_url(&config.base_url, "live")?;
        let authorization = authorization(&config)?;
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_keepalive(Duration::from_secs(60))
            .tcp_nodelay(true)
            // A redirect would carry the token elsewhere: a 3xx is an unusable answer instead.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("callstats/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(BuildError::Client)?;
        Ok(Self {
            client,
            calls_url,
            live_url,
            authorization,
            breaker: Breaker::new(config.breaker_threshold, config.breaker_open_for),
            live_breaker: Breaker::new(config.breaker_threshold, config.breaker_open_for),
            in_flight: InFlightBudget::new(config.in_flight_bytes),
            config,
        })
    }

    async fn fetch(&self, range: DateRange) -> Result<FetchedCalls, FetchError> {
        let permit = self.breaker.try_acquire().map_err(|refused| {
            metrics::counter!("callstats_upstream_fetches_total", "outcome" => "circuit_open")
                .increment(1);
            FetchError::CircuitOpen {
                retry_in: refused.retry_in,
            }
        })?;
        if permit.is_probe() {
            tracing::info!("call platform circuit half-open: letting one probe through");
        }
        let outcome = tokio::time::timeout(self.config.fetch_timeout, self.fetch_pages(range))
            .await
            .unwrap_or(Err(FetchError::Deadline {
                limit_ms: self.config.fetch_timeout.as_millis(),
            }));
        // An upstream that asks to be called less is up: backpressure is not an outage; nor is
        // a full in-flight budget, which is this replica's own limit.
        let (transition, label) = match &outcome {
            Ok(_) => (permit.success(), "ok"),
            Err(FetchError::Throttled { .. }) => (permit.success(), "throttled"),
            Err(FetchError::InFlightBudget { .. }) => (permit.success(), "in_flight_budget"),
            Err(_) => (permit.failure(), "failed"),
        };
        log_transition(transition, &self.breaker, "call platform");
        metrics::counter!("callstats_upstream_fetches_total", "outcome" => label).increment(1);
        outcome
    }

    async fn fetch_pages(&self, range: DateRange) -> Result<FetchedCalls, FetchError> {
        let (from, to) = range.window().ok_or_else(|| {
            FetchError::Window(format!(
                "{} to {} ends past the calendar",
                range.start(),
                range.end()
            ))
        })?;
        let (from_unix, to_unix) = range.unix_window();
        let from = format_instant(from).map_err(FetchError::Format)?;
        let to = format_instant(to).map_err(FetchError::Format)?;
        let first_page_url = format!(
            "{}?from={}&to={}&limit={}",
            self.calls_url,
            encode_query_value(&from),
            encode_query_value(&to),
            self.config.page_limit
        );

        let bounds = self.config.bounds;
        let over =
            |what: &'static str, limit: usize, setting: &'static str| FetchError::OverBound {
                from: from.clone(),
                what,
                limit,
                setting,
            };
        // The calls in the held day's compact form, page by page; an id is kept as its 128-bit
        // XXH3 hash only (16 bytes, not the id's up to 64): xxhash-rust's xxh3_128, the
        // fastest well-kept 128-bit hash, seeded at random per fetch. 200,000 ids collide by
        // chance with a probability near 2^-94; an upstream that crafted a collision would
        // only make its own call count as a repeat, which it could do by leaving it out.
        let mut fetched = FetchedCalls::new();
        let mut ids: HashSet<u128> = HashSet::new();
        let seed = fastrand::u64(..);
        let mut reservation = self.in_flight.reserve();
        let mut cursors: HashSet<String> = HashSet::new();
        let mut cursor: Option<String> = None;
        let (mut pages, mut outside, mut repeated) = (0_u32, 0_u64, 0_u64);
        loop {
            if pages >= bounds.pages {
                return Err(over(
                    "pages",
                    usize::try_from(bounds.pages).unwrap_or(usize::MAX),
                    "CALLSTATS_CALL_PLATFORM_MAX_PAGES_PER_DAY",
                ));
            }
            let url = match &cursor {
                None => first_page_url.clone(),
                Some(cursor) => format!("{first_page_url}&cursor={}", encode_query_value(cursor)),
            };
            let body = self.page(&url, self.config.max_page_bytes).await?;
            pages = pages.saturating_add(1);
            let page: PageIn<'_> = serde_json::from_slice(&body)
                .map_err(|error| FetchError::NotJson { page: pages, error })?;
            for call in &page.calls {
                let record = call.to_record().map_err(FetchError::BadRecord)?;
                if !(from_unix..to_unix).contains(&record.started_at) {
                    outside = outside.saturating_add(1);
                } else if ids.insert(xxh3_128_with_seed(call.id.as_bytes(), seed)) {
                    if let Some(agent) = &record.agent_number
                        && !fetched.knows_agent(agent)
                        && fetched.agent_count() >= bounds.agents
                    {
                        return Err(over(
                            "agents",
                            bounds.agents,
                            "CALLSTATS_CALL_DAY_MAX_AGENTS",
                        ));
                    }
                    if let Some(queue) = &record.queue
                        && !fetched.knows_queue(queue)
                        && fetched.queue_count() >= MAX_QUEUES_PER_DAY
                    {
                        return Err(over(
                            "queues",
                            MAX_QUEUES_PER_DAY,
                            "the most a held day can index",
                        ));
                    }
                    if fetched.len() >= bounds.calls {
                        return Err(over("calls", bounds.calls, "CALLSTATS_CALL_DAY_MAX_CALLS"));
                    }
                    fetched.push(record);
                } else {
                    repeated = repeated.saturating_add(1);
                }
            }
            let next = match page.next_cursor {
                // An empty cursor reads as the end, like null.
                Some(next) if !next.is_empty() => Some(next.into_owned()),
                _ => None,
            };
            // The page's body goes as soon as it is read; what the calls hold now counts
            // against the budget of every fetch in flight.
            drop(page.calls);
            drop(body);
            let held = fetched
                .size_bytes()
                .saturating_add(ids.capacity().saturating_mul(ID_ENTRY_BYTES));
            if !reservation.resize(held) {
                return Err(FetchError::InFlightBudget {
                    from: from.clone(),
                    limit_mb: self.in_flight.limit() / MIB,
                });
            }
            match next {
                Some(next) => {
                    if !cursors.insert(next.clone()) {
                        return Err(FetchError::CursorLoop { cursor: next });
                    }
                    cursor = Some(next);
                }
                None => break,
            }
        }
        if outside > 0 || repeated > 0 {
            tracing::debug!(
                outside,
                repeated,
                "ignored calls outside the window and repeated ids"
            );
        }
        tracing::debug!(pages, records = fetched.len(), "fetched calls");
        Ok(fetched)
    }

    /// One page's body, at most `limit` bytes, with retries on transient failures.
    async fn page(&self, url: &str, limit: usize) -> Result<Vec<u8>, FetchError> {
        let mut attempts = 0_u32;
        loop {
            attempts = attempts.saturating_add(1);
            let attempt = self.attempt(url, limit).await;
            let outcome = match &attempt {
                Ok(_) => "ok",
                Err(AttemptError::Transient(_)) => "transient_error",
                Err(AttemptError::Fatal(FetchError::Throttled { .. })) => "throttled",
                Err(AttemptError::Fatal(_)) => "fatal_error",
            };
            metrics::counter!("callstats_upstream_requests_total", "outcome" => outcome)
                .increment(1);
            match attempt {
                Ok(body) => return Ok(body),
                Err(AttemptError::Fatal(error)) => return Err(error),
                Err(AttemptError::Transient(last)) if attempts > self.config.max_retries => {
                    return Err(FetchError::Exhausted { attempts, last });
                }
                Err(AttemptError::Transient(cause)) => {
                    let backoff = self.backoff(attempts);
                    tracing::debug!(
                        attempt = attempts,
                        backoff_ms = backoff.as_millis(),
                        cause = cause_chain(&cause),
                        "call platform attempt failed; retrying"
                    );
                    tokio::time::sleep(backoff).await;
                }
            }
        }
    }

    async fn attempt(&self, url: &str, limit: usize) -> Result<Vec<u8>, AttemptError> {
        let mut request = self.client.get(url).timeout(self.config.request_timeout);
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| AttemptError::Transient(Transient::transport(e)))?;
        let status = response.status();
        // 429, and 503 with a Retry-After, ask for fewer requests: not retried here (the
        // call-day store slows down and fetches the day again), and not an outage.
        let retry_after = response.headers().get(RETRY_AFTER).map(retry_after);
        if status == StatusCode::TOO_MANY_REQUESTS
            || (status == StatusCode::SERVICE_UNAVAILABLE && retry_after.is_some())
        {
            return Err(AttemptError::Fatal(FetchError::Throttled {
                status,
                retry_after: retry_after.flatten(),
            }));
        }
        if status.is_server_error() {
            return Err(AttemptError::Transient(Transient::Status(status)));
        }
        if !status.is_success() {
            return Err(AttemptError::Fatal(FetchError::Refused { status }));
        }
        let too_large = || {
            AttemptError::Fatal(FetchError::Malformed(format!(
                "body larger than {limit} bytes"
            )))
        };
        let announced = response
            .content_length()
            .and_then(|length| usize::try_from(length).ok());
        if announced.is_some_and(|length| length > limit) {
            return Err(too_large());
        }
        let mut body = Vec::with_capacity(announced.unwrap_or(0));
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| AttemptError::Transient(Transient::transport(e)))?
        {
            if body.len().saturating_add(chunk.len()) > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Exponential backoff with jitter: a random point in the upper half of
    /// `retry_backoff · 2^(retry − 1)`, capped at `retry_backoff_max`.
    fn backoff(&self, retry: u32) -> Duration {
        let factor = 2_u32.saturating_pow(retry.saturating_sub(1));
        let ceiling = self
            .config
            .retry_backoff
            .saturating_mul(factor)
            .min(self.config.retry_backoff_max);
        let half = ceiling / 2;
        half + half.mul_f64(fastrand::f64())
    }

    /// `/live` behind its breaker. A 404 (no live figures) and backpressure are answers of a
    /// platform that is up: neither counts as a failure.
    async fn read_live(&self) -> Result<LiveSnapshot, FetchError> {
        let permit =
            self.live_breaker
                .try_acquire()
                .map_err(|refused| FetchError::CircuitOpen {
                    retry_in: refused.retry_in,
                })?;
        if permit.is_probe() {
            tracing::info!("call platform /live circuit half-open: letting one probe through");
        }
        // The whole read, retries included, within one request's time: figures older than
        // that are no longer live, and the poller asks again within seconds anyway.
        let limit = self.config.request_timeout;
        let outcome = tokio::time::timeout(limit, self.live_snapshot())
            .await
            .unwrap_or(Err(FetchError::Deadline {
                limit_ms: limit.as_millis(),
            }));
        let transition = match &outcome {
            Ok(_)
            | Err(FetchError::Throttled { .. })
            | Err(FetchError::Refused {
                status: StatusCode::NOT_FOUND,
            }) => permit.success(),
            Err(_) => permit.failure(),
        };
        log_transition(transition, &self.live_breaker, "call platform /live");
        outcome
    }

    async fn live_snapshot(&self) -> Result<LiveSnapshot, FetchError> {
        let body = self.page(&self.live_url, MAX_LIVE_BYTES).await?;
        let live: LiveIn<'_> = serde_json::from_slice(&body).map_err(FetchError::LiveNotJson)?;
        live.to_snapshot().map_err(FetchError::BadLive)
    }
}

#[async_trait]
impl CallPlatform for HttpCallPlatform {
    async fn calls(&self, range: DateRange) -> Result<FetchedCalls, UpstreamError> {
        let span = tracing::info_span!(
            "call_platform_fetch",
            start = %range.start(),
            end = %range.end()
        );
        async {
            self.fetch(range).await.map_err(|error| {
                if let FetchError::Throttled { retry_after, .. } = error {
                    tracing::debug!(reason = %error, "call platform asked to slow down");
                    return UpstreamError::throttled(error.to_string(), retry_after);
                }
                tracing::warn!(reason = cause_chain(&error), "call platform unavailable");
                if let Some(cause) = error.unusable() {
                    metrics::counter!("callstats_call_days_unusable_total", "cause" => cause)
                        .increment(1);
                }
                error.into_upstream()
            })
        }
        .instrument(span)
        .await
    }

    async fn live(&self) -> Result<LiveSnapshot, LiveError> {
        let span = tracing::info_span!("call_platform_live");
        async {
            self.read_live().await.map_err(|error| match error {
                FetchError::Refused {
                    status: StatusCode::NOT_FOUND,
                } => LiveError::NotReported,
                FetchError::Throttled { retry_after, .. } => {
                    tracing::debug!(reason = %error, "call platform asked to slow down");
                    UpstreamError::throttled(error.to_string(), retry_after).into()
                }
                // Said once, when the breaker opened; not again at every poll.
                FetchError::CircuitOpen { .. } => {
                    tracing::debug!(reason = %error, "call platform /live unavailable");
                    error.into_upstream().into()
                }
                _ => {
                    tracing::warn!(
                        reason = cause_chain(&error),
                        "call platform /live unavailable"
                    );
                    error.into_upstream().into()
                }
            })
        }
        .instrument(span)
        .await
    }
}

/// Installs ring as the process's rustls crypto provider, unless one is installed already.
///
/// The workspace builds reqwest with `rustls-no-provider` (aws-lc-rs, reqwest's default, is a
/// long C build), so every `reqwest::Client` in the process must be built after a provider is
/// installed, or its build panics. [`HttpCallPlatform::new`] calls this itself; code that
/// builds its own client (tests hitting the API, for one) calls it first. Idempotent.
pub fn install_crypto_provider() {
    // Err only means a provider is installed already, which reqwest then uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl HttpPlatformConfig {
    /// What [`HttpCallPlatform::new`] refuses in these settings (the base URL, the token), for
    /// a caller to report as a setting's error before anything starts.
    pub fn validate(&self) -> Result<(), BuildError> {
        endpoint_url(&self.base_url, "calls")?;
        authorization(self).map(drop)
    }
}

/// The `Authorization` header of the token, if one is set; marked sensitive, so the HTTP
/// client never shows it.
fn authorization(config: &HttpPlatformConfig) -> Result<Option<HeaderValue>, BuildError> {
    config
        .token
        .as_ref()
        .map(|token| {
            let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose()))
                .map_err(|_| BuildError::Token)?;
            value.set_sensitive(true);
            Ok(value)
        })
        .transpose()
}

/// `{base}/{endpoint}`, checking the base is an http(s) URL without credentials, query or
/// fragment. The error shows the URL redacted (`redact::url`): a rejected URL may hold the very
/// secret that made it wrong.
fn endpoint_url(base: &str, endpoint: &str) -> Result<String, BuildError> {
    let invalid = |reason: &str| BuildError::BaseUrl {
        url: redact::url(base),
        reason: reason.to_owned(),
    };
    let parsed = reqwest::Url::parse(base).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(invalid("it must not carry a query or fragment"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(invalid(
            "credentials go in the token setting, not in the URL",
        ));
    }
    Ok(format!(
        "{}/{endpoint}",
        parsed.as_str().trim_end_matches('/')
    ))
}

/// A `Retry-After` value: delay-seconds, or an HTTP date (a date past is no delay); `None`
/// when it is neither.
fn retry_after(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(text).ok()?;
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}

fn retry_after_text(retry_after: Option<Duration>) -> String {
    retry_after.map_or_else(String::new, |delay| {
        format!(" (Retry-After {} ms)", delay.as_millis())
    })
}

/// What kind of transport failure `error` is; reqwest's own words and causes follow as its
/// source.
fn transport_failure(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "transport error"
    }
}

/// The breaker's news, in the call platform's words; `what` names the breaker.
fn log_transition(transition: Transition, breaker: &Breaker, what: &str) {
    let open_for_ms = breaker.open_for().as_millis();
    match transition {
        Transition::None => {}
        Transition::Opened => tracing::warn!(
            open_for_ms,
            "{what} circuit opened: refusing fetches for a while"
        ),
        Transition::Reopened => {
            tracing::warn!(open_for_ms, "{what} probe failed: circuit open again");
        }
        Transition::Closed => {
            tracing::info!("{what} circuit closed: the upstream answers again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_join_the_base_with_or_without_a_trailing_slash() {
        assert_eq!(
            endpoint_url("http://127.0.0.1:9000", "calls").unwrap(),
            "http://127.0.0.1:9000/calls"
        );
        assert_eq!(
            endpoint_url("https://platform.example/v2/", "live").unwrap(),
            "https://platform.example/v2/live"
        );
    }

    #[test]
    fn a_base_url_that_is_not_plain_http_is_rejected() {
        for bad in ["ftp://x", "not a url", "http://x/?a=1", "http://user:pw@x"] {
            assert!(
                matches!(endpoint_url(bad, "calls"), Err(BuildError::BaseUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_rejected_base_url_is_shown_without_its_secrets() {
        for (bad, secret) in [
            ("http://u:S3cret@127.0.0.1:1", "S3cret"),
            ("http://u@127.0.0.1:1", "u@"),
            ("http://127.0.0.1:1/?token=t0k3n", "t0k3n"),
            ("http://127.0.0.1:1/#t0k3n", "t0k3n"),
            ("http://u:S3cret@[::1", "S3cret"),
        ] {
            let config = HttpPlatformConfig::new(bad, None);
            let shown = config.validate().unwrap_err().to_string();
            assert!(!shown.contains(secret), "{bad}: {shown}");
            assert!(!format!("{config:?}").contains(secret), "{bad}: {config:?}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let value = |text: &str| HeaderValue::from_str(text).unwrap();
        assert_eq!(retry_after(&value("7")), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(&value(" 0 ")), Some(Duration::ZERO));
        let soon = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let delay = retry_after(&value(&soon)).unwrap();
        assert!(
            (Duration::from_secs(28)..=Duration::from_secs(30)).contains(&delay),
            "{delay:?}"
        );
        assert_eq!(
            retry_after(&value("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO),
            "a date past"
        );
        for bad in ["-1", "soon", "1.5", ""] {
            assert_eq!(retry_after(&value(bad)), None, "{bad}");
        }
    }

    #[test]
    fn backoff_grows_with_jitter_and_stays_under_its_ceiling() {
        let mut config = HttpPlatformConfig::new("http://x", None);
        config.retry_backoff = Duration::from_millis(100);
        config.retry_backoff_max = Duration::from_millis(300);
        let platform = HttpCallPlatform::new(config).unwrap();
        for _ in 0..50 {
            let first = platform.backoff(1);
            assert!((Duration::from_millis(50)..=Duration::from_millis(100)).contains(&first));
            let second = platform.backoff(2);
            assert!((Duration::from_millis(100)..=Duration::from_millis(200)).contains(&second));
            let capped = platform.backoff(10);
            assert!((Duration::from_millis(150)..=Duration::from_millis(300)).contains(&capped));
        }
    }
}
