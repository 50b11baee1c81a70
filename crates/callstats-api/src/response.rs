//! Writing answers: JSON bodies, the headers every API response carries, and the mark that
//! tells the request observer to log a failure's cause.

use std::cell::RefCell;
use std::sync::LazyLock;

use actix_web::http::StatusCode;
use actix_web::http::header::{
    CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_ENCODING, CONTENT_TYPE, ETAG, EntityTag,
    Header as _, HeaderMap, HeaderName, HeaderValue, IfNoneMatch, VARY,
};
use actix_web::{HttpRequest, HttpResponse};
use arrayvec::ArrayVec;
use bytes::Bytes;
use callstats_application::{CacheStatus, ETag, Entry};
use callstats_domain::access::QuotaStatus;
use callstats_domain::limits::DayBudgetStatus;
use serde::Serialize;

use crate::encoding::{Coding, Compressed};
use crate::error::ErrorBody;
use crate::heads::Heads;
use crate::problem::Problem;

pub(crate) const JSON: &str = "application/json; charset=utf-8";
const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
pub(crate) const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
const CACHE_STATUS: HeaderName = HeaderName::from_static("cache-status");

pub(crate) const INTERNAL_ERROR_BODY: &[u8] = br#"{"error":"internal server error"}"#;

// The values every answer carries, made once: `HeaderValue::from_static` checks its text byte
// by byte when it is called at run time (about 5 instructions a byte: 255 a request for the
// content type and `Vary` alone), and not at all in a constant.
const JSON_VALUE: HeaderValue = HeaderValue::from_static(JSON);
const HIT: HeaderValue = HeaderValue::from_static("HIT");
const MISS: HeaderValue = HeaderValue::from_static("MISS");
const FORWARDED_MISS: HeaderValue = HeaderValue::from_static("callstats; fwd=miss");
const FORWARDED_STALE: HeaderValue = HeaderValue::from_static("callstats; fwd=miss; detail=stale");

/// Adds a header the response does not carry yet (debug builds, the tests', check it). actix's
/// `insert` also hands back the values it replaced, the map's whole list of them moved out
/// again; `append` to an absent name does not. Callgrind, cached `/operators` (13 headers added):
/// 51,834 instructions a request with `insert`, 50,797 with this.
pub(crate) fn add(headers: &mut HeaderMap, name: HeaderName, value: HeaderValue) {
    debug_assert!(!headers.contains_key(&name), "{name} added twice");
    headers.append(name, value);
}

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
    add(response.headers_mut(), CONTENT_TYPE, JSON_VALUE);
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
///
/// Only `X-RateLimit-Remaining` (past 600) and `RateLimit` are written per request: the limit
/// and the policy are the key's, kept per thread once made, and every number of seconds comes
/// from a table made once. Measured with `cargo xtask instructions` together with the other
/// changes of its commit (docs/architecture.md, "Tooling").
pub(crate) fn set_headers(
    headers: &mut HeaderMap,
    quota: &QuotaStatus,
    days: Option<&DayBudgetStatus>,
    source: Source,
) {
    let (limit, policy) = policy_values(quota.limit, days.map(|days| days.limit));
    add(headers, X_RATELIMIT_LIMIT, limit);
    let mut remaining = itoa::Buffer::new();
    let remaining = remaining.format(quota.remaining).as_bytes();
    // Digits, copied once: `HeaderValue::from(u32)` formats them again into a growing buffer.
    if let Some(value) =
        listed(&SECONDS, quota.remaining).or_else(|| HeaderValue::from_bytes(remaining).ok())
    {
        add(headers, X_RATELIMIT_REMAINING, value);
    }
    if let Some(value) = per_second(&SECONDS, quota.reset_seconds) {
        add(headers, X_RATELIMIT_RESET, value);
    }
    add(headers, RATELIMIT_POLICY, policy);
    let mut reset = itoa::Buffer::new();
    let reset = reset.format(quota.reset_seconds).as_bytes();
    let (mut dr, mut dt) = (itoa::Buffer::new(), itoa::Buffer::new());
    let state = match days {
        Some(days) => value_of(&[
            b"\"minute\";r=",
            remaining,
            b";t=",
            reset,
            b", \"days\";r=",
            dr.format(days.remaining).as_bytes(),
            b";t=",
            dt.format(days.reset_seconds).as_bytes(),
        ]),
        None => value_of(&[b"\"minute\";r=", remaining, b";t=", reset]),
    };
    if let Some(state) = state {
        add(headers, RATELIMIT, state);
    }
    let (x_cache, status) = match source {
        Source::Hit { ttl } => (HIT, per_second(&HIT_TTL, ttl)),
        Source::Miss => (MISS, Some(FORWARDED_MISS)),
        Source::Stale => (MISS, Some(FORWARDED_STALE)),
    };
    add(headers, X_CACHE, x_cache);
    if let Some(status) = status {
        add(headers, CACHE_STATUS, status);
    }
}

