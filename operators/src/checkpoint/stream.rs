//! Writing a checkpoint file's bytes as they are produced: the checksum and the payload's length
//! are kept on the way, so a payload is never held whole in memory.

use std::io::{self, Write};
use xxhash_rust::xxh3::Xxh3Default;

/// A writer that hashes (xxh3-64, the file's checksum) and counts every byte it passes on.
pub(crate) struct HashingWriter<W> {
    inner: W,
    hash: Xxh3Default,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`, with nothing hashed yet.
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hash: Xxh3Default::new(),
            written: 0,
        }
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The checksum of every byte written, and the writer they went to.
    pub fn finish(self) -> (u64, W) {
        (self.hash.digest(), self.inner)
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64;

    #[test]
    fn hashes_and_counts_what_it_passes_on() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut w = HashingWriter::new(Vec::new());
        for chunk in data.chunks(333) {
            w.write_all(chunk).expect("vec");
        }
        assert_eq!(w.written(), data.len() as u64);
        let (sum, out) = w.finish();
        assert_eq!((sum, out.as_slice()), (xxh3_64(&data), data.as_slice()));
    }
}
