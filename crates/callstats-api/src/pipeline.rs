//! The one path every API request takes: admission (key, Origin, quota, scope), parameters,
//! cache or single-flight computation, and the headers every response carries.

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, web};
use bytes::Bytes;
use callstats_domain::DomainError;
use callstats_domain::access::QuotaStatus;
use callstats_domain::params::QueryParams;
use callstats_domain::request::{ApiRequest, Endpoint};
use callstats_domain::scope::KpiView;
use callstats_domain::service::Caller;
use futures::FutureExt as _;
use serde::Serialize;

use crate::ApiState;
use crate::error::{ErrorBody, error_response};
use crate::middleware::RequestId;

pub(crate) const JSON: &str = "application/json; charset=utf-8";
pub(crate) const X_RATELIMIT_LIMIT: &str = "x-ratelimit-limit";
pub(crate) const X_RATELIMIT_REMAINING: &str = "x-ratelimit-remaining";
pub(crate) const X_RATELIMIT_RESET: &str = "x-ratelimit-reset";
pub(crate) const X_CACHE: &str = "x-cache";

/// Whether the body came from the response cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheStatus {
    Hit,
    Miss,
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

pub(crate) const INTERNAL_ERROR_BODY: &[u8] = br#"{"error":"internal server error"}"#;

pub(crate) fn bytes_response(status: StatusCode, bytes: Bytes) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((CONTENT_TYPE, JSON))
        .body(bytes)
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
    outcome.unwrap_or_else(|panic| internal_error(&req, &panic_message(panic.as_ref())))
}

/// Serves the OpenAPI document, counted against the per-client-IP quota.
pub(crate) async fn serve_document(state: web::Data<ApiState>, req: HttpRequest) -> HttpResponse {
    let quota = state
        .access
        .count_anonymous(&client_ip(&req, state.trust_proxy))
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
    outcome.unwrap_or_else(|panic| internal_error(&req, &panic_message(panic.as_ref())))
}

async fn admit_and_answer(
    state: &ApiState,
    req: &HttpRequest,
    endpoint: Option<Endpoint>,
) -> HttpResponse {
    let client_ip = client_ip(req, state.trust_proxy);
    let caller = Caller {
        authorization: header(req, "authorization"),
        x_api_key: header(req, "x-api-key"),
        origin: header(req, "origin"),
        client_ip: &client_ip,
    };
    // Unknown paths need a valid key but no scope: they are checked like /ping.
    let admission = state
        .access
        .admit(&caller, endpoint.unwrap_or(Endpoint::Ping))
        .await;
    if let Err(DomainError::RateLimited(_)) = &admission.key {
        metrics::counter!("callstats_quota_rejections_total").increment(1);
    }
    let (mut response, cache) = match (admission.key, endpoint) {
        (Err(err), _) => (error_response(&err), CacheStatus::Miss),
        (Ok(_), None) => (not_routed(req), CacheStatus::Miss),
        (Ok(key), Some(Endpoint::Ping)) => (
            json(StatusCode::OK, &state.access.ping(&key)),
            CacheStatus::Miss,
        ),
        (Ok(key), Some(endpoint)) => {
            let view = KpiView::for_scopes(key.scopes).unwrap_or(KpiView::Aggregate);
            match answer(state, req, endpoint, view).await {
                Ok((bytes, cache)) => (bytes_response(StatusCode::OK, bytes), cache),
                Err(err) => (error_response(&err), CacheStatus::Miss),
            }
        }
    };
    set_headers(response.headers_mut(), &admission.quota, cache);
    response
}

/// Parses the parameters, then serves the cached bytes or computes them once.
async fn answer(
    state: &ApiState,
    req: &HttpRequest,
    endpoint: Endpoint,
    view: KpiView,
) -> Result<(Bytes, CacheStatus), DomainError> {
    let query = QueryParams::new(
        form_urlencoded::parse(req.query_string().as_bytes())
            .into_owned()
            .collect(),
    );
    let request = ApiRequest::parse(endpoint, &query, req.match_info().get("month"), view)?
        .ok_or_else(|| DomainError::NotFound(format!("no such endpoint: {}", req.path())))?;
    let key = request.cache_key();
    if let Some(bytes) = state.cache.get(&key).await {
        metrics::counter!("callstats_cache_lookups_total", "result" => "hit").increment(1);
        return Ok((bytes, CacheStatus::Hit));
    }
    metrics::counter!("callstats_cache_lookups_total", "result" => "miss").increment(1);
    let bytes = state
        .flights
        .run(&key, || compute_once(state, &request, &key))
        .await?;
    Ok((bytes, CacheStatus::Miss))
}