/// A header value of `parts`, one after another, without the formatter: put together on the
/// stack, then copied into the value's one allocation, where a `BytesMut` was grown part by part
/// and frozen (with `X-RateLimit-Remaining` copied from its digits rather than formatted again:
/// the rate-limit and cache headers 2,497 instructions a request before, 2,212 after; callgrind,
/// cached `/operators`).
fn value_of(parts: &[&[u8]]) -> Option<HeaderValue> {
    let mut value = ArrayVec::<u8, 96>::new();
    for part in parts {
        value.try_extend_from_slice(part).ok()?;
    }
    // Digits and ASCII punctuation always make a header value.
    HeaderValue::from_bytes(&value).ok()
}

/// The most (limit, day budget) pairs a thread keeps the headers of: a deployment's keys share
/// a few limits; past it, the headers are made per request.
const MOST_POLICIES: usize = 16;

/// A key's limit and day budget, with its `X-RateLimit-Limit` and `RateLimit-Policy`.
type Policy = ((u32, Option<u32>), HeaderValue, HeaderValue);

thread_local! {
    /// Per worker thread: no lock is taken.
    static POLICIES: RefCell<Vec<Policy>> = const { RefCell::new(Vec::new()) };
}

/// `X-RateLimit-Limit` and `RateLimit-Policy` of a key with `limit` requests a minute and
/// `days_limit` day fetches, made once per thread.
fn policy_values(limit: u32, days_limit: Option<u32>) -> (HeaderValue, HeaderValue) {
    let of = (limit, days_limit);
    POLICIES.with_borrow_mut(|kept| {
        if let Some((_, limit, policy)) = kept.iter().find(|(kept, ..)| *kept == of) {
            return (limit.clone(), policy.clone());
        }
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(limit).as_bytes();
        let mut days = itoa::Buffer::new();
        let policy = match days_limit {
            Some(days_limit) => value_of(&[
                b"\"minute\";q=",
                digits,
                b";w=60, \"days\";q=",
                days.format(days_limit).as_bytes(),
                b";w=60",
            ]),
            None => value_of(&[b"\"minute\";q=", digits, b";w=60"]),
        };
        let made = (
            HeaderValue::from(limit),
            policy.unwrap_or(HeaderValue::from_static("")),
        );
        if kept.len() < MOST_POLICIES {
            kept.push((of, made.0.clone(), made.1.clone()));
        }
        made
    })
}

/// The longest lifetime of a cache entry, in seconds (call statistics: 10 minutes).
const LONGEST_TTL: u32 = 600;

/// HeaderValues that depend only on a number of seconds (an entry's seconds left, a quota
/// window's reset) or a small count, made once for every number up to [`LONGEST_TTL`]: every
/// answer would otherwise format them anew.
struct ValuesBySecond {
    prefix: &'static str,
    values: LazyLock<Vec<HeaderValue>>,
}

