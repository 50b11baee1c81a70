//! Compressed bodies: `Accept-Encoding` negotiation (gzip or br) and the compressed form of each
//! body kept in process, so a cached answer is compressed once per replica, not per request.
//!
//! The compressed forms are keyed by the body's validator (its `ETag`): an entry of the response
//! cache has one validator for as long as it lives, whichever tier it was read from, and two
//! bodies with the same bytes share their compressed forms.

use std::io::Write as _;

use actix_web::HttpRequest;
use actix_web::http::header::{ACCEPT_ENCODING, AcceptEncoding, Encoding, Header as _};
use bytes::Bytes;
use callstats_application::{ComputePool, ETag};
use quick_cache::Weighter;
use quick_cache::sync::Cache;

/// The content codings a body can be sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Coding {
    Identity,
    Gzip,
    Brotli,
}

impl Coding {
    /// The `Content-Encoding` value, `None` for identity.
    pub(crate) const fn header(self) -> Option<&'static str> {
        match self {
            Self::Identity => None,
            Self::Gzip => Some("gzip"),
            Self::Brotli => Some("br"),
        }
    }

    /// What the client asks for: the coding with the highest quality among gzip and br (on a
    /// tie br, the smaller), else identity. A client that refuses identity and both
    /// codings still gets identity: every client reads it, and so does one that sends no
    /// `Accept-Encoding`.
    pub(crate) fn negotiate(req: &HttpRequest) -> Self {
        if !req.headers().contains_key(ACCEPT_ENCODING) {
            return Self::Identity;
        }
        let supported = [Encoding::gzip(), Encoding::brotli(), Encoding::identity()];
        match AcceptEncoding::parse(req)
            .ok()
            .and_then(|accept| accept.negotiate(supported.iter()))
        {
            Some(chosen) if chosen == Encoding::gzip() => Self::Gzip,
            Some(chosen) if chosen == Encoding::brotli() => Self::Brotli,
            _ => Self::Identity,
        }
    }
}

/// gzip's level: the default; higher levels barely shrink our JSON further and take longer.
const GZIP_LEVEL: u32 = 6;
/// brotli's quality: a middle one compresses our JSON nearly as well as the highest in a small
/// fraction of the time, so a cold entry's first compressed answer is not held up.
const BROTLI_QUALITY: u32 = 5;
const BROTLI_WINDOW: u32 = 22;

/// `body` in `coding`.
pub(crate) fn compress(body: &[u8], coding: Coding) -> std::io::Result<Bytes> {
    match coding {
        Coding::Identity => Ok(Bytes::copy_from_slice(body)),
        Coding::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(body.len() / 4),
                flate2::Compression::new(GZIP_LEVEL),
            );
            encoder.write_all(body)?;
            encoder.finish().map(Bytes::from)
        }
        Coding::Brotli => {
            let mut out = Vec::with_capacity(body.len() / 4);
            {
                let mut encoder =
                    brotli::CompressorWriter::new(&mut out, 4096, BROTLI_QUALITY, BROTLI_WINDOW);
                encoder.write_all(body)?;
                encoder.flush()?;
            }
            Ok(Bytes::from(out))
        }
    }
}

/// Weighs a compressed body by its bytes.
#[derive(Clone, Copy)]
struct CompressedBytes;

impl Weighter<(ETag, Coding), Bytes> for CompressedBytes {
    fn weight(&self, _key: &(ETag, Coding), body: &Bytes) -> u64 {
        u64::try_from(body.len()).unwrap_or(u64::MAX).max(1)
    }
}

/// The most bytes of compressed bodies kept per replica: compressed JSON is a fifth to a tenth
/// of the body, so this holds the compressed forms of far more answers than the response cache
/// keeps at once (cold forms go first).
pub const MAX_COMPRESSED_BYTES: u64 = 32 * 1024 * 1024;

/// Bodies up to this size are compressed on the request's thread (at most some 200 µs); larger
/// ones on the compute pool, so a body of megabytes does not hold a worker up.
const COMPRESS_IN_PLACE_BYTES: usize = 64 * 1024;

/// The compressed forms of bodies, each made once.
pub(crate) struct Compressed {
    forms: Cache<(ETag, Coding), Bytes, CompressedBytes>,
    pool: ComputePool,
}

impl Compressed {
    /// Large bodies are compressed on `pool`.
    pub(crate) fn new(pool: ComputePool) -> Self {
        Self {
            forms: Cache::with_weighter(4096, MAX_COMPRESSED_BYTES, CompressedBytes),
            pool,
        }
    }
}

