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

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::uri::PathAndQuery;
use actix_web::middleware::Next;
use tracing::Instrument as _;

use crate::response::{FailureCause, X_CACHE};
use crate::{negotiation, problem};
use headers::common_headers;
pub(crate) use oversize::Oversize;
use request_id::RequestId;
use unread_body::Answered;

/// Observes one request, which `next` (the app) answers: actix's `from_fn` middleware, wrapped
/// around every route and the default service.
pub(crate) async fn observe<B: MessageBody>(
    mut req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<Answered<EitherBody<B>>>, actix_web::Error> {
    let started = Instant::now();
    let request_id = RequestId::next();
    // Every line logged while the request is served (the adapters' and the work it spawned
    // included: each spawn site carries the span on) names the request. At ERROR level, so
    // that no filter which lets a line through drops the span and with it the id. The
    // observer's own lines are written outside it: they name the id themselves.
    // A root: nothing is entered while a connection's requests are read (so the current span,
    // which `error_span!` would look up as the parent, is always none).
    let span = tracing::error_span!(parent: None, "request", request_id = request_id.as_str());
    let (declares_a_body, oversize) = (
        unread_body::declares_a_body(req.headers()),
        Oversize::of(&req),
    );
    let problem_wanted = negotiation::problem_preferred(req.headers());
    let close = unread_body::take(&mut req, declares_a_body);
    if let Some(oversize) = oversize {
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
    // For the log line should the framework fail.
    let (method, target) = (req.method().clone(), req.uri().path_and_query().cloned());
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
            tracing::warn!(request_id = request_id.as_str(), method = method.as_str(), path = target.as_ref().map_or("", PathAndQuery::path), status = status.as_u16(), error = %err, "request");
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
                request_id = id,
                cause = cause.as_str(),
                path = request.path(),
                "request handler failed"
            );
        } else {
            tracing::warn!(
                request_id = id,
                cause = cause.as_str(),
                path = request.path(),
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
        message = "request",
        request_id = id,
        method = request.method().as_str(),
        path = request.path(),
        status = status.as_u16(),
        latency_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        cache = cache,
    );
    common_headers(response.headers_mut(), request_id.into_header_value());
    response
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use std::future::ready;

    use actix_web::dev::{Service as _, Transform as _, fn_service};
    use actix_web::middleware::from_fn;
    use actix_web::test::TestRequest;

    use super::*;

    /// The lines a test's own subscriber writes.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
        type Writer = Self;
        fn make_writer(&'a self) -> Self {
            self.clone()
        }
    }

    #[actix_web::test]
    async fn a_framework_failure_is_answered_as_json_and_logged_with_its_method_and_path() {
        let lines = Lines::default();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(lines.clone())
            .finish();
        let _default = tracing::subscriber::set_default(subscriber);
        let failing = fn_service(|_: ServiceRequest| {
            ready(Err::<ServiceResponse, _>(
                actix_web::error::ErrorBadRequest("refused by the framework"),
            ))
        });
        let observed = from_fn(observe).new_transform(failing).await.unwrap();
        let request = TestRequest::get()
            .uri("/api/v1/operators?x=1")
            .to_srv_request();
        let Err(err) = observed.call(request).await else {
            panic!("the failure was answered")
        };
        let response = err.error_response();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let content_type = response.headers().get("content-type").unwrap();
        assert!(content_type.as_bytes().starts_with(b"application/json"));
        let id = response
            .headers()
            .get("x-request-id")
            .unwrap()
            .to_str()
            .unwrap();
        let log = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let line = log
            .lines()
            .find(|line| line.contains(&format!("request_id=\"{id}\"")))
            .unwrap_or_else(|| panic!("{log}"));
        for field in [
            "method=\"GET\"",
            "path=\"/api/v1/operators\"",
            "status=400",
            "error=refused by the framework",
        ] {
            assert!(line.contains(field), "{field} in {line}");
        }
    }
}