static SECONDS: ValuesBySecond = ValuesBySecond {
    prefix: "",
    values: LazyLock::new(|| per_second_values(SECONDS.prefix)),
};

static MAX_AGE: ValuesBySecond = ValuesBySecond {
    prefix: "private, max-age=",
    values: LazyLock::new(|| per_second_values(MAX_AGE.prefix)),
};

static HIT_TTL: ValuesBySecond = ValuesBySecond {
    prefix: "callstats; hit; ttl=",
    values: LazyLock::new(|| per_second_values(HIT_TTL.prefix)),
};

fn per_second_values(prefix: &str) -> Vec<HeaderValue> {
    (0..=LONGEST_TTL)
        .filter_map(|seconds| HeaderValue::try_from(format!("{prefix}{seconds}")).ok())
        .collect()
}

fn per_second(table: &ValuesBySecond, seconds: u32) -> Option<HeaderValue> {
    listed(table, seconds)
        .or_else(|| HeaderValue::try_from(format!("{}{seconds}", table.prefix)).ok())
}

/// The table's value for `seconds`, when it goes that far.
fn listed(table: &ValuesBySecond, seconds: u32) -> Option<HeaderValue> {
    usize::try_from(seconds)
        .ok()
        .and_then(|i| table.values.get(i).cloned())
}

/// Whether the request's `If-None-Match` names `etag` (weak comparison) or is `*`.
fn not_modified(req: &HttpRequest, heads: Heads<'_>, etag: ETag) -> bool {
    if !heads.if_none_match {
        return false;
    }
    match IfNoneMatch::parse(req) {
        Ok(IfNoneMatch::Any) => true,
        Ok(IfNoneMatch::Items(tags)) => {
            let ours = EntityTag::new_weak(etag.opaque());
            tags.iter().any(|tag| tag.weak_eq(&ours))
        }
        // A header that does not parse matches nothing.
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
    pub(crate) fn of_entry(entry: &Entry) -> Self {
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
    (req, heads): (&HttpRequest, Heads<'_>),
    compressed: &Compressed,
    body: &Bytes,
    (validator, cache_control): (Validator, HeaderValue),
    vary: Vary,
) -> HttpResponse {
    let etag = validator.etag;
    if not_modified(req, heads, etag) {
        let response = HttpResponse::NotModified().finish();
        return validated(response, validator, cache_control, vary);
    }
    match Coding::negotiate(req, heads) {
        Coding::Identity => {
            let response = bytes_response(StatusCode::OK, body.clone());
            validated(response, validator, cache_control, vary)
        }
        coding @ (Coding::Gzip | Coding::Brotli) => {
            let form = compressed.get(etag, body, coding).await;
            let mut response =
                bytes_response(StatusCode::OK, form.clone().unwrap_or_else(|| body.clone()));
            if let Some(name) = form.and(coding.header()) {
                add(
                    response.headers_mut(),
                    CONTENT_ENCODING,
                    HeaderValue::from_static(name),
                );
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
        add(headers, ETAG, value);
    }
    add(headers, CACHE_CONTROL, cache_control);
    add(headers, VARY, vary.0);
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
    per_second(&MAX_AGE, seconds).unwrap_or(HeaderValue::from_static("no-cache"))
}

/// Marks a 500 whose handler failed, or a 503 whose dependency did: the request observer logs
/// the cause, once, with the request id.
pub(crate) struct FailureCause(pub(crate) String);

/// A 500 with a generic JSON body; the cause goes to the log, never to the client.
pub(crate) fn internal_error(cause: String) -> HttpResponse {
    let mut response = bytes_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        Bytes::from_static(INTERNAL_ERROR_BODY),
    );
    crate::problem::mark(
        &mut response,
        Problem::Internal,
        ErrorBody::new("internal server error"),
    );
    response.extensions_mut().insert(FailureCause(cause));
    response
}
