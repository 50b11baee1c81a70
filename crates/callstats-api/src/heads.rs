//! The request headers an answer reads, found in one pass over the request's headers.

use actix_web::http::header::{HeaderMap, HeaderValue};

/// The first value of each header an answer reads (the key, the Origin, the client address
/// behind a proxy, what it accepts), how many key and `Accept` fields there are, and whether the
/// ones only parsed when present are there:
/// one pass over a request's few headers, where a look-up of each hashed its name and probed
/// the map. Not faster, measured: the two passes of a request (the observer's and the
/// answer's) cost 864 instructions, the look-ups and the pass they replace 940 (callgrind,
/// cached `/operators`); kept as the one place that says which headers are read.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Heads<'a> {
    /// The first `Authorization`, and how many there are.
    pub(crate) authorization: Option<&'a HeaderValue>,
    pub(crate) authorizations: usize,
    /// The first `X-API-Key`, and how many there are.
    pub(crate) x_api_key: Option<&'a HeaderValue>,
    pub(crate) x_api_keys: usize,
    pub(crate) origin: Option<&'a HeaderValue>,
    pub(crate) x_forwarded_for: Option<&'a HeaderValue>,
    /// The first `Accept`, and how many there are.
    pub(crate) accept: Option<&'a HeaderValue>,
    pub(crate) accepts: usize,
    pub(crate) accept_encoding: bool,
    pub(crate) if_none_match: bool,
    /// The first `Content-Length`, and whether there is a `Transfer-Encoding`: the body the
    /// request declares.
    pub(crate) content_length: Option<&'a HeaderValue>,
    pub(crate) transfer_encoding: bool,
    /// The bytes of every header's name and value.
    pub(crate) bytes: usize,
}

impl<'a> Heads<'a> {
    pub(crate) fn of(headers: &'a HeaderMap) -> Self {
        let mut heads = Self::default();
        for (name, value) in headers {
            let name = name.as_str();
            heads.bytes = heads
                .bytes
                .saturating_add(name.len())
                .saturating_add(value.len());
            // Names as text, matched once (measured no faster than comparing `HeaderName`s one
            // after the other: 34 instructions a request more, within a run's noise).
            match name {
                "authorization" => {
                    heads.authorization.get_or_insert(value);
                    heads.authorizations += 1;
                }
                "accept" => {
                    heads.accept.get_or_insert(value);
                    heads.accepts += 1;
                }
                "origin" => {
                    heads.origin.get_or_insert(value);
                }
                "accept-encoding" => heads.accept_encoding = true,
                "if-none-match" => heads.if_none_match = true,
                "content-length" => {
                    heads.content_length.get_or_insert(value);
                }
                "transfer-encoding" => heads.transfer_encoding = true,
                "x-api-key" => {
                    heads.x_api_key.get_or_insert(value);
                    heads.x_api_keys += 1;
                }
                "x-forwarded-for" => {
                    heads.x_forwarded_for.get_or_insert(value);
                }
                _ => {}
            }
        }
        heads
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{
        ACCEPT, AUTHORIZATION, HOST, HeaderMap, HeaderName, HeaderValue, IF_NONE_MATCH,
    };

    use super::*;

    /// What the look-ups `Heads` stands for find, header by header.
    #[test]
    fn it_finds_what_each_look_up_finds() {
        let mut headers = HeaderMap::new();
        let value = |text: &'static str| HeaderValue::from_static(text);
        headers.append(HOST, value("api.example"));
        headers.append(ACCEPT, value("text/csv"));
        headers.append(ACCEPT, value("*/*;q=0.1"));
        headers.append(AUTHORIZATION, value("Bearer cs_first"));
        headers.append(AUTHORIZATION, value("Bearer cs_second"));
        let x_api_key = HeaderName::from_static("x-api-key");
        headers.append(x_api_key.clone(), value("cs_key"));
        headers.append(HeaderName::from_static("x-other"), value("x"));
        headers.append(IF_NONE_MATCH, value("W/\"1\""));
        let heads = Heads::of(&headers);
        assert_eq!(heads.authorization, headers.get(AUTHORIZATION));
        assert_eq!(heads.authorizations, 2);
        assert_eq!(heads.x_api_key, headers.get(&x_api_key));
        assert_eq!(heads.x_api_keys, 1);
        assert_eq!(heads.accept, headers.get(ACCEPT));
        assert_eq!(heads.accepts, headers.get_all(ACCEPT).count());
        assert_eq!(heads.origin, None);
        assert_eq!(heads.x_forwarded_for, None);
        assert!(heads.if_none_match);
        assert!(!heads.accept_encoding);
        assert_eq!(
            (heads.content_length, heads.transfer_encoding),
            (None, false)
        );
        let bytes = headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len());
        assert_eq!(heads.bytes, bytes.sum::<usize>());
        let none = HeaderMap::new();
        let heads = Heads::of(&none);
        assert_eq!((heads.authorization, heads.authorizations), (None, 0));
        assert_eq!((heads.x_api_keys, heads.accepts), (0, 0));
    }
}
