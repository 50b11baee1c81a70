//! The headers every response carries, framework errors included.

use actix_web::http::header::{CACHE_CONTROL, HeaderMap, HeaderValue, X_CONTENT_TYPE_OPTIONS};

use super::request_id::X_REQUEST_ID;
use crate::response::add;

/// `nosniff`, the request id and, unless it is a data answer (those say `private, max-age`),
/// `Cache-Control: no-store`.
pub(super) fn common_headers(headers: &mut HeaderMap, request_id: HeaderValue) {
    // Constants: `from_static` checks its text byte by byte when called at run time.
    const NOSNIFF: HeaderValue = HeaderValue::from_static("nosniff");
    const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");
    add(headers, X_CONTENT_TYPE_OPTIONS, NOSNIFF);
    if !headers.contains_key(CACHE_CONTROL) {
        add(headers, CACHE_CONTROL, NO_STORE);
    }
    add(headers, X_REQUEST_ID, request_id);
}
