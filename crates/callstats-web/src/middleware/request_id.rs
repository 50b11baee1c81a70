//! The id of each request: random, in the form of nginx's `$request_id`, and in the log lines
//! and the `X-Request-Id` header of its answer (docs/behaviour.md, "HTTP conventions").

use actix_web::http::header::{HeaderName, HeaderValue};

pub(super) const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of one request, in its log lines and in the `X-Request-Id` response header: 128 bits
/// from the operating system's random generator, as 32 hex digits
/// (`3f9e02d76b0155ca09996a51c2e4b7d8`, the form of nginx's `$request_id`). Random, so that an
/// id tells nothing of the replica's traffic or start time (a counter did) and replicas never
/// issue the same one. Formatted once, when the request arrives: its span, its log line and its
/// header all use that text.
#[derive(Debug)]
pub(super) struct RequestId(String);

impl RequestId {
    pub(super) fn next() -> Self {
        let mut bytes = [0_u8; 16];
        // Should the OS's generator fail, fastrand's (seeded from the clock and the thread)
        // still gives ids that count nothing.
        if getrandom::fill(&mut bytes).is_err() {
            bytes = fastrand::u128(..).to_le_bytes();
        }
        Self(format!("{:032x}", u128::from_be_bytes(bytes)))
    }

    pub(super) fn as_str(&self) -> &str {
        &self.0
    }

    /// The `X-Request-Id` header.
    pub(super) fn into_header_value(self) -> HeaderValue {
        // Hex digits: always a valid header value.
        HeaderValue::try_from(self.0).unwrap_or_else(|_| HeaderValue::from_static("-"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::RequestId;

    #[test]
    fn ids_are_32_hex_digits_that_share_no_process_part_and_never_repeat() {
        let ids: Vec<String> = (0..1_000)
            .map(|_| RequestId::next().as_str().to_owned())
            .collect();
        for id in &ids {
            assert_eq!(id.len(), 32, "{id}");
            assert!(
                id.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')),
                "{id}"
            );
        }
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
        // A process part (a start time, a replica's random prefix) or a counter would repeat
        // the leading or trailing digits of ids made one after the other.
        for part in [0..8, 24..32] {
            let distinct: HashSet<&str> = ids.iter().map(|id| &id[part.clone()]).collect();
            assert!(distinct.len() > 990, "{part:?}: {}", distinct.len());
        }
    }
}
