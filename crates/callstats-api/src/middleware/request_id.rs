//! The id of each request.

use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::http::header::{HeaderName, HeaderValue};

pub(super) const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of one request, in its log lines and in the `X-Request-Id` response header:
/// process start (seconds) and a counter, in hex. Unique per process, sortable, and no
/// randomness.
#[derive(Debug, Clone, Copy)]
pub(super) struct RequestId {
    start: u64,
    sequence: u64,
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:x}-{:06x}", self.start, self.sequence)
    }
}

impl RequestId {
    pub(super) fn next() -> Self {
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

    pub(super) fn header_value(self) -> Option<HeaderValue> {
        HeaderValue::try_from(self.to_string()).ok()
    }
}
