//! One checkpoint file: a fixed little-endian header, the payload, and a checksum of both.
//!
//! ```text
//! offset  size  field
//!      0     8  magic  "CHRBLMCP"
//!      8     2  format version (2: the dedup state keeps a young stream's key hashes)
//!     10     2  part name length n (1..=64)
//!     12     n  part name (ASCII: "dedup", "index", "source", ...)
//!   12+n     4  worker
//!   16+n     4  workers
//!   20+n     8  boundary tick
//!   28+n     8  job fingerprint
//!   36+n     8  payload length p
//!   44+n     p  payload
//! 44+n+p     8  xxh3-64 of every byte before it
//! ```

use super::error::CheckpointError;
use std::path::Path;
use xxhash_rust::xxh3::xxh3_64;

/// The first bytes of every checkpoint file.
pub const MAGIC: &[u8; 8] = b"CHRBLMCP";
/// The format version this build reads and writes.
pub const VERSION: u16 = 4;
/// The longest part name.
pub const MAX_PART_NAME: usize = 64;

/// What a checkpoint file says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Which state the payload holds ("dedup", "index", "source", ...).
    pub part: String,
    /// The worker that wrote it.
    pub worker: u32,
    /// How many workers the job had.
    pub workers: u32,
    /// The checkpoint's boundary: the payload reflects every record before this tick and none
    /// at or after it.
    pub boundary: u64,
    /// A fingerprint of the job's configuration: a checkpoint restores only into the same job.
    pub job: u64,
}

