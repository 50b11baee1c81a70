//! Wraps every request: assigns a request id, adds the headers a JSON API should carry, turns
//! framework errors into JSON, and writes one log line per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::HttpMessage as _;
use actix_web::body::{BodySize, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::error::InternalError;
use actix_web::http::ConnectionType;
use actix_web::http::StatusCode;
use actix_web::http::header::{
    CACHE_CONTROL, CONTENT_LENGTH, HeaderMap, HeaderName, HeaderValue, TRANSFER_ENCODING,
    X_CONTENT_TYPE_OPTIONS,
};
use actix_web::middleware::Next;
use actix_web::{HttpRequest, HttpResponse, ResponseError as _, web};
use bytes::Bytes;

use crate::caller::caller;
use crate::error::{ApiError, ErrorBody};
use crate::response::{FailureCause, Source, X_CACHE, json, set_headers};
use crate::routes::{DOCUMENT, count_document_request};
use crate::{ApiState, PREFIX};

/// The id of one request, in its log lines and in the `X-Request-Id` response header:
/// process start (seconds) and a counter, in hex. Unique per process, sortable, and no
/// randomness.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestId {
    start: u64,
    sequence: u64,
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:x}-{:06x}", self.start, self.sequence)
    }
}

impl RequestId {
    pub(crate) fn next() -> Self {
        static START: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self {
            start: *START,
            sequence: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }

    fn header_value(self) -> Option<HeaderValue> {
        HeaderValue::try_from(self.to_string()).ok()
    }
}

/// Longest request target (path and query) served; no valid request comes near it.
pub(crate) const MAX_URI_BYTES: usize = 8 * 1024;
/// Most bytes of header names and values in one request.
pub(crate) const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Largest request body declared: a GET has none, and none is ever read.
pub(crate) const MAX_BODY_BYTES: u64 = 64 * 1024;

/// What of a request is over our bounds. actix-http's own bound (128 KiB for the whole head)
/// answers larger heads before they get here, without a body.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Oversize {
    /// 414
    Target,
    /// 431
    Headers,
    /// 413
    Body,
}

impl Oversize {
    pub(crate) const fn status(self) -> StatusCode {
        match self {
            Self::Target => StatusCode::URI_TOO_LONG,
            Self::Headers => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Body => StatusCode::PAYLOAD_TOO_LARGE,
        }
    }

    /// The error message of the answer.
    pub(crate) fn message(self) -> String {
        match self {
            Self::Target => format!("request target longer than {MAX_URI_BYTES} bytes"),
            Self::Headers => format!("request headers longer than {MAX_HEADER_BYTES} bytes in all"),
            Self::Body => format!("request body longer than {MAX_BODY_BYTES} bytes"),
        }
    }

    /// What of `req` is over its bound, if anything.
    fn of(req: &ServiceRequest) -> Option<Self> {
        let uri = req
            .uri()
            .path_and_query()
            .map_or(0, |target| target.as_str().len());
        if uri > MAX_URI_BYTES {
            return Some(Self::Target);
        }
        let headers = req.headers().iter().fold(0_usize, |sum, (name, value)| {
            sum.saturating_add(name.as_str().len())
                .saturating_add(value.len())
        });
        if headers > MAX_HEADER_BYTES {
            return Some(Self::Headers);
        }
        let body = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok()?.trim().parse::<u64>().ok());
        body.is_some_and(|length| length > MAX_BODY_BYTES)
            .then_some(Self::Body)
    }
}

/// Refuses an oversized request once it has been admitted like any other of its path, so the
/// answer carries the rate-limit headers: an API path as an unknown one (the key checked and
/// counted; a request that admission refuses gets that refusal instead), the document against
/// the per-client-IP quota, the operations endpoints at the root (which count nothing) as they
/// are.
async fn refuse_oversized(req: &HttpRequest, oversize: Oversize) -> HttpResponse {
    let mut response = json(oversize.status(), &ErrorBody::new(oversize.message()));
    let Some(state) = req.app_data::<web::Data<ApiState>>() else {
        return response;
    };
    let path = req.path();
    let (quota, days) = if path.strip_prefix(PREFIX) == Some(DOCUMENT) {
        match count_document_request(state, req).await {
            Ok(quota) => (quota, None),
            Err(refused) => return refused.error_response(),
        }
    } else if path.starts_with(PREFIX) {
        let served = state
            .answers
            .serve(&caller(req, state.trust_proxy), None)
            .await;
        if let Err(err) = served.reply {
            return ApiError::counted(err, served.quota)
                .with_days(served.days)
                .error_response();
        }
        (served.quota, served.days)
    } else {
        return response;
    };
    set_headers(response.headers_mut(), &quota, days.as_ref(), Source::Miss);
    response
}

