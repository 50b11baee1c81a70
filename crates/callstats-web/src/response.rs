//! Writing answers: JSON bodies, the headers every API response carries, and the mark that
//! tells the request observer to log a failure's cause.

use actix_web::http::StatusCode;
use actix_web::http::header::{
    CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_ENCODING, CONTENT_TYPE, ETAG, EntityTag,
    Header as _, HeaderMap, HeaderName, HeaderValue, IfNoneMatch, VARY,
};
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use callstats_application::{CacheStatus, CachedAnswer, ETag};
use callstats_domain::access::QuotaStatus;
use callstats_domain::limits::DayBudgetStatus;
use serde::Serialize;

use crate::encoding::{Coding, Compressed};

pub(crate) const JSON: &str = "application/json; charset=utf-8";
const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
pub(crate) const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
const CACHE_STATUS: HeaderName = HeaderName::from_static("cache-status");

pub(crate) const INTERNAL_ERROR_BODY: &[u8] = br#"{"error":"internal server error"}"#;

/// Serialises `value` as the JSON body of a response (UTF-8, non-ASCII unescaped).
pub(crate) fn json<T: Serialize>(status: StatusCode, value: &T) -> HttpResponse {
    match serde_json::to_vec(value) {
        Ok(bytes) => bytes_response(status, Bytes::from(bytes)),
        Err(err) => {
            tracing::error!(error = %err, "could not serialise a response body");
            bytes_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                Bytes::from_static(INTERNAL_ERROR_BODY),
            )
        }
    }
}

/// A response whose body is already JSON.
pub(crate) fn bytes_response(status: StatusCode, bytes: Bytes) -> HttpResponse {
    let mut response = HttpResponse::with_body(status, bytes).map_into_boxed_body();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    response
}

/// Where an answer came from, for `X-Cache` and `Cache-Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The response cache, with the entry's whole seconds left.
    Hit { ttl: u32 },
    /// Computed for this request, or never cached (`/ping`, errors).
    Miss,
    /// Computed for this request from call days past their lifetime (their refetch failed).
    Stale,
}

impl Source {
    /// Where an entry with `ttl` seconds left came from.
    pub(crate) const fn of(cache: CacheStatus, ttl: u32) -> Self {
        match cache {
            CacheStatus::Hit => Self::Hit { ttl },
            CacheStatus::Miss => Self::Miss,
            CacheStatus::Stale => Self::Stale,
        }
    }
}

/// The rate-limit and cache headers every API response that reached admission carries: the
/// `X-RateLimit-*` headers (the request quota) and the IETF draft's `RateLimit-Policy` and
/// `RateLimit` (the policy "minute", and "days" for a key's day budget when there is one),
/// `X-Cache` and RFC 9211's `Cache-Status`.
pub(crate) fn set_headers(
    headers: &mut HeaderMap,
    quota: &QuotaStatus,
    days: Option<&DayBudgetStatus>,
    source: Source,
) {
    headers.insert(X_RATELIMIT_LIMIT, HeaderValue::from(quota.limit));
    headers.insert(X_RATELIMIT_REMAINING, HeaderValue::from(quota.remaining));
    headers.insert(X_RATELIMIT_RESET, HeaderValue::from(quota.reset_seconds));
    let (policy, state) = match days {
        Some(days) => (
            format!(
                "\"minute\";q={};w=60, \"days\";q={};w=60",
                quota.limit, days.limit
            ),
            format!(
                "\"minute\";r={};t={}, \"days\";r={};t={}",
                quota.remaining, quota.reset_seconds, days.remaining, days.reset_seconds
            ),
        ),
        None => (
            format!("\"minute\";q={};w=60", quota.limit),
            format!("\"minute\";r={};t={}", quota.remaining, quota.reset_seconds),
        ),
    };
    // Digits and ASCII punctuation: always a header value.
    if let Ok(policy) = HeaderValue::try_from(policy) {
        headers.insert(RATELIMIT_POLICY, policy);
    }
    if let Ok(state) = HeaderValue::try_from(state) {
        headers.insert(RATELIMIT, state);
    }
    let (x_cache, status) = match source {
        Source::Hit { ttl } => (
            "HIT",
            HeaderValue::try_from(format!("callstats; hit; ttl={ttl}")).ok(),
        ),
        Source::Miss => (
            "MISS",
            Some(HeaderValue::from_static("callstats; fwd=miss")),
        ),
        Source::Stale => (
            "MISS",
            Some(HeaderValue::from_static(
                "callstats; fwd=miss; detail=stale",
            )),
        ),
    };
    headers.insert(X_CACHE, HeaderValue::from_static(x_cache));
    if let Some(status) = status {
        headers.insert(CACHE_STATUS, status);
    }
}

