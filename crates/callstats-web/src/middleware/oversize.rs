//! The bounds of a request (target, headers, declared body) and the answer past them: 414, 431
//! or 413, given once the request has been admitted like any other of its path. It holds the
//! documented bounds (docs/behaviour.md, "Errors"), which actix-http's one bound on the whole
//! head does not.

use actix_web::dev::ServiceRequest;
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::{HttpRequest, HttpResponse, ResponseError as _, web};
use callstats_application::representation::Acceptable;

use crate::caller::caller;
use crate::document::{count_document_request, keyless};
use crate::error::ApiError;
use crate::problem::{ErrorBody, Problem, error_json};
use crate::response::{Source, set_headers};
use crate::{ApiState, PREFIX};

/// Longest request target (path and query) served; no valid request comes near it.
const MAX_URI_BYTES: usize = 8 * 1024;
/// Most bytes of header names and values in one request.
const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Largest request body declared: a GET has none, and none is ever read.
const MAX_BODY_BYTES: u64 = 64 * 1024;

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
    pub(crate) const fn problem(self) -> Problem {
        match self {
            Self::Target => Problem::UriTooLong,
            Self::Headers => Problem::HeadersTooLarge,
            Self::Body => Problem::ContentTooLarge,
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
    pub(super) fn of(req: &ServiceRequest) -> Option<Self> {
        let uri = req
            .uri()
            .path_and_query()
            .map_or(0, |target| target.as_str().len());
        if uri > MAX_URI_BYTES {
            return Some(Self::Target);
        }
        let header_bytes = req.headers().iter().fold(0_usize, |bytes, (name, value)| {
            bytes
                .saturating_add(name.as_str().len())
                .saturating_add(value.len())
        });
        if header_bytes > MAX_HEADER_BYTES {
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
pub(super) async fn refuse_oversized(req: &HttpRequest, oversize: Oversize) -> HttpResponse {
    let mut response = error_json(oversize.problem(), ErrorBody::new(oversize.message()));
    let Some(state) = req.app_data::<web::Data<ApiState>>() else {
        return response;
    };
    let path = req.path();
    let (quota, days) = if path.strip_prefix(PREFIX).is_some_and(keyless) {
        match count_document_request(state, req).await {
            Ok(quota) => (quota, None),
            Err(refused) => return refused.error_response(),
        }
    } else if path.starts_with(PREFIX) {
        let served = state
            .use_cases
            .serve(&caller(req, state.trust_proxy), None, Acceptable::JSON)
            .await;
        if let Err(err) = served.answer {
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