/// Encodes a header and payload into the bytes of one file.
///
/// ```
/// use chronobloom_operators::checkpoint::{decode, encode, Header};
/// let h = Header { part: "dedup".into(), worker: 0, workers: 2, boundary: 60_000, job: 7 };
/// let bytes = encode(&h, b"state").unwrap();
/// let (back, payload) = decode(std::path::Path::new("mem"), &bytes).unwrap();
/// assert_eq!((back, payload), (h, &b"state"[..]));
/// ```
pub fn encode(header: &Header, payload: &[u8]) -> Result<Vec<u8>, CheckpointError> {
    let mut out = header_bytes(header, payload.len() as u64)?;
    out.extend_from_slice(payload);
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// The bytes before a payload of `payload_len` bytes; the checksum is the xxh3-64 of them and the
/// payload.
pub(crate) fn header_bytes(header: &Header, payload_len: u64) -> Result<Vec<u8>, CheckpointError> {
    let name = header.part.as_bytes();
    if name.is_empty() || name.len() > MAX_PART_NAME || !header.part.is_ascii() {
        return Err(CheckpointError::state(
            "checkpoint",
            format!(
                "part name {:?} must be 1 to {MAX_PART_NAME} ASCII bytes",
                header.part
            ),
        ));
    }
    let mut out = Vec::with_capacity(44 + name.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(&header.worker.to_le_bytes());
    out.extend_from_slice(&header.workers.to_le_bytes());
    out.extend_from_slice(&header.boundary.to_le_bytes());
    out.extend_from_slice(&header.job.to_le_bytes());
    out.extend_from_slice(&payload_len.to_le_bytes());
    Ok(out)
}

/// Decodes and verifies one file's bytes (`path` only names it in errors): the header and a view
/// of the payload, or why the bytes are not a whole, uncorrupted checkpoint file.
pub fn decode<'a>(path: &Path, bytes: &'a [u8]) -> Result<(Header, &'a [u8]), CheckpointError> {
    let mut r = Reader {
        path,
        bytes,
        at: 0,
        need: 12,
    };
    if bytes.len() >= MAGIC.len() && &bytes[..MAGIC.len()] != MAGIC {
        return Err(CheckpointError::Foreign { path: path.into() });
    }
    let magic = r.take(MAGIC.len())?;
    if magic != MAGIC {
        return Err(CheckpointError::Foreign { path: path.into() });
    }
    let version = u16::from_le_bytes(r.array()?);
    if version != VERSION {
        return Err(CheckpointError::Version {
            path: path.into(),
            found: version,
            supported: VERSION,
        });
    }
    let name_len = u16::from_le_bytes(r.array()?) as usize;
    if name_len == 0 || name_len > MAX_PART_NAME {
        return Err(corrupt_field(path, "part name length", name_len));
    }
    r.need = 12 + name_len as u64 + 32 + 8;
    let part = std::str::from_utf8(r.take(name_len)?)
        .ok()
        .filter(|s| s.is_ascii())
        .ok_or_else(|| corrupt_field(path, "part name", "not ASCII"))?
        .to_owned();
    let worker = u32::from_le_bytes(r.array()?);
    let workers = u32::from_le_bytes(r.array()?);
    let boundary = u64::from_le_bytes(r.array()?);
    let job = u64::from_le_bytes(r.array()?);
    let payload_len = u64::from_le_bytes(r.array()?);
    r.need = r.need.saturating_add(payload_len);
    // saturating: a corrupted length near 2^64 is then simply longer than the file
    let body_end = (r.at as u64).saturating_add(payload_len);
    if (bytes.len() as u64) < body_end.saturating_add(8) {
        return Err(CheckpointError::Truncated {
            path: path.into(),
            len: bytes.len() as u64,
            expected: body_end.saturating_add(8),
        });
    }
    let payload = r.take(payload_len as usize)?;
    let found = u64::from_le_bytes(r.array()?);
    let expected = xxh3_64(&bytes[..body_end as usize]);
    if found != expected || r.at != bytes.len() {
        return Err(CheckpointError::Corrupt {
            path: path.into(),
            found,
            expected,
        });
    }
    if worker >= workers {
        return Err(corrupt_field(
            path,
            "worker",
            format!("{worker} of {workers}"),
        ));
    }
    let header = Header {
        part,
        worker,
        workers,
        boundary,
        job,
    };
    Ok((header, payload))
}

fn corrupt_field(path: &Path, what: &'static str, found: impl ToString) -> CheckpointError {
    CheckpointError::Mismatch {
        path: path.into(),
        what,
        found: found.to_string(),
        expected: "a valid checkpoint header".into(),
    }
}

/// A cursor over a file's bytes that reports truncation with the size the header announces.
struct Reader<'p, 'a> {
    path: &'p Path,
    bytes: &'a [u8],
    at: usize,
    need: u64,
}

impl<'a> Reader<'_, 'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CheckpointError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(CheckpointError::Truncated {
                path: self.path.into(),
                len: self.bytes.len() as u64,
                expected: self.need.max(self.at as u64 + n as u64),
            });
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], CheckpointError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let h = Header {
            part: "index".into(),
            worker: 1,
            workers: 2,
            boundary: 10,
            job: 99,
        };
        encode(&h, &[1, 2, 3, 4, 5]).expect("valid header")
    }

    #[test]
    fn every_truncation_is_refused_as_truncated() {
        let bytes = sample();
        let p = Path::new("t");
        for len in 0..bytes.len() {
            match decode(p, &bytes[..len]) {
                Err(CheckpointError::Truncated { .. }) => {}
                other => panic!("length {len}: {other:?}"),
            }
        }
    }

    #[test]
    fn every_flipped_bit_is_refused() {
        let bytes = sample();
        for i in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[i / 8] ^= 1 << (i % 8);
            assert!(decode(Path::new("f"), &b).is_err(), "bit {i} accepted");
        }
    }

    #[test]
    fn foreign_and_future_files_are_named_as_such() {
        let p = Path::new("x");
        assert!(matches!(
            decode(p, b"PK\x03\x04 a zip file, not ours"),
            Err(CheckpointError::Foreign { .. })
        ));
        let mut b = sample();
        b[8] = 5;
        assert!(matches!(
            decode(p, &b),
            Err(CheckpointError::Version { found: 5, .. })
        ));
    }

    #[test]
    fn trailing_bytes_are_corruption() {
        let mut b = sample();
        b.push(0);
        assert!(matches!(
            decode(Path::new("t"), &b),
            Err(CheckpointError::Corrupt { .. })
        ));
    }
}
