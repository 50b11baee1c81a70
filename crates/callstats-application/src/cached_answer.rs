//! What the response cache keeps for one answer: the JSON body, its validator (the `ETag`
//! partners send back in `If-None-Match`) and the moment the entry stops being served, so that
//! every replica reading it (from Redis or from its own memory) can tell how many seconds it has
//! left (`Cache-Control: max-age`). Both are worked out once, when the body is computed, not
//! per request.
//!
//! Stored as `[TAG, VERSION, expiry (unix ms, 8 bytes big-endian), validator (8 bytes
//! big-endian), the validator as its `ETag` header shows it (20 bytes), body…]`. The body and
//! the header are the bytes exactly as sent, written once per entry: reading an entry copies
//! nothing, and a cached answer's `ETag` is a slice of the entry rather than formatted and
//! allocated per request. An entry of another layout (another version, or a bare body written before
//! entries had a header) reads as a miss, never as an error.

use std::fmt;
use std::time::Duration;

use bytes::{BufMut as _, Bytes, BytesMut};
use sha2::{Digest as _, Sha256};
use time::OffsetDateTime;

/// First byte of an entry: never `{`, so a bare JSON body is never taken for an entry.
const TAG: u8 = 0xCE;
const VERSION: u8 = 2;
/// Tag, version, expiry and validator.
const FIXED_LEN: usize = 18;
/// `W/"<16 hex digits>"`.
const SHOWN_LEN: usize = 20;
const HEADER_LEN: usize = FIXED_LEN + SHOWN_LEN;

/// A weak validator of a body: the first 64 bits of its SHA-256, the same for every encoding
/// of that body. Shown as `W/"<16 lower-case hex digits>"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ETag(pub u64);

impl ETag {
    /// The validator of `body` (the uncompressed JSON bytes).
    #[must_use]
    pub fn of(body: &[u8]) -> Self {
        let digest = Sha256::digest(body);
        let mut first = [0_u8; 8];
        first.copy_from_slice(digest.get(..8).unwrap_or(&[0; 8]));
        Self(u64::from_be_bytes(first))
    }

    /// The opaque tag, without `W/` and quotes.
    #[must_use]
    pub fn opaque(&self) -> String {
        format!("{:016x}", self.0)
    }

    /// The header value, `W/"<16 lower-case hex digits>"`, written without the formatter (every
    /// data answer carries one).
    #[must_use]
    pub fn shown(&self) -> [u8; 20] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = *b"W/\"0000000000000000\"";
        for (i, digit) in out.iter_mut().skip(3).take(16).enumerate() {
            let shift = 60_usize.saturating_sub(i.saturating_mul(4));
            let nibble = usize::try_from((self.0 >> shift) & 0xf).unwrap_or(0);
            *digit = HEX.get(nibble).copied().unwrap_or(b'0');
        }
        out
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "W/\"{:016x}\"", self.0)
    }
}

/// One cached answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedAnswer {
    pub body: Bytes,
    pub etag: ETag,
    /// `etag` as the `ETag` header shows it.
    shown_etag: Bytes,
    /// When the entry stops being served, in milliseconds since the Unix epoch.
    expires_at_ms: u64,
    /// Computed from call days answered past their lifetime (their refetch failed): never
    /// stored, so never part of the stored form.
    stale: bool,
}

impl CachedAnswer {
    /// A fresh entry for `body`, served for `ttl` from `now`.
    #[must_use]
    pub fn new(body: Bytes, ttl: Duration, now: OffsetDateTime) -> Self {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let etag = ETag::of(&body);
        Self {
            etag,
            shown_etag: Bytes::copy_from_slice(&etag.shown()),
            body,
            expires_at_ms: unix_ms(now).saturating_add(ttl_ms),
            stale: false,
        }
    }

    /// The same entry, computed from call days answered stale.
    #[must_use]
    pub const fn stale(mut self) -> Self {
        self.stale = true;
        self
    }

    /// Whether it was computed from call days answered stale.
    #[must_use]
    pub const fn is_stale(&self) -> bool {
        self.stale
    }

    /// The `ETag` header's value, `W/"<16 lower-case hex digits>"` (shared, not copied).
    #[must_use]
    pub fn shown_etag(&self) -> Bytes {
        self.shown_etag.clone()
    }

    /// The whole seconds left at `now` before the entry expires (0 once it has).
    #[must_use]
    pub fn seconds_left(&self, now: OffsetDateTime) -> u32 {
        let left = self.expires_at_ms.saturating_sub(unix_ms(now)) / 1000;
        u32::try_from(left).unwrap_or(u32::MAX)
    }

