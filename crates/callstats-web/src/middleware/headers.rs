//! The headers every response carries, framework errors included.

use actix_web::http::header::{CACHE_CONTROL, HeaderMap, HeaderValue, X_CONTENT_TYPE_OPTIONS};

use super::request_id::X_REQUEST_ID;

/// `nosniff`, the request id and, unless it is a data answer (those say `private, max-age`),
/// `Cache-Control: no-store`.
pub(super) fn common_headers(headers: &mut HeaderMap, request_id: HeaderValue) {
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    headers.insert(X_REQUEST_ID, request_id);
}
