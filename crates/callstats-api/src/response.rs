//! Writing answers: JSON bodies, the headers every API response carries, and the mark that
//! tells the request observer to log a failure's cause.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use bytes::Bytes;
use callstats_application::CacheStatus;
use callstats_domain::access::QuotaStatus;
use serde::Serialize;

pub(crate) const JSON: &str = "application/json; charset=utf-8";
const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
pub(crate) const X_CACHE: HeaderName = HeaderName::from_static("x-cache");

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

/// The rate-limit and cache headers every API response carries.
pub(crate) fn set_headers(headers: &mut HeaderMap, quota: &QuotaStatus, cache: CacheStatus) {
    headers.insert(X_RATELIMIT_LIMIT, HeaderValue::from(quota.limit));
    headers.insert(X_RATELIMIT_REMAINING, HeaderValue::from(quota.remaining));
    headers.insert(X_RATELIMIT_RESET, HeaderValue::from(quota.reset_seconds));
    let cache = match cache {
        CacheStatus::Hit => "HIT",
        CacheStatus::Miss => "MISS",
    };
    headers.insert(X_CACHE, HeaderValue::from_static(cache));
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