impl Compressed {
    /// `body` (whose validator is `etag`) in `coding`: made by the first request that asks for
    /// it; concurrent requests for the same form wait for it instead of compressing it again.
    /// `None` when it cannot be made (then the body goes out as it is).
    pub(crate) async fn get(&self, etag: ETag, body: &Bytes, coding: Coding) -> Option<Bytes> {
        if coding == Coding::Identity {
            return Some(body.clone());
        }
        match self.forms.get_value_or_guard_async(&(etag, coding)).await {
            Ok(form) => Some(form),
            Err(guard) => match self.compress(body, coding).await {
                Ok(form) => {
                    metrics::counter!("callstats_bodies_compressed_total", "coding" => coding.header().unwrap_or("identity")).increment(1);
                    let _ = guard.insert(form.clone());
                    Some(form)
                }
                Err(err) => {
                    tracing::error!(error = %err, "could not compress a body");
                    None
                }
            },
        }
    }
}

impl Compressed {
    async fn compress(&self, body: &Bytes, coding: Coding) -> std::io::Result<Bytes> {
        if body.len() <= COMPRESS_IN_PLACE_BYTES {
            return compress(body, coding);
        }
        let body = body.clone();
        self.pool
            .run(move || compress(&body, coding))
            .await
            .map_err(std::io::Error::other)?
    }
}

#[cfg(test)]
mod tests {

    use std::io::Read as _;

    use actix_web::test::TestRequest;

    use super::*;

    fn negotiated(accept: Option<&str>) -> Coding {
        let mut req = TestRequest::default();
        if let Some(accept) = accept {
            req = req.insert_header((ACCEPT_ENCODING, accept));
        }
        let req = req.to_http_request();
        Coding::negotiate(&req)
    }

    #[test]
    fn the_client_chooses_by_quality_then_by_order() {
        for (accept, want) in [
            (None, Coding::Identity),
            (Some(""), Coding::Identity),
            (Some("gzip"), Coding::Gzip),
            (Some("br"), Coding::Brotli),
            (Some("gzip, deflate, br"), Coding::Brotli),
            (Some("gzip, deflate"), Coding::Gzip),
            (Some("br;q=1.0, gzip;q=0.8"), Coding::Brotli),
            (Some("gzip;q=0.5, br;q=0.9"), Coding::Brotli),
            (Some("deflate, zstd"), Coding::Identity),
            (Some("identity"), Coding::Identity),
            (Some("gzip;q=0, br;q=0"), Coding::Identity),
            (Some("*"), Coding::Identity),
            (Some("not a header;;;"), Coding::Identity),
        ] {
            assert_eq!(negotiated(accept), want, "{accept:?}");
        }
    }

    fn body() -> Bytes {
        let rows: Vec<String> = (0..200)
            .map(|i| format!("{{\"agent_number\":\"{i}\",\"calls\":{}}}", i * 7))
            .collect();
        Bytes::from(format!("{{\"agents\":[{}]}}", rows.join(",")))
    }

    #[test]
    fn both_codings_give_back_the_body_smaller() {
        let body = body();
        let gzip = compress(&body, Coding::Gzip).unwrap();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gzip[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, body);
        let br = compress(&body, Coding::Brotli).unwrap();
        let mut back = Vec::new();
        brotli::Decompressor::new(&br[..], 4096)
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, body);
        assert!(gzip.len() * 3 < body.len() && br.len() * 3 < body.len());
    }

    #[tokio::test]
    async fn a_form_is_made_once_and_then_shared() {
        let compressed = Compressed::new(ComputePool::new(1));
        let body = body();
        let etag = ETag::of(&body);
        let first = compressed.get(etag, &body, Coding::Gzip).await.unwrap();
        let again = compressed.get(etag, &body, Coding::Gzip).await.unwrap();
        // The same allocation: nothing was compressed the second time.
        assert_eq!(first.as_ptr(), again.as_ptr());
        let br = compressed.get(etag, &body, Coding::Brotli).await.unwrap();
        assert_ne!(br, first);
        let plain = compressed.get(etag, &body, Coding::Identity).await.unwrap();
        assert_eq!(plain.as_ptr(), body.as_ptr());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_large_body_is_compressed_off_the_request_thread() {
        let compressed = Compressed::new(ComputePool::new(1));
        let large: Bytes = body()
            .iter()
            .copied()
            .cycle()
            .take(1 << 20)
            .collect::<Vec<_>>()
            .into();
        let small = body();
        for (body, off_thread) in [(large, true), (small, false)] {
            let finished = std::sync::atomic::AtomicBool::new(false);
            // Polled one after the other on the one runtime thread: the second runs before the
            // first is done only if the first waits for another thread.
            let (form, ran_meanwhile) = tokio::join!(
                async {
                    let form = compressed.get(ETag::of(&body), &body, Coding::Gzip).await;
                    finished.store(true, std::sync::atomic::Ordering::SeqCst);
                    form
                },
                async { !finished.load(std::sync::atomic::Ordering::SeqCst) }
            );
            assert!(form.unwrap().len() < body.len());
            assert_eq!(ran_meanwhile, off_thread, "{} bytes", body.len());
        }
    }
}