/// The request observer: every request of the app goes through it (actix's `from_fn`).
pub(crate) async fn observe(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let request_id = RequestId::next();
    let close = declares_a_body(&req).then(|| UnreadBody(req.take_payload()));
    if let Some(oversize) = Oversize::of(&req) {
        let response = refuse_oversized(req.request(), oversize).await;
        let response = req.into_response(response.map_into_right_body());
        return Ok(closing(finish(response, request_id, started), close));
    }
    // For the log line should the framework fail (both are reference counted, not copied).
    let (method, uri) = (req.method().clone(), req.uri().clone());
    match next.call(req).await {
        Ok(response) => Ok(closing(
            finish(response.map_into_left_body(), request_id, started),
            close,
        )),
        Err(err) => {
            // Only the framework fails this way (our handlers always answer): keep the status,
            // make the body JSON and give it the headers every answer carries.
            let status = err.as_response_error().status_code();
            tracing::warn!(request_id = %request_id, method = method.as_str(), path = uri.path(), status = status.as_u16(), error = %err, "request");
            let mut body = json(status, &ErrorBody::new(err.to_string()));
            common_headers(body.headers_mut(), request_id.header_value());
            Err(InternalError::from_response(err.to_string(), body).into())
        }
    }
}

/// Whether the request says a body follows (`Transfer-Encoding`, or a `Content-Length` above
/// 0). No endpoint reads one.
fn declares_a_body(req: &ServiceRequest) -> bool {
    let headers = req.headers();
    headers.contains_key(TRANSFER_ENCODING)
        || headers
            .get(CONTENT_LENGTH)
            .is_some_and(|length| length.as_bytes() != b"0")
}

/// A request body nobody reads, held (never polled) until its answer is written. actix-http
/// drains a chunked body whose reader is gone once the answer is written, before the next
/// request, so a body that never arrives would hold the connection for ever; a body still held
/// when the answer's last byte is written makes it close the connection instead (after its
/// short linger for the client to hang up). Unread, the body is not taken in past actix-http's
/// payload buffer.
struct UnreadBody(#[expect(dead_code, reason = "held, never read")] actix_web::dev::Payload);

pin_project_lite::pin_project! {
    /// An answer's body, with the request's unread body held until the answer is written.
    pub(crate) struct Answered<B> {
        #[pin]
        body: B,
        unread: Option<UnreadBody>,
    }
}

impl<B: MessageBody> MessageBody for Answered<B> {
    type Error = B::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        self.project().body.poll_next(cx)
    }
}

/// The answer, with the connection closed after it when the request declared a body.
fn closing<B>(
    mut response: ServiceResponse<B>,
    unread: Option<UnreadBody>,
) -> ServiceResponse<Answered<B>> {
    if unread.is_some() {
        response
            .response_mut()
            .head_mut()
            .set_connection_type(ConnectionType::Close);
    }
    response.map_body(|_, body| Answered { body, unread })
}

/// The headers every response carries, framework errors included: `nosniff`, the request id
/// and, unless it is a data answer (those say `private, max-age`), `Cache-Control: no-store`.
fn common_headers(headers: &mut HeaderMap, request_id: Option<HeaderValue>) {
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if let Some(id) = request_id {
        headers.insert(X_REQUEST_ID, id);
    }
}

/// Adds the headers every response carries, counts the request and writes its log line.
fn finish<B>(
    mut response: ServiceResponse<B>,
    request_id: RequestId,
    started: Instant,
) -> ServiceResponse<B> {
    let id_header = request_id.header_value();
    common_headers(response.headers_mut(), id_header.clone());
    let id_text = id_header.as_ref().and_then(|id| id.to_str().ok());
    let status = response.status();
    let elapsed = started.elapsed();
    let request = response.request();
    // The pattern the path belongs to, whatever the method, from actix's own resource map.
    let route = request
        .match_pattern()
        .map_or(metrics::SharedString::const_str("unmatched"), Into::into);
    metrics::counter!("callstats_http_requests_total", "route" => route.clone(), "status" => status.as_str().to_owned())
        .increment(1);
    metrics::histogram!("callstats_http_request_duration_seconds", "route" => route)
        .record(elapsed.as_secs_f64());
    if let Some(FailureCause(cause)) = response.response().extensions().get() {
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(
                request_id = id_text,
                cause = cause.as_str(),
                path = request.path(),
                "request handler failed"
            );
        } else {
            tracing::warn!(
                request_id = id_text,
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
        request_id = id_text,
        method = request.method().as_str(),
        path = request.path(),
        status = status.as_u16(),
        latency_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        cache,
        "request"
    );
    response
}

pub(crate) const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
