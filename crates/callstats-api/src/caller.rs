//! Reading who is calling from the HTTP request: the key headers, the Origin and the client
//! address.

use std::net::IpAddr;

use actix_web::HttpRequest;
use actix_web::http::header::HeaderValue;
use callstats_domain::access::{ClientAddress, KeyHeader};
use callstats_domain::service::Caller;

use crate::heads::Heads;

/// The caller of `req`, borrowed from its headers.
pub(crate) fn caller(req: &HttpRequest, trust_proxy: bool) -> Caller<'_> {
    caller_in(req, Heads::of(req.headers()), trust_proxy)
}

/// The caller of `req`, whose headers are `heads`.
pub(crate) fn caller_in<'a>(
    req: &'a HttpRequest,
    heads: Heads<'a>,
    trust_proxy: bool,
) -> Caller<'a> {
    Caller {
        authorization: key_header(heads.authorization, heads.authorizations),
        x_api_key: key_header(heads.x_api_key, heads.x_api_keys),
        origin: text(heads.origin),
        client_ip: client_ip(req, heads, trust_proxy),
    }
}

/// A key header whose first field is `first`, sent `fields` times.
fn key_header(first: Option<&HeaderValue>, fields: usize) -> KeyHeader<'_> {
    match (text(first), fields) {
        (_, 2..) => KeyHeader::Repeated,
        (Some(value), _) => KeyHeader::Once(value),
        (None, _) => KeyHeader::Absent,
    }
}

fn text(value: Option<&HeaderValue>) -> Option<&str> {
    // A value that is not visible ASCII cannot be a key or an Origin; "" makes it fail as one.
    value.map(|value| visible_ascii(value.as_bytes()).unwrap_or(""))
}

/// `bytes` as text when every byte is visible ASCII or a tab, as `HeaderValue::to_str` takes
/// them, but checked without stopping at the first other byte: the check is then a few
/// instructions for many bytes at once, where `to_str` spends about seven a byte (callgrind,
/// cached `/operators`: about 300 instructions a request for its key).
fn visible_ascii(bytes: &[u8]) -> Option<&str> {
    let visible = bytes.iter().fold(true, |all, &b| {
        all & ((b' '..=b'~').contains(&b) | (b == b'\t'))
    });
    visible.then(|| std::str::from_utf8(bytes).ok()).flatten()
}

/// The peer address, or behind a trusted proxy the first `X-Forwarded-For` hop that is an IP.
pub(crate) fn client_ip(req: &HttpRequest, heads: Heads<'_>, trust_proxy: bool) -> ClientAddress {
    let forwarded = trust_proxy
        .then(|| text(heads.x_forwarded_for))
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
    use actix_web::http::header::HeaderValue;

    use super::visible_ascii;

    #[test]
    fn a_value_is_text_exactly_when_to_str_takes_it() {
        for byte in 0..=u8::MAX {
            for bytes in [vec![byte], vec![b'a', byte, b'z'], vec![byte; 40]] {
                if let Ok(value) = HeaderValue::from_bytes(&bytes) {
                    assert_eq!(visible_ascii(&bytes), value.to_str().ok(), "{bytes:?}");
                }
            }
        }
        assert_eq!(visible_ascii(b"Bearer cs_abc"), Some("Bearer cs_abc"));
        assert_eq!(visible_ascii("Bearer cs_\u{e9}".as_bytes()), None);
        assert_eq!(visible_ascii(b""), Some(""));
    }
}
