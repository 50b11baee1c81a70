//! The connection under the HTTP layer.
//!
//! actix-http answers a few requests itself, before a request exists and so before any of the
//! service's code runs: 408 to a client that has not sent its request head in time, 431 to a
//! head over its 128 KiB buffer or its 96 header fields, 400 to a head it cannot parse (and 500
//! to a state it never expects). It writes them as a bare head (`content-length: 0`, maybe
//! `connection`, and `date`) and closes the connection after. [`Guarded`] wraps every accepted
//! connection and writes the service's JSON error in their place, with the headers every answer
//! carries: `X-Request-Id`, `X-Content-Type-Options: nosniff` and `Cache-Control: no-store`.
//!
//! Every answer of the service itself has `x-request-id`, so the two never mix up; `100
//! Continue`, the other bare head actix-http writes, goes through as it is.
//!
//! actix-http bounds only the first head of a connection in time: a client may then trickle a
//! later one a byte at a time and hold the connection for ever. The wrapper gives each later
//! head the same bound, counted from its first byte; past it the connection reads as closed
//! (actix-http finishes an answer on its way, then closes). No 408 is written there: an answer
//! to an earlier, pipelined request may still be coming on the same connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::{
    CACHE_CONTROL, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, DATE, X_CONTENT_TYPE_OPTIONS,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::error::ErrorBody;
use crate::middleware::{RequestId, X_REQUEST_ID};
use crate::response::JSON;

/// An accepted connection, with actix-http's bare answers rewritten as the service's.
#[derive(Debug)]
pub(crate) struct Guarded<T> {
    io: T,
    /// The answer written in place of a bare one, from `written` on.
    pending: Vec<u8>,
    written: usize,
    /// The bound on each head: the 408's message, and the deadline of later heads.
    request_timeout: Duration,
    /// Where the heads read so far end.
    heads: Heads,
    /// The deadline of the later head being read, while one is.
    deadline: Option<Pin<Box<Sleep>>>,
    /// The deadline passed: reads end.
    cut: bool,
}

impl<T> Guarded<T> {
    pub(crate) const fn new(io: T, request_timeout: Duration) -> Self {
        Self {
            io,
            pending: Vec::new(),
            written: 0,
            request_timeout,
            heads: Heads::new(),
            deadline: None,
            cut: false,
        }
    }

    /// Follows the heads through `bytes`, just read: a later head begun and not ended starts
    /// its deadline; one that ends stops it.
    fn read(&mut self, bytes: &[u8]) {
        let (ended_in, ends_with) = self.heads.read(bytes);
        if !self.heads.first_done || ends_with {
            // The first head is actix-http's to bound; after an empty line nothing has begun.
            self.deadline = None;
            return;
        }
        // A head (or a body: it ends the same way, with the next head) has begun: within these
        // bytes if a head ended in them, else with them unless one was already under way.
        let at = Instant::now() + self.request_timeout;
        match &mut self.deadline {
            Some(deadline) if ended_in => deadline.as_mut().reset(at),
            Some(_) => {}
            None => self.deadline = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    /// Whether a later head has been under way past its deadline; if not, the deadline wakes
    /// `cx` when it passes.
    fn late(&mut self, cx: &mut Context<'_>) -> bool {
        self.deadline
            .as_mut()
            .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready())
    }
}

/// A small state machine over the bytes read: where a head ends, at an empty line (`\n\n`,
/// or `\n\r\n`; the HTTP parser takes a bare `\n` as a line end).
#[derive(Debug)]
struct Heads {
    /// The last two bytes read.
    last: [u8; 2],
    /// The connection's first head has ended.
    first_done: bool,
}

impl Heads {
    const fn new() -> Self {
        Self {
            last: [0; 2],
            first_done: false,
        }
    }

