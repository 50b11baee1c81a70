//! Who may call: API key format and digest, expiry and revocation, Origin pinning and the
//! per-minute quota arithmetic. Reading a key or an Origin from a request is the web layer's.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};
use time::OffsetDateTime;

use crate::scope::ScopeSet;

/// Every key starts with this.
pub const KEY_PREFIX: &str = "cs_";
/// Characters after the prefix: 256 random bits in unpadded URL-safe base64.
pub const KEY_BODY_LEN: usize = 43;
/// Characters of a key kept for display (`cs_` and four more), enough to tell keys apart.
pub const KEY_DISPLAY_PREFIX_LEN: usize = 7;
/// Default per-minute quota of a key.
pub const DEFAULT_RATE_LIMIT: u32 = 120;

/// The characters a key's body can end with: those of the URL-safe alphabet whose value is a
/// multiple of 4.
const CANONICAL_LAST: &[u8; 16] = b"AEIMQUYcgkosw048";

/// [`CANONICAL_LAST`] as a set of bits, one for each ASCII byte: a shift and a mask to look up,
/// where `contains` would call `memchr` on every request.
const CANONICAL_LAST_BITS: u128 = {
    let mut bits = 0_u128;
    let mut rest: &[u8] = CANONICAL_LAST;
    while let [byte, after @ ..] = rest {
        bits |= 1 << *byte;
        rest = after;
    }
    bits
};

/// A key's plaintext. Never printed by `Debug`, never stored: only its digest is.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeySecret(String);

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKeySecret(<redacted>)")
    }
}

impl ApiKeySecret {
    /// Builds a key from 32 random bytes; the caller supplies them from the OS generator.
    #[must_use]
    pub fn from_random_bytes(bytes: &[u8; 32]) -> Self {
        Self(format!("{KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// Accepts only the exact key format; anything else cannot be a key and needs no look-up.
    #[must_use]
    pub fn parse(raw: &str) -> Option<Self> {
        PresentedKey::parse(raw).map(|key| Self(key.0.to_owned()))
    }

    /// The key as a request would present it.
    #[must_use]
    pub fn presented(&self) -> PresentedKey<'_> {
        PresentedKey(&self.0)
    }

    /// The plaintext, for the one moment it is shown to the key's owner.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    #[must_use]
    pub fn digest(&self) -> KeyDigest {
        self.presented().digest()
    }

    /// The first characters, safe to list and log, for telling keys apart.
    #[must_use]
    pub fn display_prefix(&self) -> &str {
        self.0.get(..KEY_DISPLAY_PREFIX_LEN).unwrap_or(KEY_PREFIX)
    }
}

/// A key as a request presents it, in the exact key format, borrowed from the request's header:
/// admission only hashes it, so it need not be copied into an owned [`ApiKeySecret`]. Never
/// printed by `Debug`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PresentedKey<'a>(&'a str);

impl fmt::Debug for PresentedKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PresentedKey(<redacted>)")
    }
}

impl<'a> PresentedKey<'a> {
    /// Accepts only the exact key format; anything else cannot be a key and needs no look-up.
    #[must_use]
    pub fn parse(raw: &'a str) -> Option<Self> {
        let body = raw.strip_prefix(KEY_PREFIX)?;
        // 43 characters of the alphabet are 258 bits: they decode to 32 bytes exactly when the
        // last one leaves the 2 bits past the 256th clear, as the base64 decoder requires (a
        // test holds the two to agreeing). Checked without decoding it, on every request.
        // Every byte is looked at, without a branch for each (`all` would stop at the first
        // byte outside the alphabet): the check runs on every request.
        let well_formed = body.len() == KEY_BODY_LEN
            && body.bytes().fold(true, |ok, b| {
                ok & (b.is_ascii_alphanumeric() | (b == b'-') | (b == b'_'))
            })
            && body.as_bytes().last().is_some_and(|&last| {
                1_u128
                    .checked_shl(u32::from(last))
                    .is_some_and(|bit| CANONICAL_LAST_BITS & bit != 0)
            });
        well_formed.then_some(Self(raw))
    }

    /// The plaintext.
    #[must_use]
    pub const fn expose(&self) -> &'a str {
        self.0
    }

    #[must_use]
    pub fn digest(&self) -> KeyDigest {
        KeyDigest(Sha256::digest(self.0.as_bytes()).into())
    }
}

/// SHA-256 digest of a key: the only form in which keys are stored and looked up.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyDigest(pub [u8; 32]);

