//! Reading who is calling from the HTTP request: the key from its two header forms, the Origin
//! and the client address. It holds the rule that a key header sent more than once is refused
//! (401) whatever its values (docs/behaviour.md, "Keys and access"), which no stock extractor
//! does.

use std::net::IpAddr;

use actix_web::HttpRequest;
use actix_web::http::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue, ORIGIN};
use callstats_domain::access::{ClientAddress, PresentedKey, RequestOrigin, Unauthorized};
use callstats_domain::use_cases::Caller;

const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The caller of `req`, borrowed from its headers.
pub(crate) fn caller(req: &HttpRequest, trust_proxy: bool) -> Caller<'_> {
    let headers = req.headers();
    Caller {
        key: presented_key(
            key_header(headers, &AUTHORIZATION),
            key_header(headers, &X_API_KEY),
        ),
        origin: request_origin(text(headers.get(ORIGIN))),
        client_ip: client_ip(req, trust_proxy),
    }
}

/// No key header.
pub(crate) const MISSING_KEY: &str =
    "missing API key: send it as 'Authorization: Bearer <key>' or 'X-API-Key: <key>'";
/// An `Authorization` that is not `Bearer <key>`, without an `X-API-Key`.
const MALFORMED_AUTHORIZATION: &str = "malformed Authorization header: expected 'Bearer <key>'";
/// Two headers with two keys.
const CONFLICTING_KEYS: &str =
    "conflicting API keys: 'Authorization' and 'X-API-Key' carry different keys";
const REPEATED_AUTHORIZATION: &str =
    "more than one 'Authorization' header: send the API key in one header field";
const REPEATED_X_API_KEY: &str =
    "more than one 'X-API-Key' header: send the API key in one header field";

/// One of the key headers (`Authorization`, `X-API-Key`) as a request carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum KeyHeader<'a> {
    #[default]
    Absent,
    /// One field of that name, with its value.
    Once(&'a str),
    /// Two fields or more of that name, whatever their values.
    Repeated,
}

impl<'a> KeyHeader<'a> {
    /// The value, `None` when absent; refused with `repeated` when repeated.
    const fn value(self, repeated: &'static str) -> Result<Option<&'a str>, Unauthorized> {
        match self {
            Self::Absent => Ok(None),
            Self::Once(value) => Ok(Some(value)),
            Self::Repeated => Err(Unauthorized::NotPresented(repeated)),
        }
    }
}

impl<'a> From<Option<&'a str>> for KeyHeader<'a> {
    fn from(value: Option<&'a str>) -> Self {
        value.map_or(Self::Absent, Self::Once)
    }
}

/// Extracts the presented key from the two header forms.
///
/// Each header may be sent once: two fields of one name are refused even when their values
/// agree, since which of them counts would depend on who reads them (the first wins in one
/// reader, the last in a gateway), as two headers carrying different keys are.
/// `Authorization` must use the Bearer scheme (case-insensitive); when both headers are present
/// they must carry the same key. An `Authorization` of another scheme (say `Basic`, added by a
/// gateway) is ignored when `X-API-Key` is present, and malformed otherwise. A value that is not
/// in the key format is `Invalid` at once.
fn presented_key<'a>(
    authorization: KeyHeader<'a>,
    x_api_key: KeyHeader<'a>,
) -> Result<PresentedKey<'a>, Unauthorized> {
    let authorization = authorization.value(REPEATED_AUTHORIZATION)?;
    let header = x_api_key.value(REPEATED_X_API_KEY)?.map(str::trim);
    let bearer = match authorization.map(bearer_token) {
        None => None,
        Some(Ok(token)) => Some(token),
        Some(Err(NotBearer::OtherScheme)) if header.is_some() => None,
        Some(Err(_)) => return Err(Unauthorized::NotPresented(MALFORMED_AUTHORIZATION)),
    };
    let raw = match (bearer, header) {
        (Some(a), Some(b)) if a != b => return Err(Unauthorized::NotPresented(CONFLICTING_KEYS)),
        (Some(key), _) | (None, Some(key)) => key,
        (None, None) => return Err(Unauthorized::NotPresented(MISSING_KEY)),
    };
    PresentedKey::parse(raw).ok_or(Unauthorized::Invalid)
}

