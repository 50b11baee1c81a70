//! Errors of the framework itself, as JSON. Only actix fails a request this way (our handlers
//! always answer), and its own answer would be plain text without the headers every answer
//! carries.

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
