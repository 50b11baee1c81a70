//! Reading who is calling from the HTTP request: the key headers, the Origin and the client
//! address.

use std::net::IpAddr;

use actix_web::HttpRequest;
use actix_web::http::header::{AUTHORIZATION, HeaderName, ORIGIN};
use callstats_domain::access::ClientAddress;
use callstats_domain::service::Caller;

const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The caller of `req`, borrowed from its headers.
pub(crate) fn caller(req: &HttpRequest, trust_proxy: bool) -> Caller<'_> {
    Caller {
        authorization: header(req, &AUTHORIZATION),
        x_api_key: header(req, &X_API_KEY),
        origin: header(req, &ORIGIN),
        client_ip: client_ip(req, trust_proxy),
    }
}

fn header<'a>(req: &'a HttpRequest, name: &HeaderName) -> Option<&'a str> {
    // A value that is not visible ASCII cannot be a key or an Origin; "" makes it fail as one.
    req.headers()
        .get(name)
        .map(|value| value.to_str().unwrap_or(""))
}

/// The peer address, or behind a trusted proxy the first `X-Forwarded-For` hop that is an IP.
pub(crate) fn client_ip(req: &HttpRequest, trust_proxy: bool) -> ClientAddress {
    let forwarded = trust_proxy
        .then(|| header(req, &X_FORWARDED_FOR))
        .flatten()
        .and_then(|value| value.split(',').next())
        .map(str::trim)
        .and_then(|hop| hop.parse::<IpAddr>().ok());
    forwarded
        .or_else(|| req.peer_addr().map(|addr| addr.ip()))
        .map_or(ClientAddress::Unknown, ClientAddress::Ip)
}