/// How long one replica may hold the right to compute an entry: past the upstream's whole
/// deadline, so a slow computation is not duplicated.
const COMPUTE_LOCK: Duration = Duration::from_secs(25);
/// How often a replica waiting for another's result looks for it.
const WAIT_POLL: Duration = Duration::from_millis(50);

/// Computes an entry, unless another replica already is: then waits for its bytes, taking over
/// if its lock goes away without a result (it failed or died).
async fn compute_once(
    state: &ApiState,
    request: &ApiRequest,
    key: &str,
) -> Result<Bytes, DomainError> {
    let deadline = Instant::now() + COMPUTE_LOCK;
    let locked = loop {
        if state.cache.try_lock(key, COMPUTE_LOCK).await {
            break true;
        }
        if let Some(bytes) = state.cache.get(key).await {
            return Ok(bytes);
        }
        if Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(WAIT_POLL).await;
    };
    // Whoever held the lock before (another replica, or a run of this one that finished between
    // our miss and here) may have stored the entry meanwhile: then it is not computed again.
    if let Some(bytes) = state.cache.get(key).await {
        if locked {
            state.cache.unlock(key).await;
        }
        return Ok(bytes);
    }
    let result = compute(state, request, key).await;
    if locked {
        state.cache.unlock(key).await;
    }
    result
}

async fn compute(state: &ApiState, request: &ApiRequest, key: &str) -> Result<Bytes, DomainError> {
    let body = state.stats.answer(request).await?;
    // The bodies are plain structs with string keys: serialising them cannot fail, so this
    // branch only guards against a future type that could.
    let bytes = Bytes::from(serde_json::to_vec(&body).map_err(|err| {
        tracing::error!(error = %err, "could not serialise a response body");
        DomainError::StoreUnavailable
    })?);
    state
        .cache
        .put(key, bytes.clone(), request.cache_ttl())
        .await;
    Ok(bytes)
}

/// 405 with `Allow: GET` for a known path asked with another method, 404 otherwise.
fn not_routed(req: &HttpRequest) -> HttpResponse {
    let path = req.path();
    // The probes at the root are known paths too (schemathesis's unsupported-method check).
    let known = matches!(path, "/healthz" | "/readyz")
        || path.strip_prefix("/api/v1").is_some_and(|rest| {
            rest == "/openapi.json"
                || Endpoint::ALL
                    .iter()
                    .any(|e| match e.path().strip_suffix("{month}") {
                        Some(prefix) => rest
                            .strip_prefix(prefix)
                            .is_some_and(|m| !m.is_empty() && !m.contains('/')),
                        None => rest == e.path(),
                    })
        });
    if known {
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

/// The rate-limit and cache headers every API response carries.
pub(crate) fn set_headers(headers: &mut HeaderMap, quota: &QuotaStatus, cache: CacheStatus) {
    for (name, value) in [
        (X_RATELIMIT_LIMIT, quota.limit),
        (X_RATELIMIT_REMAINING, quota.remaining),
        (X_RATELIMIT_RESET, quota.reset_seconds),
    ] {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
    let cache = match cache {
        CacheStatus::Hit => "HIT",
        CacheStatus::Miss => "MISS",
    };
    headers.insert(
        HeaderName::from_static(X_CACHE),
        HeaderValue::from_static(cache),
    );
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    // A value that is not visible ASCII cannot be a key or an Origin; "" makes it fail as one.
    req.headers()
        .get(name)
        .map(|value| value.to_str().unwrap_or(""))
}

/// The peer address, or behind a trusted proxy the first `X-Forwarded-For` hop that is an IP.
pub(crate) fn client_ip(req: &HttpRequest, trust_proxy: bool) -> String {
    let forwarded = trust_proxy
        .then(|| header(req, "x-forwarded-for"))
        .flatten()
        .and_then(|value| value.split(',').next())
        .map(str::trim)
        .and_then(|hop| hop.parse::<std::net::IpAddr>().ok());
    forwarded
        .or_else(|| req.peer_addr().map(|addr| addr.ip()))
        .map_or_else(|| "unknown".to_owned(), |ip| ip.to_string())
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// A 500 with a JSON body; the cause goes to the log with the request id, never to the client.
fn internal_error(req: &HttpRequest, cause: &str) -> HttpResponse {
    let request_id = req
        .extensions()
        .get::<RequestId>()
        .map(|id| id.0.clone())
        .unwrap_or_default();
    tracing::error!(
        request_id,
        cause,
        path = req.path(),
        "request handler failed"
    );
    bytes_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        Bytes::from_static(INTERNAL_ERROR_BODY),
    )
}