    /// The stored form.
    #[must_use]
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(HEADER_LEN.saturating_add(self.body.len()));
        out.put_u8(TAG);
        out.put_u8(VERSION);
        out.put_u64(self.expires_at_ms);
        out.put_u64(self.etag.0);
        out.put_slice(&self.shown_etag);
        out.put_slice(&self.body);
        out.freeze()
    }

    /// Reads a stored entry; `None` for anything else.
    #[must_use]
    pub fn decode(stored: &Bytes) -> Option<Self> {
        let header = stored.get(..HEADER_LEN)?;
        let (&[TAG, VERSION], rest) = header.split_first_chunk::<2>()? else {
            return None;
        };
        let (expires, rest) = rest.split_first_chunk::<8>()?;
        let (etag, _) = rest.split_first_chunk::<8>()?;
        Some(Self {
            body: stored.slice(HEADER_LEN..),
            // Only this version's writer makes entries of this tag and version, so these are
            // `etag`'s bytes (the web layer still checks they make a header value).
            shown_etag: stored.slice(FIXED_LEN..HEADER_LEN),
            etag: ETag(u64::from_be_bytes(*etag)),
            expires_at_ms: u64::from_be_bytes(*expires),
            stale: false,
        })
    }
}

fn unix_ms(at: OffsetDateTime) -> u64 {
    // Seconds and milliseconds, rather than the nanoseconds divided, which takes a 128-bit
    // division. Before 1970: 0.
    u64::try_from(at.unix_timestamp()).map_or(0, |seconds| {
        seconds
            .saturating_mul(1000)
            .saturating_add(u64::from(at.millisecond()))
    })
}

#[cfg(test)]
mod tests {

    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2026-11-21 06:15:30.250 UTC);

    /// An answer of `body` made at [`NOW`], fresh for `seconds`.
    fn answer(body: &'static [u8], seconds: u64) -> CachedAnswer {
        CachedAnswer::new(Bytes::from_static(body), Duration::from_secs(seconds), NOW)
    }

    #[test]
    fn an_entry_reads_back_whole_with_its_validator_and_lifetime() {
        let entry = answer(b"{\"operators\":[]}", 60);
        let back = CachedAnswer::decode(&entry.encode()).unwrap();
        assert_eq!(back, entry);
        assert_eq!(&back.body[..], b"{\"operators\":[]}");
        assert_eq!(&back.shown_etag()[..], entry.etag.to_string().as_bytes());
        assert_eq!(back.seconds_left(NOW), 60);
        assert_eq!(
            back.seconds_left(NOW + time::Duration::milliseconds(1)),
            59,
            "whole seconds, rounded down"
        );
        assert_eq!(back.seconds_left(NOW + time::Duration::seconds(60)), 0);
    }

    #[test]
    fn the_validator_follows_the_body_bytes_only() {
        let a = answer(b"{\"a\":1}", 60);
        let b = answer(b"{\"a\":1}", 600);
        let c = answer(b"{\"a\":2}", 60);
        assert_eq!(a.etag, b.etag);
        assert_ne!(a.etag, c.etag);
        let shown = a.etag.to_string();
        assert!(
            shown.starts_with("W/\"") && shown.ends_with('"') && shown.len() == 20,
            "{shown}"
        );
        assert_eq!(shown, format!("W/\"{}\"", a.etag.opaque()));
        for etag in [
            a.etag,
            c.etag,
            ETag(0),
            ETag(u64::MAX),
            ETag(0x0123_4567_89ab_cdef),
        ] {
            assert_eq!(etag.shown(), etag.to_string().as_bytes(), "{etag}");
        }
    }

    #[test]
    fn an_expired_entry_has_no_seconds_left() {
        let entry = CachedAnswer::new(Bytes::from_static(b"{}"), Duration::ZERO, NOW);
        assert_eq!(entry.seconds_left(NOW), 0);
        let long = CachedAnswer::new(Bytes::from_static(b"{}"), Duration::MAX, NOW);
        assert_eq!(long.seconds_left(NOW), u32::MAX);
    }

    #[test]
    fn anything_but_an_entry_of_this_version_is_no_entry() {
        let encoded = answer(b"{}", 1).encode();
        let mut other_version = encoded.to_vec();
        other_version[1] = VERSION + 1;
        for stored in [
            Bytes::from_static(b"{\"operators\":[]}"),
            Bytes::new(),
            encoded.slice(..HEADER_LEN - 1),
            Bytes::from(other_version),
        ] {
            assert_eq!(CachedAnswer::decode(&stored), None, "{stored:?}");
        }
        // A header with an empty body is an entry (an empty body is never stored, but reads).
        assert!(CachedAnswer::decode(&encoded.slice(..HEADER_LEN)).is_some());
    }
}