    /// Whether a head ends within `bytes`, and whether `bytes` end with the end of one.
    fn read(&mut self, bytes: &[u8]) -> (bool, bool) {
        let [before2, before1] = self.last;
        // The byte at `i` of `bytes`, counting the two before them at -2 and -1.
        let at = |i: usize, back: usize| -> Option<u8> {
            match (i + 2).checked_sub(back)? {
                0 => Some(before2),
                1 => Some(before1),
                j => bytes.get(j - 2).copied(),
            }
        };
        let ends_at = |i: usize| {
            // A head ends at the line feed at `i` when an empty line precedes it.
            at(i, 1) == Some(b'\n') || (at(i, 1) == Some(b'\r') && at(i, 2) == Some(b'\n'))
        };
        let mut ended_in = false;
        let mut last_end = None;
        for i in memchr::memchr_iter(b'\n', bytes) {
            if ends_at(i) {
                ended_in = true;
                last_end = Some(i);
            }
        }
        let ends_with = last_end.is_some_and(|i| i + 1 == bytes.len());
        self.last = match bytes {
            [.., a, b] => [*a, *b],
            [b] => [before1, *b],
            [] => self.last,
        };
        if ended_in {
            self.first_done = true;
        }
        (ended_in, ends_with)
    }
}

impl<T: AsyncWrite + Unpin> Guarded<T> {
    /// Writes what is left of the answer written in place of a bare one.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(rest) = self
            .pending
            .get(self.written..)
            .filter(|rest| !rest.is_empty())
        {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, rest))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Guarded<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.cut {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if let Some(bytes) = buf.filled().get(before..) {
                    this.read(bytes);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            // Nothing more to read: only now may the deadline end the reading.
            Poll::Pending if this.late(cx) => {
                this.cut = true;
                tracing::info!(
                    timeout_ms =
                        u64::try_from(this.request_timeout.as_millis()).unwrap_or(u64::MAX),
                    "a later request head was not received in time; connection closed"
                );
                Poll::Ready(Ok(()))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Guarded<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        let Some(bare) = BareAnswer::at_end_of(buf) else {
            return Pin::new(&mut this.io).poll_write(cx, buf);
        };
        // Another answer's last bytes before it (a pipelined request's): those first.
        if let Some(before) = buf.get(..bare.start).filter(|before| !before.is_empty()) {
            return Pin::new(&mut this.io).poll_write(cx, before);
        }
        let Some(answer) = bare.rewritten(this.request_timeout) else {
            return Pin::new(&mut this.io).poll_write(cx, buf);
        };
        this.pending = answer;
        this.written = 0;
        // Taken whole: what is not written yet goes on the next write, flush or shutdown.
        if let Poll::Ready(Err(err)) = this.poll_pending(cx) {
            return Poll::Ready(Err(err));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// An answer given before a request exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unparsed {
    /// 400: a head the HTTP parser refuses.
    Malformed,
    /// 431: a head over the parser's buffer or header count.
    TooLarge,
    /// 408: no whole head within the request timeout.
    Timeout(Duration),
    /// 500: a state actix-http never expects.
    Internal,
}

impl Unparsed {
    fn of(status: u16, request_timeout: Duration) -> Option<Self> {
        match status {
            400 => Some(Self::Malformed),
            408 => Some(Self::Timeout(request_timeout)),
            431 => Some(Self::TooLarge),
            500 => Some(Self::Internal),
            _ => None,
        }
    }

    pub(crate) const fn status(self) -> StatusCode {
        match self {
            Self::Malformed => StatusCode::BAD_REQUEST,
            Self::TooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The error message of the answer.
    pub(crate) fn message(self) -> String {
        match self {
            Self::Malformed => "malformed request head: not HTTP/1.x, or a line the HTTP parser \
                                refuses (raw non-ASCII bytes in the request target must be \
                                percent-encoded)"
                .to_owned(),
            Self::TooLarge => {
                "request head longer than 128 KiB or with more than 96 header fields".to_owned()
            }
            Self::Timeout(within) if within.subsec_nanos() == 0 => {
                format!("request head not received within {} s", within.as_secs())
            }
            Self::Timeout(within) => {
                format!("request head not received within {} ms", within.as_millis())
            }
            Self::Internal => "internal server error".to_owned(),
        }
    }
}

/// The most bytes of a bare answer's head: its status line, `content-length`, `connection` and
/// `date` come to about 110.
const BARE_HEAD_MAX: usize = 256;

/// An answer actix-http wrote itself, found at the end of what it writes.
#[derive(Debug, PartialEq, Eq)]
struct BareAnswer {
    /// Where its head starts.
    start: usize,
    /// `HTTP/1.<minor>`
    minor: u8,
    status: u16,
    date: Option<Vec<u8>>,
}

impl BareAnswer {
    /// The bare answer `buf` ends with, if it ends with one: a response head with no other
    /// header than `content-length: 0`, `connection` and `date`. Only the last bytes are looked
    /// at, and only when they end a head, so other writes cost a four-byte comparison.
    fn at_end_of(buf: &[u8]) -> Option<Self> {
        if !buf.ends_with(b"\r\n\r\n") {
            return None;
        }
        let from = buf.len().saturating_sub(BARE_HEAD_MAX);
        let start = from + memchr::memmem::rfind(buf.get(from..)?, b"HTTP/1.")?;
        let head = buf.get(start..)?;
        let mut headers = [httparse::EMPTY_HEADER; 3];
        let mut response = httparse::Response::new(&mut headers);
        if response.parse(head).ok()? != httparse::Status::Complete(head.len()) {
            return None;
        }
        let mut date = None;
        for header in &*response.headers {
            let name = header.name;
            if name.eq_ignore_ascii_case(DATE.as_str()) {
                date = Some(header.value.to_vec());
            } else if name.eq_ignore_ascii_case(CONTENT_LENGTH.as_str()) {
                if header.value != b"0" {
                    return None;
                }
            } else if !name.eq_ignore_ascii_case(CONNECTION.as_str()) {
                return None;
            }
        }
        Some(Self {
            start,
            minor: response.version?,
            status: response.code?,
            date,
        })
    }

    /// The service's answer in its place, for the four statuses actix-http answers itself with;
    /// `None` for any other (`100 Continue`).
    fn rewritten(&self, request_timeout: Duration) -> Option<Vec<u8>> {
        let unparsed = Unparsed::of(self.status, request_timeout)?;
        let status = unparsed.status();
        let body = serde_json::to_vec(&ErrorBody::new(unparsed.message())).ok()?;
        let request_id = RequestId::next();
        let id = request_id.to_string();
        // Before a request exists there is no method and no path to log.
        if status.is_server_error() {
            tracing::error!(
                request_id = id,
                status = self.status,
                "answered before a request was parsed"
            );
        } else {
            tracing::info!(
                request_id = id,
                status = self.status,
                "answered before a request was parsed"
            );
        }
        metrics::counter!("callstats_http_requests_total", "route" => "unparsed", "status" => status.as_str().to_owned())
            .increment(1);
        let mut head = format!(
            "HTTP/1.{} {} {}\r\n{CONTENT_TYPE}: {JSON}\r\n{CONTENT_LENGTH}: {}\r\n\
             {CACHE_CONTROL}: no-store\r\n{X_CONTENT_TYPE_OPTIONS}: nosniff\r\n\
             {X_REQUEST_ID}: {id}\r\n{CONNECTION}: close\r\n",
            self.minor,
            status.as_str(),
            status.canonical_reason().unwrap_or_default(),
            body.len(),
        )
        .into_bytes();
        if let Some(date) = &self.date {
            head.extend_from_slice(DATE.as_str().as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(date);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        head.extend_from_slice(&body);
        Some(head)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt as _;

    use super::*;

    const DATE_LINE: &str = "date: Wed, 25 Nov 2026 10:00:00 GMT";

    fn bare(status: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n{DATE_LINE}\r\n\r\n"
        )
    }

    #[test]
    fn a_bare_head_at_the_end_is_found_after_another_answer() {
        let before = "HTTP/1.1 200 OK\r\nx-request-id: 1\r\ncontent-length: 2\r\n\r\n{}";
        let written = format!("{before}{}", bare("400 Bad Request"));
        let found = BareAnswer::at_end_of(written.as_bytes()).unwrap();
        assert_eq!(found.start, before.len());
        assert_eq!((found.minor, found.status), (1, 400));
        assert_eq!(
            found.date.as_deref(),
            Some(&b"Wed, 25 Nov 2026 10:00:00 GMT"[..])
        );
    }

    #[test]
    fn the_service_s_own_answers_and_bodies_are_left_alone() {
        for written in [
            // An empty answer of the service: it has a request id.
            "HTTP/1.1 304 Not Modified\r\nx-request-id: 1\r\ncontent-length: 0\r\n\r\n".to_owned(),
            // A body that does not end a head.
            format!("{}{{}}", bare("408 Request Timeout")),
            // A head with a body to come.
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\r\n".to_owned(),
            // Bytes that only look like the end of a head.
            "HTTP/1.1 is not a status line\r\n\r\n".to_owned(),
        ] {
            assert_eq!(
                BareAnswer::at_end_of(written.as_bytes()),
                None,
                "{written:?}"
            );
        }
    }

    #[test]
    fn each_bare_status_gets_a_json_answer_and_100_continue_passes() {
        for (status, says) in [
            ("400 Bad Request", "malformed request head"),
            ("408 Request Timeout", "not received within 5 s"),
            ("431 Request Header Fields Too Large", "longer than 128 KiB"),
            ("500 Internal Server Error", "internal server error"),
        ] {
            let found = BareAnswer::at_end_of(bare(status).as_bytes()).unwrap();
            let answer = found.rewritten(Duration::from_secs(5)).unwrap();
            let text = String::from_utf8(answer).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(
                head.starts_with(&format!("HTTP/1.1 {status}\r\n")),
                "{head}"
            );
            for line in [
                "content-type: application/json; charset=utf-8",
                "cache-control: no-store",
                "x-content-type-options: nosniff",
                "connection: close",
                DATE_LINE,
                &format!("content-length: {}", body.len()),
            ] {
                assert!(head.lines().any(|l| l == line), "{line} missing: {head}");
            }
            assert!(head.contains("\r\nx-request-id: "), "{head}");
            let body: serde_json::Value = serde_json::from_str(body).unwrap();
            assert!(body["error"].as_str().unwrap().contains(says), "{body}");
        }
        let continue_head = "HTTP/1.1 100 Continue\r\n\r\n";
        let found = BareAnswer::at_end_of(continue_head.as_bytes()).unwrap();
        assert_eq!(found.rewritten(Duration::from_secs(5)), None);
    }

    /// Feeds `pieces` one read each; gives what each read reported.
    fn heads_through(pieces: &[&[u8]]) -> Vec<(bool, bool)> {
        let mut heads = Heads::new();
        pieces.iter().map(|piece| heads.read(piece)).collect()
    }

    #[test]
    fn the_end_of_a_head_is_found_wherever_the_reads_split_it() {
        for request in [
            &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..],
            b"GET / HTTP/1.1\nHost: a\n\n",
        ] {
            assert_eq!(heads_through(&[request]), [(true, true)]);
            for split in 1..request.len() {
                let (a, b) = request.split_at(split);
                let seen = heads_through(&[a, b]);
                assert_eq!(seen, [(false, false), (true, true)], "split at {split}");
            }
            // A byte at a time: the end is seen once, on the last byte.
            let bytes: Vec<&[u8]> = request.chunks(1).collect();
            let seen = heads_through(&bytes);
            assert_eq!(seen.iter().filter(|(ended, _)| *ended).count(), 1);
            assert_eq!(seen.last(), Some(&(true, true)));
        }
        // Two pipelined heads and the start of a third.
        assert_eq!(
            heads_through(&[b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\nGET"]),
            [(true, false)]
        );
        // Line ends that are not an empty line.
        assert_eq!(
            heads_through(&[b"GET / HTTP/1.1\r\nA: b\r\n"]),
            [(false, false)]
        );
    }

    /// A connection over an in-memory pipe with `timeout` as the request timeout, and the
    /// client's end.
    fn connection(
        timeout: Duration,
    ) -> (Guarded<tokio::io::DuplexStream>, tokio::io::DuplexStream) {
        let (server, client) = tokio::io::duplex(1024);
        (Guarded::new(server, timeout), client)
    }

    /// What the next read gives within `within`: `Some(n)` bytes (0: the end), `None` nothing.
    async fn next_read(
        connection: &mut Guarded<tokio::io::DuplexStream>,
        within: Duration,
    ) -> Option<usize> {
        let mut buf = [0_u8; 256];
        tokio::time::timeout(within, tokio::io::AsyncReadExt::read(connection, &mut buf))
            .await
            .ok()
            .map(|read| read.unwrap())
    }

    #[tokio::test]
    async fn a_later_head_not_received_in_time_ends_the_reading_and_a_whole_one_does_not() {
        let timeout = Duration::from_millis(200);
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        // The first head, however slow, is actix-http's to bound: no end from the wrapper.
        let (mut slow_first, mut client) = connection(timeout);
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        assert_eq!(next_read(&mut slow_first, timeout).await, Some(16));
        assert_eq!(next_read(&mut slow_first, timeout * 3).await, None);
        // Whole heads: nothing ends.
        let (mut whole, mut client) = connection(timeout);
        client.write_all(head).await.unwrap();
        client.write_all(head).await.unwrap();
        assert!(next_read(&mut whole, timeout).await.is_some_and(|n| n > 0));
        assert_eq!(next_read(&mut whole, timeout * 3).await, None);
        // A later head begun and trickled: the reading ends once its deadline has passed.
        let (mut trickled, mut client) = connection(timeout);
        client.write_all(head).await.unwrap();
        client
            .write_all(b"GET / HTTP/1.1\r\nX-Slow: ")
            .await
            .unwrap();
        assert!(
            next_read(&mut trickled, timeout)
                .await
                .is_some_and(|n| n > 0)
        );
        client.write_all(b"z").await.unwrap();
        assert_eq!(next_read(&mut trickled, timeout).await, Some(1));
        assert_eq!(
            next_read(&mut trickled, Duration::from_secs(5)).await,
            Some(0)
        );
        assert_eq!(next_read(&mut trickled, timeout).await, Some(0));
    }

    #[tokio::test]
    async fn the_connection_writes_the_answer_in_place_of_the_bare_one() {
        let before = "HTTP/1.1 200 OK\r\nx-request-id: 1\r\ncontent-length: 2\r\n\r\n{}";
        let written = format!("{before}{}", bare("431 Request Header Fields Too Large"));
        // A socket that takes at most 7 bytes a write, as a full one does.
        let (client, mut server) = tokio::io::duplex(7);
        let mut connection = Guarded::new(client, Duration::from_secs(5));
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut server, &mut out)
                .await
                .map(|_| out)
        });
        connection.write_all(written.as_bytes()).await.unwrap();
        connection.shutdown().await.unwrap();
        drop(connection);
        let out = String::from_utf8(reader.await.unwrap().unwrap()).unwrap();
        let rest = out.strip_prefix(before).unwrap();
        assert!(
            rest.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{rest}"
        );
        assert!(rest.ends_with("\"}"), "{rest}");
    }
}
