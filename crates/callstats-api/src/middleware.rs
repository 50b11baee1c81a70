//! Wraps every request: assigns a request id, adds the headers a JSON API should carry, turns
//! framework errors into JSON, and writes one log line per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use actix_web::HttpMessage as _;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::error::InternalError;
use actix_web::http::StatusCode;
use actix_web::http::header::{CACHE_CONTROL, HeaderName, HeaderValue, X_CONTENT_TYPE_OPTIONS};
use actix_web::middleware::Next;

use crate::error::ErrorBody;
use crate::pipeline::{X_CACHE, json};

/// The id of one request, in its extensions and in the `X-Request-Id` response header.
#[derive(Debug, Clone)]
pub(crate) struct RequestId(pub(crate) String);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_request_id() -> RequestId {
    // Process start (seconds) and a counter: unique per process, sortable, and no randomness.
    static START: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    RequestId(format!(
        "{:x}-{:06x}",
        *START,
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Longest request target (path and query) served; no valid request comes near it.
pub(crate) const MAX_URI_BYTES: usize = 8 * 1024;
/// Most bytes of header names and values in one request.
pub(crate) const MAX_HEADER_BYTES: usize = 16 * 1024;

/// 414 or 431 for a request head over our bounds. actix-http's own bound (128 KiB for the
/// whole head) answers larger ones before they get here, without a body.
fn oversized(req: &ServiceRequest) -> Option<(StatusCode, String)> {
    let uri = req
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if uri > MAX_URI_BYTES {
        return Some((
            StatusCode::URI_TOO_LONG,
            format!("request target longer than {MAX_URI_BYTES} bytes"),
        ));
    }
    let headers = req.headers().iter().fold(0_usize, |sum, (name, value)| {
        sum.saturating_add(name.as_str().len())
            .saturating_add(value.len())
    });
    (headers > MAX_HEADER_BYTES).then(|| {
        (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("request headers longer than {MAX_HEADER_BYTES} bytes in all"),
        )
    })
}

pub(crate) async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let request_id = next_request_id();
    req.extensions_mut().insert(request_id.clone());
    let (method, path) = (req.method().clone(), req.path().to_owned());

    let outcome = match oversized(&req) {
        Some((status, message)) => {
            Ok(req.into_response(json(status, &ErrorBody::new(message)).map_into_right_body()))
        }
        None => next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body),
    };
    let mut response: ServiceResponse<EitherBody<_>> = match outcome {
        Ok(response) => response,
        Err(err) => {
            // Only the framework fails this way (our handlers always answer): keep the
            // status, make the body JSON like every other.
            let status = err.as_response_error().status_code();
            tracing::warn!(request_id = request_id.0, method = %method, path, status = status.as_u16(), error = %err, "request");
            let body = json(status, &ErrorBody::new(err.to_string()));
            return Err(InternalError::from_response(err.to_string(), body).into());
        }
    };

    let headers = response.headers_mut();
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Partner data must not be kept by shared caches or browsers.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(value) = HeaderValue::from_str(&request_id.0) {
        headers.insert(HeaderName::from_static("x-request-id"), value);
    }
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    let route = response
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    metrics::counter!("callstats_http_requests_total", "route" => route.clone(), "status" => status.to_string())
        .increment(1);
    metrics::histogram!("callstats_http_request_duration_seconds", "route" => route)
        .record(elapsed.as_secs_f64());
    let cache = response
        .headers()
        .get(X_CACHE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_owned();
    tracing::info!(
        request_id = request_id.0,
        method = %method,
        path,
        status,
        latency_ms = elapsed.as_secs_f64() * 1000.0,
        cache,
        "request"
    );
    Ok(response)
}