/// Why an `Authorization` value carries no Bearer token.
enum NotBearer {
    /// Its scheme (the text before the first white space) is not `Bearer`.
    OtherScheme,
    /// It is `Bearer`, without a token after one space.
    Malformed,
}

/// The token of a `Bearer <token>` value (scheme case-insensitive).
fn bearer_token(value: &str) -> Result<&str, NotBearer> {
    // What clients send is read a byte at a time; anything else as `any_bearer_token` reads it,
    // which finds the same token in such a value (a test compares the two). The general way
    // trims Unicode white space a character at a time, on every request.
    plain_bearer_token(value).map_or_else(|| any_bearer_token(value), Ok)
}

/// The token of `value` when it is `Bearer`, one space and a token that begins and ends with
/// visible ASCII: nothing to trim.
fn plain_bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = (value.get(..7)?, value.get(7..)?);
    let bytes = token.as_bytes();
    let visible = |byte: Option<&u8>| byte.is_some_and(u8::is_ascii_graphic);
    (scheme.eq_ignore_ascii_case("bearer ") && visible(bytes.first()) && visible(bytes.last()))
        .then_some(token)
}

/// The token of any `Authorization` value: white space trimmed around it and its token, the
/// scheme the text before the first white space.
fn any_bearer_token(value: &str) -> Result<&str, NotBearer> {
    let value = value.trim();
    let scheme = value
        .split(|c: char| c.is_ascii_whitespace())
        .next()
        .unwrap_or_default();
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(NotBearer::OtherScheme);
    }
    value
        .split_once(' ')
        .map(|(_, token)| token.trim())
        .ok_or(NotBearer::Malformed)
}

/// The `Origin` of a request as origin pinning reads it: the host it names, if any.
fn request_origin(value: Option<&str>) -> RequestOrigin<'_> {
    match value {
        None => RequestOrigin::Absent,
        Some(origin) => origin_host(origin).map_or(RequestOrigin::Unreadable, RequestOrigin::Host),
    }
}

/// The host of an Origin header value (`scheme://host[:port]`); `None` for `null` or garbage.
fn origin_host(origin: &str) -> Option<&str> {
    let (_, authority) = origin.trim().split_once("://")?;
    let authority = authority.split(['/', '?', '#']).next()?;
    if authority.contains('@') {
        return None;
    }
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split_once(']')?.0
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then_some(host)
}

/// The key header `name` of `headers`: absent, sent once, or repeated (refused, as two fields
/// might carry two keys).
fn key_header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> KeyHeader<'a> {
    let mut fields = headers.get_all(name);
    match (text(fields.next()), fields.next()) {
        (_, Some(_)) => KeyHeader::Repeated,
        (Some(value), None) => KeyHeader::Once(value),
        (None, None) => KeyHeader::Absent,
    }
}

fn text(value: Option<&HeaderValue>) -> Option<&str> {
    // A value that is not visible ASCII cannot be a key or an Origin; "" makes it fail as one.
    value.map(|value| value.to_str().unwrap_or(""))
}

