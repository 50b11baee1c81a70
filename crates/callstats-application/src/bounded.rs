//! A body's buffer, bounded: the JSON and CSV writers stop at the largest body an answer may
//! have, so no larger buffer is ever held.

use bytes::Bytes;

/// A buffer that refuses to grow past its limit.
pub(crate) struct Bounded {
    bytes: Vec<u8>,
    limit: usize,
}

impl Bounded {
    pub(crate) const fn new(limit: usize) -> Self {
        Self {
            bytes: Vec::new(),
            limit,
        }
    }

    pub(crate) fn into_bytes(self) -> Bytes {
        Bytes::from(self.bytes)
    }
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.limit {
            return Err(std::io::Error::other("past the body bound"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