impl KeyDigest {
    /// Lower-case hex, as the portal schema stores it.
    #[must_use]
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads the 64 hex digits of [`KeyDigest::to_hex`] (either case).
    #[must_use]
    pub fn from_hex(hex: &str) -> Option<Self> {
        let mut bytes = [0_u8; 32];
        if hex.len() != 64 {
            return None;
        }
        for (byte, pair) in bytes.iter_mut().zip(hex.as_bytes().chunks(2)) {
            *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
        }
        Some(Self(bytes))
    }
}

impl fmt::Debug for KeyDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyDigest({})", self.to_hex())
    }
}

/// A key as the portal stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub id: i64,
    /// Shared, not owned: admission takes a copy of the key cache's record on every request,
    /// which then copies a pointer rather than the name.
    pub name: Arc<str>,
    pub scopes: ScopeSet,
    pub rate_limit_per_minute: u32,
    /// Domain the key is pinned to, if any.
    pub allowed_origin: Option<String>,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
}

/// Why a request is not authenticated (401).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unauthorized {
    /// The request carries no key that can be read (none, a malformed one, one sent twice, two
    /// that differ), in the words of the protocol that carried it: the web layer reads the
    /// headers and says which.
    #[error("{0}")]
    NotPresented(&'static str),
    /// A key that is not in the key format, or that no stored key has.
    #[error("invalid API key")]
    Invalid,
    #[error("API key revoked")]
    Revoked,
    #[error("API key expired")]
    Expired,
}

impl ApiKeyRecord {
    /// Whether the key may be used at `now`.
    pub fn check_usable(&self, now: OffsetDateTime) -> Result<(), Unauthorized> {
        if self.revoked_at.is_some_and(|at| at <= now) {
            return Err(Unauthorized::Revoked);
        }
        if self.expires_at.is_some_and(|at| at <= now) {
            return Err(Unauthorized::Expired);
        }
        Ok(())
    }

    /// Origin pinning: a pinned key accepts a request whose `Origin` host is exactly the pinned
    /// domain (case-insensitive), or one without `Origin` (a partner's backend).
    #[must_use]
    pub fn origin_allowed(&self, origin: RequestOrigin<'_>) -> bool {
        match (&self.allowed_origin, origin) {
            (None, _) | (Some(_), RequestOrigin::Absent) => true,
            (Some(domain), RequestOrigin::Host(host)) => host.eq_ignore_ascii_case(domain),
            (Some(_), RequestOrigin::Unreadable) => false,
        }
    }
}

/// Where a request says it comes from (a browser's `Origin`), as the web layer read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestOrigin<'a> {
    /// It says nothing: a partner's backend.
    #[default]
    Absent,
    /// The host it names.
    Host(&'a str),
    /// It names no host (`null`, or a value that does not parse): a pinned key refuses it.
    Unreadable,
}

/// Where a request comes from, as the anonymous per-IP quota counts it. Written out only when
/// that quota is counted, not for every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ClientAddress {
    Ip(IpAddr),
    /// No address is known (no peer address); all such requests share one quota.
    #[default]
    Unknown,
}

impl fmt::Display for ClientAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ip(ip) => ip.fmt(f),
            Self::Unknown => f.write_str("unknown"),
        }
    }
}

/// Whose quota a request counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaSubject {
    /// A valid key, by its id.
    Key(i64),
    /// The day fetches a valid key caused (its day budget), by the key's id.
    KeyDays(i64),
    /// A request without a valid key (or /openapi.json), by client IP.
    Client(ClientAddress),
}

/// One counter: a subject in one UTC clock minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QuotaBucket {
    pub subject: QuotaSubject,
    /// The minute, counted from the Unix epoch.
    pub minute: i64,
    /// Seconds until the window ends; counters may be dropped after that.
    pub seconds_left: u32,
}

impl QuotaBucket {
    #[must_use]
    pub fn new(subject: &QuotaSubject, now: OffsetDateTime) -> Self {
        let unix = now.unix_timestamp();
        Self {
            subject: *subject,
            minute: unix.div_euclid(60),
            seconds_left: u32::try_from(60 - unix.rem_euclid(60)).unwrap_or(60),
        }
    }

    /// A stable name such as `key:7:29433112` (subject and minute), for counters kept
    /// outside the process.
    #[must_use]
    pub fn name(&self) -> String {
        match self.subject {
            QuotaSubject::Key(id) => format!("key:{id}:{}", self.minute),
            QuotaSubject::KeyDays(id) => format!("days:{id}:{}", self.minute),
            QuotaSubject::Client(ip) => format!("ip:{ip}:{}", self.minute),
        }
    }
}