/// The peer address, or behind a trusted proxy the first `X-Forwarded-For` hop that is an IP.
pub(crate) fn client_ip(req: &HttpRequest, trust_proxy: bool) -> ClientAddress {
    let forwarded = trust_proxy
        .then(|| text(req.headers().get(X_FORWARDED_FOR)))
        .flatten()
        .and_then(|value| value.split(',').next())
        .map(str::trim)
        .and_then(|hop| hop.parse::<IpAddr>().ok());
    forwarded
        .or_else(|| req.peer_addr().map(|addr| addr.ip()))
        .map_or(ClientAddress::Unknown, ClientAddress::Ip)
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;
    use callstats_domain::access::{ApiKeyRecord, ApiKeySecret};
    use callstats_domain::scope::ScopeSet;

    use super::*;

    const KEY: &str = "cs_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";

    /// [`presented_key`] of one field of each header given.
    fn presented<'a>(
        authorization: Option<&'a str>,
        x_api_key: Option<&'a str>,
    ) -> Result<PresentedKey<'a>, Unauthorized> {
        presented_key(authorization.into(), x_api_key.into())
    }

    fn unpinned() -> ApiKeyRecord {
        ApiKeyRecord {
            id: 7,
            name: "partner".into(),
            scopes: ScopeSet::all(),
            rate_limit_per_minute: 120,
            allowed_origin: None,
            expires_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn key_is_read_from_either_header_form() {
        assert_eq!(
            presented(Some(&format!("Bearer {KEY}")), None)
                .unwrap()
                .expose(),
            KEY
        );
        assert_eq!(
            presented(Some(&format!("bearer {KEY}")), None)
                .unwrap()
                .expose(),
            KEY
        );
        assert_eq!(presented(None, Some(KEY)).unwrap().expose(), KEY);
        assert_eq!(
            presented(Some(&format!("Bearer {KEY}")), Some(KEY))
                .unwrap()
                .expose(),
            KEY
        );
    }

    #[test]
    fn missing_malformed_and_conflicting_credentials_are_unauthorized() {
        assert_eq!(
            presented(None, None),
            Err(Unauthorized::NotPresented(MISSING_KEY))
        );
        assert_eq!(
            presented(Some(&format!("Basic {KEY}")), None),
            Err(Unauthorized::NotPresented(MALFORMED_AUTHORIZATION))
        );
        assert_eq!(
            presented(Some(KEY), None),
            Err(Unauthorized::NotPresented(MALFORMED_AUTHORIZATION))
        );
        assert_eq!(
            presented(Some("Bearer nope"), None),
            Err(Unauthorized::Invalid)
        );
        let other = KEY.replace('A', "B");
        assert_eq!(
            presented(Some(&format!("Bearer {KEY}")), Some(&other)),
            Err(Unauthorized::NotPresented(CONFLICTING_KEYS))
        );
    }

    #[test]
    fn a_key_header_sent_twice_is_unauthorized_whatever_the_values_and_the_other_header() {
        let bearer = format!("Bearer {KEY}");
        for other in [
            KeyHeader::Absent,
            KeyHeader::Once(KEY),
            KeyHeader::Once(&bearer),
            KeyHeader::Repeated,
        ] {
            assert_eq!(
                presented_key(KeyHeader::Repeated, other),
                Err(Unauthorized::NotPresented(REPEATED_AUTHORIZATION)),
                "{other:?}"
            );
        }
        for other in [KeyHeader::Absent, KeyHeader::Once(&bearer)] {
            assert_eq!(
                presented_key(other, KeyHeader::Repeated),
                Err(Unauthorized::NotPresented(REPEATED_X_API_KEY)),
                "{other:?}"
            );
        }
    }

    #[test]
    fn a_plain_bearer_value_gives_the_token_any_value_gives() {
        let key = format!("Bearer {KEY}");
        assert_eq!(plain_bearer_token(&key), Some(KEY));
        let mut read = std::collections::BTreeSet::new();
        for scheme in [
            "Bearer", "bearer", "BEARER", "Bearer\t", "Bearer ", "Basic", "Bear", "",
        ] {
            for gap in ["", " ", "  ", "\t", "\u{a0}"] {
                for token in [
                    KEY, "x", "a b", " x", "x ", "x\u{a0}", "\u{e9}x", "x\u{e9}", "",
                ] {
                    for end in ["", " ", "\u{2003}"] {
                        let value = format!("{scheme}{gap}{token}{end}");
                        if let Some(plain) = plain_bearer_token(&value) {
                            read.insert(value.clone());
                            assert_eq!(any_bearer_token(&value).ok(), Some(plain), "{value:?}");
                        }
                    }
                }
            }
        }
        // Only `Bearer `, `bearer ` and `BEARER ` before a token that begins and ends with
        // visible ASCII (`KEY`, `x`, `a b`), with nothing after it.
        assert_eq!(read.len(), 3 * 3, "{read:?}");
    }

    #[test]
    fn an_authorization_that_is_not_bearer_is_ignored_beside_x_api_key() {
        let other = KEY.replace('A', "B");
        for authorization in [
            "Basic Z2F0ZXdheTpzZWNyZXQ=",
            "basic",
            "Digest username=\"gateway\"",
            KEY,
            &other,
            "",
        ] {
            assert_eq!(
                presented(Some(authorization), Some(KEY)).map(|key| key.digest()),
                Ok(ApiKeySecret::parse(KEY).unwrap().digest()),
                "{authorization}"
            );
            assert_eq!(
                presented(Some(authorization), None),
                Err(Unauthorized::NotPresented(MALFORMED_AUTHORIZATION)),
                "{authorization} alone"
            );
        }
        // A Bearer header is never ignored: it must agree with X-API-Key and be well formed.
        for bearer in [format!("Bearer {other}"), "bearer nope".to_owned()] {
            assert_eq!(
                presented(Some(&bearer), Some(KEY)),
                Err(Unauthorized::NotPresented(CONFLICTING_KEYS)),
                "{bearer}"
            );
        }
        for bearer in ["Bearer", "Bearer ", "Bearer\tx"] {
            assert_eq!(
                presented(Some(bearer), Some(KEY)),
                Err(Unauthorized::NotPresented(MALFORMED_AUTHORIZATION)),
                "{bearer:?}"
            );
        }
        assert_eq!(
            presented(Some("Basic Z2F0ZXdheTpzZWNyZXQ="), Some("nope")),
            Err(Unauthorized::Invalid)
        );
    }

    #[test]
    fn pinned_key_accepts_only_its_domain_or_no_origin() {
        let pinned = ApiKeyRecord {
            allowed_origin: Some("dash.example.uz".into()),
            ..unpinned()
        };
        assert!(pinned.origin_allowed(request_origin(None)));
        assert!(pinned.origin_allowed(request_origin(Some("https://dash.example.uz"))));
        assert!(pinned.origin_allowed(request_origin(Some("https://DASH.example.uz:8443"))));
        for other in [
            "https://evil.example.uz",
            "https://dash.example.uz.evil.com",
            "null",
            "dash.example.uz",
            "https://dash.example.uz@evil.com",
            "https://x.dash.example.uz",
        ] {
            assert!(
                !pinned.origin_allowed(request_origin(Some(other))),
                "{other}"
            );
        }
        assert!(unpinned().origin_allowed(request_origin(Some("https://anything.example"))));
    }

    #[test]
    fn origin_host_handles_ipv6_and_ports() {
        assert_eq!(origin_host("http://[::1]:8080"), Some("::1"));
        assert_eq!(origin_host("http://localhost:3000"), Some("localhost"));
        assert_eq!(origin_host("http://"), None);
    }

    /// `check` of the `X-API-Key` of a request with `headers`.
    fn with(headers: &[(&str, &[u8])], check: impl FnOnce(KeyHeader<'_>)) {
        let mut req = TestRequest::default();
        for (name, value) in headers {
            req = req.append_header((*name, HeaderValue::from_bytes(value).unwrap()));
        }
        check(key_header(req.to_http_request().headers(), &X_API_KEY));
    }

    #[test]
    fn a_key_header_is_absent_once_or_repeated_and_one_not_text_reads_as_empty() {
        with(&[], |key| assert_eq!(key, KeyHeader::Absent));
        with(&[("x-other", b"x")], |key| {
            assert_eq!(key, KeyHeader::Absent);
        });
        with(&[("x-api-key", b"cs_key")], |key| {
            assert_eq!(key, KeyHeader::Once("cs_key"));
        });
        let twice: &[(&str, &[u8])] = &[("x-api-key", b"cs_key"), ("x-api-key", b"cs_key")];
        with(twice, |key| assert_eq!(key, KeyHeader::Repeated));
        with(&[("x-api-key", "cs_\u{e9}".as_bytes())], |key| {
            assert_eq!(key, KeyHeader::Once(""));
        });
    }
}
