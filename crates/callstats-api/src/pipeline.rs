//! The one path every API request takes: the HTTP request read into a caller and its raw
//! parameters, served by the application layer's [`callstats_application::Answers`], and
//! written back with the headers every response carries.

use std::panic::AssertUnwindSafe;
use std::sync::LazyLock;

use actix_web::http::StatusCode;
use actix_web::http::header::{
    AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, ORIGIN,
};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use callstats_application::flight::panic_message;
use callstats_application::{Asked, CacheStatus, Reply};
use callstats_domain::DomainError;
use callstats_domain::access::{ClientAddress, QuotaStatus};
use callstats_domain::params::QueryParams;
use callstats_domain::request::Endpoint;
use callstats_domain::service::Caller;
use futures::FutureExt as _;
use serde::Serialize;

use crate::ApiState;
use crate::error::{ErrorBody, error_response};
use crate::openapi::PREFIX;

pub(crate) const JSON: &str = "application/json; charset=utf-8";
const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
pub(crate) const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");

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

pub(crate) const INTERNAL_ERROR_BODY: &[u8] = br#"{"error":"internal server error"}"#;

pub(crate) fn bytes_response(status: StatusCode, bytes: Bytes) -> HttpResponse {
    let mut response = HttpResponse::with_body(status, bytes).map_into_boxed_body();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    response
}

/// Serves one API endpoint.
pub(crate) async fn serve(
    state: web::Data<ApiState>,
    req: HttpRequest,
    endpoint: Endpoint,
) -> HttpResponse {
    let outcome = AssertUnwindSafe(admit_and_answer(&state, &req, Some(endpoint)))
        .catch_unwind()
        .await;
    outcome.unwrap_or_else(|panic| internal_error(panic_message(panic.as_ref())))
}

/// Serves the OpenAPI document, counted against the per-client-IP quota.
pub(crate) async fn serve_document(state: web::Data<ApiState>, req: HttpRequest) -> HttpResponse {
    let quota = state
        .answers
        .count_anonymous(client_ip(&req, state.trust_proxy))
        .await;
    let mut response = if quota.exceeded {
        error_response(&DomainError::RateLimited(quota))
    } else {
        bytes_response(StatusCode::OK, crate::openapi::document_bytes())
    };
    set_headers(response.headers_mut(), &quota, CacheStatus::Miss);
    response
}

/// Answers a path or method the API does not have: the key is still checked and counted (so
/// the response carries the quota headers), then 405 for a known path, else 404.
pub(crate) async fn unrouted(state: web::Data<ApiState>, req: HttpRequest) -> HttpResponse {
    let outcome = AssertUnwindSafe(admit_and_answer(&state, &req, None))
        .catch_unwind()
        .await;
    outcome.unwrap_or_else(|panic| internal_error(panic_message(panic.as_ref())))
}

async fn admit_and_answer(
    state: &ApiState,
    req: &HttpRequest,
    endpoint: Option<Endpoint>,
) -> HttpResponse {
    let caller = Caller {
        authorization: header(req, &AUTHORIZATION),
        x_api_key: header(req, &X_API_KEY),
        origin: header(req, &ORIGIN),
        client_ip: client_ip(req, state.trust_proxy),
    };
    let query = QueryParams::new(form_urlencoded::parse(req.query_string().as_bytes()));
    let asked = Asked {
        endpoint,
        query: &query,
        path_month: req.match_info().get("month"),
    };
    let served = state.answers.serve(&caller, asked).await;
    let (mut response, cache) = match served.reply {
        Ok(Reply::Key(info)) => (json(StatusCode::OK, &info), CacheStatus::Miss),
        Ok(Reply::Body(bytes, cache)) => (bytes_response(StatusCode::OK, bytes), cache),
        Ok(Reply::Unrouted) => (not_routed(req), CacheStatus::Miss),
        Err(DomainError::Internal(cause)) => (internal_error(cause), CacheStatus::Miss),
        Err(err) => {
            let mut response = error_response(&err);
            if matches!(
                err,
                DomainError::StoreUnavailable(_) | DomainError::UpstreamUnavailable(_)
            ) {
                response
                    .extensions_mut()
                    .insert(FailureCause(err.cause_chain()));
            }
            (response, CacheStatus::Miss)
        }
    };
    set_headers(response.headers_mut(), &served.quota, cache);
    response
}

/// 405 with `Allow: GET` for a known path asked with another method, 404 otherwise.
fn not_routed(req: &HttpRequest) -> HttpResponse {
    let path = req.path();
    // The probes at the root are known paths too (schemathesis's unsupported-method check).
    if route_of(path).is_some() {
        let mut response = json(
            StatusCode::METHOD_NOT_ALLOWED,
            &ErrorBody::new(format!("method {} not allowed: use GET", req.method())),
        );
        response.headers_mut().insert(
            actix_web::http::header::ALLOW,
            HeaderValue::from_static("GET"),
        );
        response
    } else {
        json(
            StatusCode::NOT_FOUND,
            &ErrorBody::new(format!("no such endpoint: {path}")),
        )
    }
}

