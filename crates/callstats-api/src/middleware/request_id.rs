//! The id of each request.

use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::http::header::{HeaderName, HeaderValue};

pub(super) const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of one request, in its log lines and in the `X-Request-Id` response header:
/// process start (seconds) and a counter, in hex. Unique per process, sortable, and no
/// randomness. Formatted once, when the request arrives: its span, its log line and its
/// header all use that text.
#[derive(Debug)]
pub(super) struct RequestId(HeaderValue);

impl RequestId {
    pub(super) fn next() -> Self {
        static START: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let sequence = NEXT.fetch_add(1, Ordering::Relaxed);
        let text = format!("{:x}-{sequence:06x}", *START);
        // Hex digits and a hyphen: always a valid header value.
        Self(HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static("-")))
    }

    pub(super) fn as_str(&self) -> &str {
        self.0.to_str().unwrap_or("-")
    }

    pub(super) fn header_value(&self) -> HeaderValue {
        self.0.clone()
    }
}
