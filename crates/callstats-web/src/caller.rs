//! Reading who is calling from the HTTP request: the key headers, the Origin and the client
//! address. It holds the rule that a key header sent more than once is refused (401) whatever
//! its values (docs/behaviour.md, "Keys and access"), which no stock extractor does.

use std::net::IpAddr;

use actix_web::HttpRequest;
use actix_web::http::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue, ORIGIN};
use callstats_domain::access::{ClientAddress, KeyHeader};
use callstats_domain::use_cases::Caller;

const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The caller of `req`, borrowed from its headers.
pub(crate) fn caller(req: &HttpRequest, trust_proxy: bool) -> Caller<'_> {
    let headers = req.headers();
    Caller {
        authorization: key_header(headers, &AUTHORIZATION),
        x_api_key: key_header(headers, &X_API_KEY),
        origin: text(headers.get(ORIGIN)),
        client_ip: client_ip(req, trust_proxy),
    }
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

    use super::*;

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