/// Every route the app serves, as registered: the API's under its prefix, then the probes.
static ROUTES: LazyLock<Vec<String>> = LazyLock::new(|| {
    Endpoint::ALL
        .iter()
        .map(|endpoint| endpoint.path())
        .chain(["/openapi.json"])
        .map(|path| format!("{PREFIX}{path}"))
        .chain(["/healthz".to_owned(), "/readyz".to_owned()])
        .collect()
});

/// The route pattern `path` belongs to (such as `/api/v1/kpi/{month}`), whatever the method:
/// the metrics' `route` label, and what tells a 405 from a 404.
pub(crate) fn route_of(path: &str) -> Option<&'static str> {
    ROUTES
        .iter()
        .find(|pattern| match pattern.strip_suffix("{month}") {
            Some(prefix) => path
                .strip_prefix(prefix)
                .is_some_and(|month| !month.is_empty() && !month.contains('/')),
            None => path == pattern.as_str(),
        })
        .map(String::as_str)
}

/// The rate-limit and cache headers every API response carries.
pub(crate) fn set_headers(headers: &mut HeaderMap, quota: &QuotaStatus, cache: CacheStatus) {
    headers.insert(X_RATELIMIT_LIMIT, number(quota.limit));
    headers.insert(X_RATELIMIT_REMAINING, number(quota.remaining));
    headers.insert(X_RATELIMIT_RESET, number(quota.reset_seconds));
    let cache = match cache {
        CacheStatus::Hit => "HIT",
        CacheStatus::Miss => "MISS",
    };
    headers.insert(X_CACHE, HeaderValue::from_static(cache));
}

/// A number as a header value. Those up to 1,000 (every reset, and the counts of ordinary
/// quotas) are made once and shared, not written out for every response.
fn number(value: u32) -> HeaderValue {
    static SMALL: LazyLock<Vec<HeaderValue>> =
        LazyLock::new(|| (0..=1_000_u32).map(HeaderValue::from).collect());
    usize::try_from(value)
        .ok()
        .and_then(|index| SMALL.get(index))
        .cloned()
        .unwrap_or_else(|| HeaderValue::from(value))
}

fn header<'a>(req: &'a HttpRequest, name: &HeaderName) -> Option<&'a str> {
    // A value that is not visible ASCII cannot be a key or an Origin; "" makes it fail as one.
    req.headers()
        .get(name)
        .map(|value| value.to_str().unwrap_or(""))
}

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The peer address, or behind a trusted proxy the first `X-Forwarded-For` hop that is an IP.
pub(crate) fn client_ip(req: &HttpRequest, trust_proxy: bool) -> ClientAddress {
    let forwarded = trust_proxy
        .then(|| header(req, &X_FORWARDED_FOR))
        .flatten()
        .and_then(|value| value.split(',').next())
        .map(str::trim)
        .and_then(|hop| hop.parse::<std::net::IpAddr>().ok());
    forwarded
        .or_else(|| req.peer_addr().map(|addr| addr.ip()))
        .map_or(ClientAddress::Unknown, ClientAddress::Ip)
}

/// Marks a 500 whose handler failed, or a 503 whose dependency did: the request observer logs
/// the cause, once, with the request id.
pub(crate) struct FailureCause(pub(crate) String);

/// A 500 with a JSON body; the cause goes to the log, never to the client.
fn internal_error(cause: String) -> HttpResponse {
    let mut response = bytes_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        Bytes::from_static(INTERNAL_ERROR_BODY),
    );
    response.extensions_mut().insert(FailureCause(cause));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_the_same_whether_shared_or_written_out() {
        for value in [0, 1, 59, 60, 119, 120, 999, 1_000, 1_001, 65_536, u32::MAX] {
            assert_eq!(number(value).to_str().unwrap(), value.to_string());
        }
    }

    #[test]
    fn every_registered_route_has_its_pattern_and_nothing_else_does() {
        assert_eq!(route_of("/api/v1/operators"), Some("/api/v1/operators"));
        assert_eq!(route_of("/api/v1/kpi/months"), Some("/api/v1/kpi/months"));
        assert_eq!(route_of("/api/v1/kpi/2026-11"), Some("/api/v1/kpi/{month}"));
        assert_eq!(
            route_of("/api/v1/openapi.json"),
            Some("/api/v1/openapi.json")
        );
        assert_eq!(route_of("/healthz"), Some("/healthz"));
        for unknown in [
            "/api/v1/kpi/",
            "/api/v1/kpi/2026-11/x",
            "/api/v1/operators/",
            "/operators",
            "/api/v2/ping",
            "",
        ] {
            assert_eq!(route_of(unknown), None, "{unknown}");
        }
        assert_eq!(ROUTES.len(), Endpoint::ALL.len() + 3);
    }
}
