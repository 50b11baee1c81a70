//! Writing answers: JSON bodies, the headers every API response carries, and the mark that
//! tells the request observer to log a failure's cause.

use actix_web::http::StatusCode;
use actix_web::http::header::{
    CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, EntityTag, Header as _, HeaderMap,
    HeaderName, HeaderValue, IfNoneMatch, VARY,
};
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use callstats_application::{CacheStatus, ETag};
use callstats_domain::access::QuotaStatus;
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
}

impl Source {
    /// Where an entry with `ttl` seconds left came from.
    pub(crate) const fn of(cache: CacheStatus, ttl: u32) -> Self {
        match cache {
            CacheStatus::Hit => Self::Hit { ttl },
            CacheStatus::Miss => Self::Miss,
        }
    }
}

/// The rate-limit and cache headers every API response that reached admission carries: the
/// `X-RateLimit-*` headers and the IETF draft's `RateLimit-Policy` and `RateLimit` (one policy
/// named "minute"), `X-Cache` and RFC 9211's `Cache-Status`.
pub(crate) fn set_headers(headers: &mut HeaderMap, quota: &QuotaStatus, source: Source) {
    headers.insert(X_RATELIMIT_LIMIT, HeaderValue::from(quota.limit));
    headers.insert(X_RATELIMIT_REMAINING, HeaderValue::from(quota.remaining));
    headers.insert(X_RATELIMIT_RESET, HeaderValue::from(quota.reset_seconds));
    insert_text(
        headers,
        RATELIMIT_POLICY,
        format!("\"minute\";q={};w=60", quota.limit),
    );
    insert_text(
        headers,
        RATELIMIT,
        format!("\"minute\";r={};t={}", quota.remaining, quota.reset_seconds),
    );
    let (x_cache, status) = match source {
        Source::Hit { ttl } => (
            HeaderValue::from_static("HIT"),
            HeaderValue::try_from(format!("callstats; hit; ttl={ttl}")),
        ),
        Source::Miss => (
            HeaderValue::from_static("MISS"),
            Ok(HeaderValue::from_static("callstats; fwd=miss")),
        ),
    };
    headers.insert(X_CACHE, x_cache);
    if let Ok(status) = status {
        headers.insert(CACHE_STATUS, status);
    }
}

/// Digits and ASCII punctuation always make a header value.
fn insert_text(headers: &mut HeaderMap, name: HeaderName, value: String) {
    if let Ok(value) = HeaderValue::try_from(value) {
        headers.insert(name, value);
    }
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
/// Both carry `ETag`, `cache_control` and `Vary: Accept-Encoding`.
pub(crate) async fn representation(
    req: &HttpRequest,
    compressed: &Compressed,
    body: &Bytes,
    etag: ETag,
    cache_control: HeaderValue,
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
    if let Ok(value) = HeaderValue::try_from(etag.to_string()) {
        headers.insert(ETAG, value);
    }
    headers.insert(CACHE_CONTROL, cache_control);
    headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
    response
}

/// `Cache-Control` of a data answer: private to the partner, fresh for what is left of the entry.
pub(crate) fn private_max_age(seconds: u32) -> HeaderValue {
    HeaderValue::try_from(format!("private, max-age={seconds}"))
        .unwrap_or(HeaderValue::from_static("no-cache"))
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
    response.extensions_mut().insert(FailureCause(cause));
    response
}