/// The quota after counting one request: what the rate-limit headers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaStatus {
    /// `X-RateLimit-Limit`.
    pub limit: u32,
    /// `X-RateLimit-Remaining`: calls left after this one, never negative.
    pub remaining: u32,
    /// `X-RateLimit-Reset`: seconds to the next window (1..=60).
    pub reset_seconds: u32,
    /// The request is over the quota (429).
    pub exceeded: bool,
}

impl QuotaStatus {
    /// `count` is the number of requests in the window including this one.
    #[must_use]
    pub fn after(limit: u32, count: u64, bucket: &QuotaBucket) -> Self {
        let used = u32::try_from(count).unwrap_or(u32::MAX);
        Self {
            limit,
            remaining: limit.saturating_sub(used),
            reset_seconds: bucket.seconds_left,
            exceeded: count > u64::from(limit),
        }
    }

    /// The quota as it stands after `count` requests, without counting one more: what a
    /// request that counts against no quota (a valid key refused for its Origin) reports.
    /// Never `exceeded`: such a request is not refused for its quota.
    #[must_use]
    pub fn current(limit: u32, count: u64, bucket: &QuotaBucket) -> Self {
        Self {
            exceeded: false,
            ..Self::after(limit, count, bucket)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const KEY: &str = "cs_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";

    #[test]
    fn a_digest_reads_back_from_its_hex() {
        let digest = ApiKeySecret::parse(KEY).unwrap().digest();
        assert_eq!(KeyDigest::from_hex(&digest.to_hex()), Some(digest));
        assert_eq!(
            KeyDigest::from_hex(&digest.to_hex().to_uppercase()),
            Some(digest)
        );
        for bad in [
            "",
            "ab",
            &"g".repeat(64),
            &"a".repeat(63),
            &"a".repeat(65),
            &"é".repeat(32),
        ] {
            assert_eq!(KeyDigest::from_hex(bad), None, "{bad}");
        }
    }

    fn record() -> ApiKeyRecord {
        ApiKeyRecord {
            id: 7,
            name: "partner".into(),
            scopes: ScopeSet::all(),
            rate_limit_per_minute: DEFAULT_RATE_LIMIT,
            allowed_origin: None,
            expires_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn keys_are_cs_and_43_url_safe_characters_of_256_bits() {
        let bytes: [u8; 32] = std::array::from_fn(|i| u8::try_from(i).unwrap());
        let key = ApiKeySecret::from_random_bytes(&bytes);
        assert_eq!(key.expose(), KEY);
        assert_eq!(key.expose().len(), 46);
        assert_eq!(ApiKeySecret::parse(KEY), Some(key.clone()));
        assert_eq!(key.display_prefix(), "cs_AAEC");
    }

    #[test]
    fn strings_not_in_key_format_are_not_keys() {
        for bad in [
            "",
            "cs_",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
            &format!("{KEY}A"),
            &KEY.replace('A', "+"),
            "cs_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh/",
        ] {
            assert_eq!(ApiKeySecret::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_key_is_accepted_exactly_when_its_body_decodes_to_32_bytes() {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for &last in alphabet {
            let raw = format!("{}{}", &KEY[..KEY.len() - 1], char::from(last));
            let decodes = URL_SAFE_NO_PAD
                .decode_slice(&raw[KEY_PREFIX.len()..], &mut [0_u8; 48])
                .is_ok_and(|length| length == 32);
            assert_eq!(ApiKeySecret::parse(&raw).is_some(), decodes, "{raw}");
        }
        // One of each kind either way.
        assert!(ApiKeySecret::parse(KEY).is_some());
        assert!(ApiKeySecret::parse(&format!("{}B", &KEY[..KEY.len() - 1])).is_none());
    }

    #[test]
    fn secret_debug_never_shows_the_plaintext() {
        let key = ApiKeySecret::parse(KEY).unwrap();
        assert!(!format!("{key:?}").contains("AAEC"));
    }

    #[test]
    fn digest_is_sha256_of_the_plaintext() {
        let key = ApiKeySecret::parse(KEY).unwrap();
        assert_eq!(key.digest().to_hex().len(), 64);
        assert_eq!(
            key.digest(),
            KeyDigest(Sha256::digest(KEY.as_bytes()).into())
        );
    }

    #[test]
    fn the_current_quota_reports_the_window_without_counting() {
        let bucket = QuotaBucket::new(&QuotaSubject::Key(1), datetime!(2026-11-21 06:15:20 UTC));
        let at = |count| QuotaStatus::current(5, count, &bucket);
        assert_eq!(
            at(0),
            QuotaStatus {
                limit: 5,
                remaining: 5,
                reset_seconds: 40,
                exceeded: false
            }
        );
        assert_eq!((at(4).remaining, at(4).exceeded), (1, false));
        assert_eq!((at(5).remaining, at(5).exceeded), (0, false));
        assert_eq!((at(9).remaining, at(9).exceeded), (0, false));
    }

    #[test]
    fn revoked_and_expired_keys_are_unusable() {
        let now = datetime!(2026-11-21 06:00 UTC);
        assert_eq!(record().check_usable(now), Ok(()));
        let revoked = ApiKeyRecord {
            revoked_at: Some(now),
            ..record()
        };
        assert_eq!(revoked.check_usable(now), Err(Unauthorized::Revoked));
        let expired = ApiKeyRecord {
            expires_at: Some(datetime!(2026-11-21 05:59:59 UTC)),
            ..record()
        };
        assert_eq!(expired.check_usable(now), Err(Unauthorized::Expired));
        let later = ApiKeyRecord {
            expires_at: Some(datetime!(2026-11-22 00:00 UTC)),
            ..record()
        };
        assert_eq!(later.check_usable(now), Ok(()));
    }

    #[test]
    fn pinned_key_accepts_only_its_host_or_no_origin() {
        let pinned = ApiKeyRecord {
            allowed_origin: Some("dash.example.uz".into()),
            ..record()
        };
        assert!(pinned.origin_allowed(RequestOrigin::Absent));
        assert!(pinned.origin_allowed(RequestOrigin::Host("dash.example.uz")));
        assert!(pinned.origin_allowed(RequestOrigin::Host("DASH.example.uz")));
        for other in [
            RequestOrigin::Host("evil.example.uz"),
            RequestOrigin::Host("dash.example.uz.evil.com"),
            RequestOrigin::Host("x.dash.example.uz"),
            RequestOrigin::Unreadable,
        ] {
            assert!(!pinned.origin_allowed(other), "{other:?}");
        }
        assert!(record().origin_allowed(RequestOrigin::Host("anything.example")));
        assert!(record().origin_allowed(RequestOrigin::Unreadable));
    }

    #[test]
    fn quota_window_is_the_utc_clock_minute() {
        let now = datetime!(2026-11-21 06:15:45 UTC);
        let bucket = QuotaBucket::new(&QuotaSubject::Key(7), now);
        assert_eq!(bucket.seconds_left, 15);
        assert_eq!(bucket.name(), "key:7:29920695");
        let start = QuotaBucket::new(&QuotaSubject::Key(7), datetime!(2026-11-21 06:15:00 UTC));
        assert_eq!(
            (bucket.subject, bucket.minute),
            (start.subject, start.minute)
        );
        assert_eq!(start.seconds_left, 60);
        let next = QuotaBucket::new(&QuotaSubject::Key(7), datetime!(2026-11-21 06:16:00 UTC));
        assert_ne!(bucket.minute, next.minute);
        assert_ne!(bucket.name(), next.name());
        let client = QuotaBucket::new(
            &QuotaSubject::Client(ClientAddress::Ip("7.0.0.7".parse().unwrap())),
            now,
        );
        assert_eq!(client.name(), "ip:7.0.0.7:29920695");
        let days = QuotaBucket::new(&QuotaSubject::KeyDays(7), now);
        assert_eq!(days.name(), "days:7:29920695");
        assert_ne!(days, bucket);
        assert_ne!(bucket, client);
        assert_eq!(
            QuotaBucket::new(&QuotaSubject::Client(ClientAddress::Unknown), now).name(),
            "ip:unknown:29920695"
        );
    }

    #[test]
    fn quota_remaining_never_goes_negative_and_exceeds_past_the_limit() {
        let bucket = QuotaBucket::new(&QuotaSubject::Key(1), datetime!(2026-11-21 06:15:00 UTC));
        let at = |count| QuotaStatus::after(5, count, &bucket);
        assert_eq!((at(1).remaining, at(1).exceeded), (4, false));
        assert_eq!((at(5).remaining, at(5).exceeded), (0, false));
        assert_eq!((at(6).remaining, at(6).exceeded), (0, true));
        assert_eq!(at(6).reset_seconds, 60);
    }
}
