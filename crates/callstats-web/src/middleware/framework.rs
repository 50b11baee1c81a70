//! Errors of the framework itself, as JSON. It holds the rule that every answer is JSON with
//! the headers every answer carries (docs/behaviour.md, "HTTP conventions"), where actix's own
//! would be plain text; only actix fails a request this way (our handlers always answer).

use actix_web::error::InternalError;
use actix_web::http::StatusCode;

use super::headers::common_headers;
use super::request_id::RequestId;
use crate::problem::{ErrorBody, error_answer};

/// `err` answered with its own `status`, a JSON body (problem details when `problem_wanted`)
/// and the headers every answer carries.
pub(super) fn as_json(
    err: &actix_web::Error,
    status: StatusCode,
    request_id: RequestId,
    problem_wanted: bool,
) -> actix_web::Error {
    let mut body = error_answer(status, ErrorBody::new(err.to_string()), problem_wanted);
    common_headers(body.headers_mut(), request_id.into_header_value());
    InternalError::from_response(err.to_string(), body).into()
}
