//! The id of each request.

use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::http::header::{HeaderName, HeaderValue};
use arrayvec::ArrayString;

const HEX: &[u8; 16] = b"0123456789abcdef";

pub(super) const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of one request, in its log lines and in the `X-Request-Id` response header:
/// process start (seconds), 32 random bits drawn once per process, and a counter, in hex
/// (`6b0155ca-3f9e02d7-09996a`). The start second sorts one process's ids in time; the random
/// part keeps replicas started in the same second apart (without it, two replicas of one
/// deployment issued the same ids); the counter needs no randomness per request. Formatted once,
/// when the request arrives: its span, its log line and its header all use that text.
#[derive(Debug)]
pub(super) struct RequestId(ArrayString<48>);

impl RequestId {
    pub(super) fn next() -> Self {
        static PROCESS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            let start = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            // The OS's generator; should it fail, the clock's nanoseconds still tell processes
            // started in one second apart.
            let random = getrandom::u32().unwrap_or_else(|_| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos())
            });
            format!("{start:x}-{random:08x}-")
        });
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let sequence = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut digits = [b'0'; 16];
        let counter = counter_digits(sequence, &mut digits);
        // At most 16 + 1 + 8 + 1 + 16 characters, all hex digits and hyphens.
        let mut text = ArrayString::new();
        let _ = text.try_push_str(&PROCESS);
        let _ = text.try_push_str(std::str::from_utf8(counter).unwrap_or_default());
        Self(text)
    }

    /// Kept as text: its span, its log line and its header read it without checking it again.
    pub(super) fn as_str(&self) -> &str {
        &self.0
    }

    /// The `X-Request-Id` header.
    pub(super) fn into_header_value(self) -> HeaderValue {
        // Hex digits and hyphens: always a valid header value.
        HeaderValue::from_str(&self.0).unwrap_or_else(|_| HeaderValue::from_static("-"))
    }
}

/// `sequence` as `format!("{sequence:06x}")` writes it, without the formatter, in `digits`.
/// Measured only together with the text log layer, the kept metric handles and the key's form
/// check (`cargo xtask instructions`, cached `/operators`: 62,448 instructions a request before
/// the four, 59,603 after; docs/architecture.md).
fn counter_digits(sequence: u64, digits: &mut [u8; 16]) -> &[u8] {
    let mut length = 0;
    let mut rest = sequence;
    for digit in digits.iter_mut().rev() {
        let nibble = usize::try_from(rest & 0xf).unwrap_or(0);
        *digit = HEX.get(nibble).copied().unwrap_or(b'0');
        rest >>= 4;
        length += 1;
        if rest == 0 && length >= 6 {
            break;
        }
    }
    digits.get(digits.len() - length..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{RequestId, counter_digits};

    #[test]
    fn the_counter_is_written_as_format_writes_it() {
        for sequence in [
            0,
            1,
            0xabc,
            0xff_ffff,
            0x100_0000,
            0x1234_5678_9abc,
            u64::MAX,
        ] {
            let mut digits = [b'0'; 16];
            assert_eq!(
                counter_digits(sequence, &mut digits),
                format!("{sequence:06x}").as_bytes(),
                "{sequence}"
            );
        }
    }

    #[test]
    fn ids_share_their_process_part_and_count_up() {
        let first = RequestId::next();
        let second = RequestId::next();
        let parts =
            |id: &RequestId| -> Vec<String> { id.as_str().split('-').map(str::to_owned).collect() };
        let (a, b) = (parts(&first), parts(&second));
        assert_eq!(a.len(), 3, "{}", first.as_str());
        // The start second, then 32 random bits (8 hex digits) drawn once per process.
        assert_eq!(a[..2], b[..2]);
        assert_eq!(a[1].len(), 8);
        assert!(
            a.iter()
                .all(|part| part.chars().all(|c| c.is_ascii_hexdigit()))
        );
        let count = |parts: &[String]| u64::from_str_radix(&parts[2], 16).unwrap();
        assert!(count(&b) > count(&a));
    }
}
