//! A request that declares a body: no endpoint reads one, so the body is held unread until the
//! answer is written, and the connection closes after it (docs/behaviour.md, "Errors"), which
//! actix-http would otherwise keep open to drain the body.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::HttpMessage as _;
use actix_web::body::{BodySize, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::ConnectionType;
use actix_web::http::header::{CONTENT_LENGTH, HeaderMap, TRANSFER_ENCODING};
use bytes::Bytes;

/// The body `req` declares, taken from it to be held unread; `None` when it declares none.
/// `declares` is whether it does ([`declares_a_body`]).
pub(super) fn take(req: &mut ServiceRequest, declares: bool) -> Option<UnreadBody> {
    declares.then(|| UnreadBody(req.take_payload()))
}

/// Whether a request whose headers are `headers` says a body follows (`Transfer-Encoding`, or a
/// `Content-Length` above 0). No endpoint reads one.
pub(super) fn declares_a_body(headers: &HeaderMap) -> bool {
    headers.contains_key(TRANSFER_ENCODING)
        || headers
            .get(CONTENT_LENGTH)
            .is_some_and(|length| length.as_bytes() != b"0")
}

/// A request body nobody reads, held (never polled) until its answer is written. actix-http
/// drains a chunked body whose reader is gone once the answer is written, before the next
/// request, so a body that never arrives would hold the connection for ever; a body still held
/// when the answer's last byte is written makes it close the connection instead (after its
/// short linger for the client to hang up). Unread, the body is not taken in past actix-http's
/// payload buffer.
pub(super) struct UnreadBody(
    #[expect(dead_code, reason = "held, never read")] actix_web::dev::Payload,
);

pin_project_lite::pin_project! {
    /// An answer's body, with the request's unread body held until the answer is written.
    pub(crate) struct Answered<B> {
        #[pin]
        body: B,
        unread: Option<UnreadBody>,
    }
}

impl<B: MessageBody> MessageBody for Answered<B> {
    type Error = B::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        self.project().body.poll_next(cx)
    }
}

/// The answer, with the connection closed after it when the request declared a body.
pub(super) fn closing<B>(
    mut response: ServiceResponse<B>,
    unread: Option<UnreadBody>,
) -> ServiceResponse<Answered<B>> {
    if unread.is_some() {
        response
            .response_mut()
            .head_mut()
            .set_connection_type(ConnectionType::Close);
    }
    response.map_body(|_, body| Answered { body, unread })
}