/// Whether the request's `If-None-Match` names `etag` (weak comparison) or is `*`.
fn not_modified(req: &HttpRequest, etag: ETag) -> bool {
    match IfNoneMatch::parse(req) {
        Ok(IfNoneMatch::Any) => true,
        Ok(IfNoneMatch::Items(tags)) => {
            let ours = EntityTag::new_weak(etag.opaque());
            tags.iter().any(|tag| tag.weak_eq(&ours))
        }
        // A header that is absent or does not parse matches nothing.
        Err(_) => false,
    }
}

/// A body's validator: its `ETag`, and that tag as the header shows it.
pub(crate) struct Validator {
    etag: ETag,
    header: Option<HeaderValue>,
}

impl Validator {
    /// The validator `etag`, its header written now (the document, problem types).
    pub(crate) fn of(etag: ETag) -> Self {
        Self {
            etag,
            header: HeaderValue::from_bytes(&etag.shown()).ok(),
        }
    }

    /// A cached entry's validator, its header written once with the entry: a slice of the
    /// entry's bytes, neither formatted nor copied per request.
    pub(crate) fn of_entry(entry: &CachedAnswer) -> Self {
        Self {
            etag: entry.etag,
            header: HeaderValue::from_maybe_shared(entry.shown_etag()).ok(),
        }
    }
}

/// A representation of `body` whose validator is `validator`: `304 Not Modified` with no body
/// when the client already holds it, else 200 with the body in the coding the client asked
/// for. Both carry `ETag`, `cache_control` and `vary`. Only a compressed form is awaited.
pub(crate) async fn representation(
    req: &HttpRequest,
    compressed: &Compressed,
    body: &Bytes,
    validator: Validator,
    cache_control: HeaderValue,
    vary: Vary,
) -> HttpResponse {
    let etag = validator.etag;
    if not_modified(req, etag) {
        let response = HttpResponse::NotModified().finish();
        return validated(response, validator, cache_control, vary);
    }
    match Coding::negotiate(req) {
        Coding::Identity => {
            let response = bytes_response(StatusCode::OK, body.clone());
            validated(response, validator, cache_control, vary)
        }
        coding @ (Coding::Gzip | Coding::Brotli) => {
            let form = compressed.get(etag, body, coding).await;
            let mut response =
                bytes_response(StatusCode::OK, form.clone().unwrap_or_else(|| body.clone()));
            if let Some(name) = form.and(coding.header()) {
                response
                    .headers_mut()
                    .insert(CONTENT_ENCODING, HeaderValue::from_static(name));
            }
            validated(response, validator, cache_control, vary)
        }
    }
}

/// `response` with its validator, `Cache-Control` and `Vary`.
fn validated(
    mut response: HttpResponse,
    validator: Validator,
    cache_control: HeaderValue,
    vary: Vary,
) -> HttpResponse {
    let headers = response.headers_mut();
    if let Some(value) = validator.header {
        headers.insert(ETAG, value);
    }
    headers.insert(CACHE_CONTROL, cache_control);
    headers.insert(VARY, vary.0);
    response
}

/// What a representation's `Vary` names.
#[derive(Debug, Clone)]
pub(crate) struct Vary(HeaderValue);

impl Vary {
    /// A body that depends on `Accept-Encoding` alone (the document, problem types).
    pub(crate) const ENCODING: Self = Self(HeaderValue::from_static("accept-encoding"));
    /// A data answer: its representation (JSON, CSV or 406) follows `Accept` too, and what it
    /// holds follows the key (its scopes choose the KPI view and whether it is a 200 at all,
    /// its pinned domain whether the `Origin` is refused), so a cache shared by two keys (or
    /// two sites using one key) keeps an answer apart for each.
    pub(crate) const DATA: Self = Self(HeaderValue::from_static(
        "accept, accept-encoding, authorization, x-api-key, origin",
    ));
}

/// `Content-Type` of a CSV answer (RFC 4180, with its header row).
pub(crate) const CSV: &str = "text/csv; charset=utf-8; header=present";

/// Makes `response`, a 200 or 304 of a CSV body, say so: `Content-Type` (on a 200: a 304 has
/// no body) and `Content-Disposition: attachment; filename="…"`.
pub(crate) fn csv_download(response: &mut HttpResponse, file_name: &str) {
    let is_body = response.status() == StatusCode::OK;
    let headers = response.headers_mut();
    if is_body {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(CSV));
    }
    // The file names are made of the endpoint's path, dates and digits: always a header value.
    if let Ok(value) = HeaderValue::try_from(format!("attachment; filename=\"{file_name}\"")) {
        headers.insert(CONTENT_DISPOSITION, value);
    }
}

/// `Cache-Control` of a data answer: private to the partner, fresh for what is left of the entry.
pub(crate) fn private_max_age(seconds: u32) -> HeaderValue {
    HeaderValue::try_from(format!("private, max-age={seconds}"))
        .unwrap_or(HeaderValue::from_static("no-cache"))
}

/// Marks a 500 whose handler failed, or a 503 whose dependency did: the request observer logs
/// the cause, once, with the request id.
pub(crate) struct FailureCause(pub(crate) String);
