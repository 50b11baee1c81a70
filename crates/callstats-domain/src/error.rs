//! The one error type of the domain's use cases. Each variant maps to one HTTP status; the
//! messages are written for the partner who has to fix the request. Internal causes stay in the
//! adapters' logs and are never part of a message.

use crate::access::{QuotaStatus, Unauthorized};
use crate::limits::OverBudget;
use crate::params::ParamError;
use crate::ports::CallDaysError;
use crate::scope::Scope;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DomainError {
    /// 400: a parameter is missing or malformed.
    #[error(transparent)]
    BadRequest(#[from] ParamError),
    /// 401: no usable key.
    #[error(transparent)]
    Unauthorized(#[from] Unauthorized),
    /// 403: the key is pinned to another domain.
    #[error("origin not allowed")]
    OriginNotAllowed,
    /// 403: the key lacks the endpoint's scope.
    #[error("this endpoint needs the '{0}' scope, which the API key does not hold")]
    MissingScope(Scope),
    /// 404: nothing to show for the path.
    #[error("{0}")]
    NotFound(String),
    /// 406: the request's `Accept` excludes every representation the endpoint has.
    #[error("the Accept header excludes every representation of this endpoint: {representations}")]
    NotAcceptable { representations: &'static str },
    /// 429: over the per-minute quota.
    #[error("rate limit of {} requests per minute exceeded; retry after the window resets", .0.limit)]
    RateLimited(QuotaStatus),
    /// 429: the key holds as many open live streams as it may
    /// (`CALLSTATS_LIVE_STREAMS_PER_KEY`, across the deployment).
    #[error(
        "this API key already holds {limit} open live streams, the most it may; close one, \
         or read /calls/live as JSON"
    )]
    TooManyStreams { limit: u32 },
    /// 429: the days the request would make the service fetch exceed its key's day budget.
    #[error("{0}")]
    DayBudgetExceeded(OverBudget),
    /// 503: the request's days cannot arrive before the deadline; they stay queued.
    #[error("the upstream call platform is busy; retry in {retry_after_secs} s")]
    UpstreamBusy { retry_after_secs: u32 },
    /// 503: the upstream call platform could not be reached or answered badly; the source says
    /// why, for the log.
    #[error("the upstream call platform is unavailable")]
    UpstreamUnavailable(#[source] crate::ports::UpstreamError),
    /// 503: the answer would be larger than the body bound.
    #[error("the answer would be larger than {} MiB; ask for a shorter period", .limit_bytes / (1 << 20))]
    BodyTooLarge { limit_bytes: usize },
    /// 503: the portal database could not be reached; the source says why, for the log.
    #[error("portal database unavailable")]
    StoreUnavailable(#[source] crate::ports::StoreError),
    /// 500: the computation itself failed (a bug); the cause is for the log only.
    #[error("internal server error")]
    Internal(String),
}

impl From<crate::ports::StoreError> for DomainError {
    fn from(cause: crate::ports::StoreError) -> Self {
        Self::StoreUnavailable(cause)
    }
}

impl From<crate::ports::UpstreamError> for DomainError {
    fn from(cause: crate::ports::UpstreamError) -> Self {
        Self::UpstreamUnavailable(cause)
    }
}

impl From<CallDaysError> for DomainError {
    fn from(err: CallDaysError) -> Self {
        match err {
            CallDaysError::Unavailable(cause) => Self::UpstreamUnavailable(cause),
            CallDaysError::OverBudget(refused) => Self::DayBudgetExceeded(refused),
            CallDaysError::Busy { retry_after_secs } => Self::UpstreamBusy { retry_after_secs },
        }
    }
}

/// `Retry-After` of a 503 for the portal database: a key seen recently is answered from its
/// last known state meanwhile, so only keys not seen lately and uncached portal data wait.
pub const STORE_RETRY_AFTER_SECS: u32 = 5;
/// `Retry-After` of a 503 for the call platform when nothing says when it will answer again (a
/// fetch that failed after its retries, a deadline missed): about a third of the breaker's
/// default open period, so a brief failure is retried soon and a lasting one meets the breaker,
/// which answers at once with its own remaining time.
pub const UPSTREAM_RETRY_AFTER_SECS: u32 = 10;
/// `Retry-After` of a 503 for an answer past the body bound: asking again cannot make it
/// smaller, so a client that retries every 503 is slowed to the quota's window.
pub const BODY_TOO_LARGE_RETRY_AFTER_SECS: u32 = 60;
/// `Retry-After` of a 429 for the request quota: the longest a window lasts.
pub const RATE_LIMITED_RETRY_AFTER_SECS: u32 = 60;
/// `Retry-After` when a key holds all its live streams: a slot frees once a stream ends, and a
/// stream whose client went away stops counting within its slot's lifetime.
pub const STREAMS_RETRY_AFTER_SECS: u32 = 5;

impl DomainError {
    /// The message and every cause under it, `: `-separated, for the log (never for a body).
    #[must_use]
    pub fn cause_chain(&self) -> String {
        cause_chain(self)
    }

    /// The whole seconds a client should wait before asking again (`Retry-After`): on every
    /// 429 and 503, `None` on any other error. docs/behaviour.md, "Errors", has the table.
    #[must_use]
    pub fn retry_after_secs(&self) -> Option<u32> {
        match self {
            Self::RateLimited(_) => Some(RATE_LIMITED_RETRY_AFTER_SECS),
            Self::DayBudgetExceeded(refused) => Some(refused.status.reset_seconds),
            Self::TooManyStreams { .. } => Some(STREAMS_RETRY_AFTER_SECS),
            Self::UpstreamBusy { retry_after_secs } => Some(*retry_after_secs),
            Self::UpstreamUnavailable(cause) => Some(
                cause
                    .retry_in
                    .map_or(UPSTREAM_RETRY_AFTER_SECS, whole_seconds),
            ),
            Self::StoreUnavailable(_) => Some(STORE_RETRY_AFTER_SECS),
            Self::BodyTooLarge { .. } => Some(BODY_TOO_LARGE_RETRY_AFTER_SECS),
            Self::BadRequest(_)
            | Self::Unauthorized(_)
            | Self::OriginNotAllowed
            | Self::MissingScope(_)
            | Self::NotFound(_)
            | Self::NotAcceptable { .. }
            | Self::Internal(_) => None,
        }
    }
}

/// `wait` in whole seconds, rounded up, at least 1: a `Retry-After`.
#[must_use]
pub fn whole_seconds(wait: std::time::Duration) -> u32 {
    let whole = wait
        .as_secs()
        .saturating_add(u64::from(wait.subsec_nanos() > 0));
    u32::try_from(whole).unwrap_or(u32::MAX).max(1)
}

/// `error` and every error under it (`source()` after `source()`), `: `-separated, for logs
/// and never for a body. A link whose text the chain already ends with is left out, because
/// some libraries both print their source and return it.
#[must_use]
pub fn cause_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let link = cause.to_string();
        if !text.ends_with(&link) {
            text.push_str(": ");
            text.push_str(&link);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ports::{StoreError, UpstreamError};

    #[derive(Debug, thiserror::Error)]
    #[error("connection reset by peer")]
    struct Reset;

    #[derive(Debug, thiserror::Error)]
    #[error("could not read the result")]
    struct Read(#[source] Reset);

    /// Prints its source and returns it too, as some libraries do.
    #[derive(Debug, thiserror::Error)]
    #[error("pool: {0}")]
    struct Repeats(#[source] Reset);

    #[test]
    fn a_store_error_built_from_nested_errors_shows_every_link() {
        let err = DomainError::from(StoreError::from_source("query failed", Read(Reset)));
        assert_eq!(
            err.cause_chain(),
            "portal database unavailable: portal store unavailable: query failed: \
             could not read the result: connection reset by peer"
        );
        assert_eq!(
            err.to_string(),
            "portal database unavailable",
            "the message a body may carry has no cause"
        );
    }

    #[test]
    fn an_upstream_error_keeps_its_source_through_clones() {
        let err = UpstreamError::unusable("page 2 is not the contract's JSON").with_source(Reset);
        let shared = DomainError::from(err.clone());
        assert_eq!(
            shared.cause_chain(),
            "the upstream call platform is unavailable: call platform unavailable: \
             page 2 is not the contract's JSON: connection reset by peer"
        );
        assert_eq!(
            err,
            UpstreamError::unusable("page 2 is not the contract's JSON")
        );
        assert_ne!(err, UpstreamError::new("page 2 is not the contract's JSON"));
    }

    #[test]
    fn an_upstream_503_asks_again_when_the_adapter_says_else_in_ten_seconds() {
        let retry = |err: UpstreamError| DomainError::from(err).retry_after_secs();
        let second = Duration::from_secs(1);
        assert_eq!(retry(UpstreamError::new("timed out")), Some(10));
        assert_eq!(
            retry(UpstreamError::new("circuit open").with_retry_in(second * 29 / 10)),
            Some(3),
            "rounded up"
        );
        assert_eq!(
            retry(UpstreamError::new("probe in flight").with_retry_in(Duration::ZERO)),
            Some(1),
            "at least a second"
        );
    }

    #[test]
    fn a_link_the_chain_already_ends_with_is_not_repeated() {
        let err = StoreError::from_source("no database connection", Repeats(Reset));
        assert_eq!(
            cause_chain(&err),
            "portal store unavailable: no database connection: pool: connection reset by peer"
        );
    }
}
