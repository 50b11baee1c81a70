//! Writing answers: JSON bodies, the headers every API response carries, and the mark that
//! tells the request observer to log a failure's cause.

use std::sync::LazyLock;

use actix_web::http::StatusCode;
use actix_web::http::header::{
    CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_ENCODING, CONTENT_TYPE, ETAG, EntityTag,
    Header as _, HeaderMap, HeaderName, HeaderValue, IfNoneMatch, VARY,
};
use actix_web::{HttpRequest, HttpResponse};
use bytes::{Bytes, BytesMut};
use callstats_application::{CacheStatus, ETag};
use callstats_domain::access::QuotaStatus;
use callstats_domain::limits::DayBudgetStatus;
use serde::Serialize;

use crate::encoding::{Coding, Compressed};
use crate::error::ErrorBody;
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
    // The five quota values are written into one buffer, each a slice of it: one allocation
    // instead of five, and no formatter. Measured with `cargo xtask load`, cached /operators:
    // 100,031 requests/s (0.79 of the bare baseline) with a `format!` and an allocation per
    // value, 107,293 (0.81) this way with the per-second tables below and `ETag::shown`; the
    // service before these headers: 106,048 (0.85).
    let mut values = HeaderValues(BytesMut::with_capacity(160));
    let (mut l, mut r, mut t) = (
        itoa::Buffer::new(),
        itoa::Buffer::new(),
        itoa::Buffer::new(),
    );
    let limit = l.format(quota.limit).as_bytes();
    let remaining = r.format(quota.remaining).as_bytes();
    let reset = t.format(quota.reset_seconds).as_bytes();
    values.insert(headers, X_RATELIMIT_LIMIT, &[limit]);
    values.insert(headers, X_RATELIMIT_REMAINING, &[remaining]);
    values.insert(headers, X_RATELIMIT_RESET, &[reset]);
    let (mut dl, mut dr, mut dt) = (
        itoa::Buffer::new(),
        itoa::Buffer::new(),
        itoa::Buffer::new(),
    );
    let days = days.map(|days| {
        (
            dl.format(days.limit).as_bytes(),
            dr.format(days.remaining).as_bytes(),
            dt.format(days.reset_seconds).as_bytes(),
        )
    });
    values.extend(&[b"\"minute\";q=", limit, b";w=60"]);
    if let Some((days_limit, _, _)) = days {
        values.extend(&[b", \"days\";q=", days_limit, b";w=60"]);
    }
    values.insert(headers, RATELIMIT_POLICY, &[]);
    values.extend(&[b"\"minute\";r=", remaining, b";t=", reset]);
    if let Some((_, days_remaining, days_reset)) = days {
        values.extend(&[b", \"days\";r=", days_remaining, b";t=", days_reset]);
    }
    values.insert(headers, RATELIMIT, &[]);
    let (x_cache, status) = match source {
        Source::Hit { ttl } => (HeaderValue::from_static("HIT"), per_second(&HIT_TTL, ttl)),
        Source::Miss => (
            HeaderValue::from_static("MISS"),
            Some(HeaderValue::from_static("callstats; fwd=miss")),
        ),
        Source::Stale => (
            HeaderValue::from_static("MISS"),
            Some(HeaderValue::from_static(
                "callstats; fwd=miss; detail=stale",
            )),
        ),
    };
    headers.insert(X_CACHE, x_cache);
    if let Some(status) = status {
        headers.insert(CACHE_STATUS, status);
    }
}

/// Header values written one after another into one buffer.
struct HeaderValues(BytesMut);

impl HeaderValues {
    /// Writes `parts` as the next part of the value being made.
    fn extend(&mut self, parts: &[&[u8]]) {
        for part in parts {
            self.0.extend_from_slice(part);
        }
    }

    /// Inserts the value made so far and of `parts` under `name`.
    fn insert(&mut self, headers: &mut HeaderMap, name: HeaderName, parts: &[&[u8]]) {
        self.extend(parts);
        // Digits and ASCII punctuation always make a header value.
        if let Ok(value) = HeaderValue::from_maybe_shared(self.0.split().freeze()) {
            headers.insert(name, value);
        }
    }
}

/// The longest lifetime of a cache entry, in seconds (call statistics: 10 minutes).
const LONGEST_TTL: u32 = 600;

/// HeaderValues that depend only on an entry's seconds left, made once for every second up to
/// [`LONGEST_TTL`]: every answer would otherwise format them anew.
struct ValuesBySecond {
    prefix: &'static str,
    values: LazyLock<Vec<HeaderValue>>,
}

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
    let made = usize::try_from(seconds)
        .ok()
        .and_then(|i| table.values.get(i).cloned());
    made.or_else(|| HeaderValue::try_from(format!("{}{seconds}", table.prefix)).ok())
}

/// Whether the request's `If-None-Match` names `etag` (weak comparison) or is `*`.
fn not_modified(req: &HttpRequest, etag: ETag) -> bool {
    if !req.headers().contains_key(IfNoneMatch::name()) {
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

/// A representation of `body` whose validator is `etag`: `304 Not Modified` with no body when
/// the client already holds it, else 200 with the body in the coding the client asked for.
/// Both carry `ETag`, `cache_control` and `vary`.
pub(crate) async fn representation(
    req: &HttpRequest,
    compressed: &Compressed,
    body: &Bytes,
    (etag, cache_control): (ETag, HeaderValue),
    vary: Vary,
) -> HttpResponse {
    let mut response = if not_modified(req, etag) {
        HttpResponse::NotModified().finish()
    } else {
        let coding = Coding::negotiate(req);
        let form = compressed.get(etag, body, coding).await;
        let mut response =
            bytes_response(StatusCode::OK, form.clone().unwrap_or_else(|| body.clone()));
        if let Some(name) = form.and(coding.header()) {
            response
                .headers_mut()
                .insert(CONTENT_ENCODING, HeaderValue::from_static(name));
        }
        response
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_bytes(&etag.shown()) {
        headers.insert(ETAG, value);
    }
    headers.insert(CACHE_CONTROL, cache_control);
    headers.insert(VARY, HeaderValue::from_static(vary.0));
    response
}

/// What a representation's `Vary` names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vary(&'static str);

impl Vary {
    /// A body that depends on `Accept-Encoding` alone (the document, problem types).
    pub(crate) const ENCODING: Self = Self("accept-encoding");
    /// A data answer: its representation (JSON, CSV or 406) follows `Accept` too.
    pub(crate) const ACCEPT_AND_ENCODING: Self = Self("accept, accept-encoding");
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
