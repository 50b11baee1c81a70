//! The request observer: every request goes through [`observe`], which gives it its id and
//! serves it within a span naming it, refuses it past the bounds (`oversize`), turns framework
//! errors into JSON (`framework`), holds a declared body unread (`unread_body`), adds the
//! headers every answer carries (`headers`), and writes the request's log line and metrics.

mod framework;
mod headers;
mod oversize;
mod request_id;
mod request_metrics;
mod unread_body;

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use tracing::Instrument as _;

use crate::response::{FailureCause, X_CACHE};
use crate::{negotiation, problem};
use headers::common_headers;
pub(crate) use oversize::Oversize;
use request_id::RequestId;
pub(crate) use request_metrics::recorder_installed;

/// The request observer: every request of the app goes through it (actix's `from_fn`).
pub(crate) async fn observe(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let request_id = RequestId::next();
    // Every line logged while the request is served (the adapters' and the work it spawned
    // included: each spawn site carries the span on) names the request. At ERROR level, so
    // that no filter which lets a line through drops the span and with it the id. The
    // observer's own lines are written outside it: they name the id themselves.
    let span = tracing::error_span!("request", request_id = ?Bare(request_id.as_str()));
    let close = unread_body::take(&mut req);
    let problem_wanted = negotiation::problem_preferred(req.headers());
    if let Some(oversize) = Oversize::of(&req) {
        let response = oversize::refuse_oversized(req.request(), oversize)
            .instrument(span)
            .await;
        let response = req.into_response(response.map_into_right_body());
        return Ok(unread_body::closing(
            finish(
                problem::negotiate(response, problem_wanted),
                request_id,
                started,
            ),
            close,
        ));
    }
    // For the log line should the framework fail (both are reference counted, not copied).
    let (method, uri) = (req.method().clone(), req.uri().clone());
    match next.call(req).instrument(span).await {
        Ok(response) => Ok(unread_body::closing(
            finish(
                problem::negotiate(response.map_into_left_body(), problem_wanted),
                request_id,
                started,
            ),
            close,
        )),
        Err(err) => {
            let status = err.as_response_error().status_code();
            tracing::warn!(request_id = %request_id.as_str(), method = %method.as_str(), path = %uri.path(), status = status.as_u16(), error = %err, "request");
            Err(framework::as_json(&err, status, request_id, problem_wanted))
        }
    }
}

/// Adds the headers every response carries, counts the request and writes its log line.
fn finish<B>(
    mut response: ServiceResponse<B>,
    request_id: RequestId,
    started: Instant,
) -> ServiceResponse<B> {
    let id = request_id.as_str();
    let status = response.status();
    let elapsed = started.elapsed();
    let request = response.request();
    request_metrics::record(request, status, elapsed);
    if let Some(FailureCause(cause)) = response.response().extensions().get() {
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(
                request_id = %id,
                cause = cause.as_str(),
                path = %request.path(),
                "request handler failed"
            );
        } else {
            tracing::warn!(
                request_id = %id,
                cause = cause.as_str(),
                path = %request.path(),
                status = status.as_u16(),
                "dependency unavailable"
            );
        }
    }
    let cache = response
        .headers()
        .get(X_CACHE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info!(
        request_id = ?Bare(id),
        method = ?Bare(request.method().as_str()),
        path = ?Bare(request.path()),
        status = status.as_u16(),
        latency_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        cache = ?Bare(cache),
        "request"
    );
    common_headers(response.headers_mut(), request_id.into_header_value());
    response
}

/// Text logged as it is, as `%text` logs it, but written straight to the line: `%` goes through
/// `DisplayValue` and the formatter's padding for each field, which cost about 300
/// instructions a field on every request's span and line (callgrind, cached `/operators`).
struct Bare<'a>(&'a str);

impl std::fmt::Debug for Bare<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
