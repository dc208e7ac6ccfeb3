//! A directory of checkpoints: one subdirectory per boundary, one file per part per worker,
//! written atomically; the newest complete checkpoint found and verified; older ones pruned.

use super::error::CheckpointError;
use super::format::{decode, header_bytes, Header};
use super::stream::HashingWriter;
use serde::Serialize;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A checkpoint directory shared by every worker of a job (on one machine, or a shared file
/// system).
///
/// ```
/// use chronobloom_operators::checkpoint::{CheckpointStore, Header};
/// let dir = tempfile::tempdir().unwrap();
/// let store = CheckpointStore::open(dir.path()).unwrap();
/// let parts = [("dedup", 0), ("dedup", 1)];
/// for w in 0..2 {
///     let h = Header { part: "dedup".into(), worker: w, workers: 2, boundary: 100, job: 5 };
///     store.write(&h, b"state").unwrap();
/// }
/// assert_eq!(store.newest_complete(5, 2, &parts).unwrap().complete, Some(100));
/// let (_, payload) = store.read(100, "dedup", 1, 2, 5).unwrap();
/// assert_eq!(payload, b"state");
/// ```
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    dir: PathBuf,
}

/// What [`CheckpointStore::newest_complete`] found.
#[derive(Debug, Default)]
pub struct Scan {
    /// The newest boundary whose every expected file exists and verifies.
    pub complete: Option<u64>,
    /// Newer checkpoints that could not be used, each with the first reason.
    pub skipped: Vec<(u64, CheckpointError)>,
}

const DIR_PREFIX: &str = "ckpt-";
/// Bytes buffered between a payload's serializer and its file.
const WRITE_BUFFER: usize = 64 * 1024;

impl CheckpointStore {
    /// Opens (creating if needed) a checkpoint directory.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| CheckpointError::io(&dir, e))?;
        Ok(CheckpointStore { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory of the checkpoint at `boundary`.
    pub fn checkpoint_dir(&self, boundary: u64) -> PathBuf {
        self.dir.join(format!("{DIR_PREFIX}{boundary:020}"))
    }

    /// The file of one part of one worker at `boundary`.
    pub fn path(&self, boundary: u64, part: &str, worker: u32) -> PathBuf {
        self.checkpoint_dir(boundary)
            .join(format!("{part}-w{worker:04}.ckpt"))
    }

    /// Writes one part atomically: to a temporary file, synced, renamed into place, directory
    /// synced. A reader sees the whole file or none.
    pub fn write(&self, header: &Header, payload: &[u8]) -> Result<PathBuf, CheckpointError> {
        self.write_with(header, "checkpoint", payload.len() as u64, |w| {
            w.write_all(payload)
        })
    }

    /// Writes one part as [`Self::write`] does, the payload being `state` serialized as
    /// [`to_bytes`](super::to_bytes) would serialize it (the file is byte for byte the same),
    /// but straight into the file: the payload is never held in memory. `operator` names the
    /// state in errors.
    pub fn write_state<T: Serialize + ?Sized>(
        &self,
        header: &Header,
        operator: &'static str,
        state: &T,
    ) -> Result<PathBuf, CheckpointError> {
        let len = bincode::serialized_size(state)
            .map_err(|e| CheckpointError::state(operator, e.to_string()))?;
        self.write_with(header, operator, len, |w| {
            bincode::serialize_into(w, state).map_err(|e| match *e {
                bincode::ErrorKind::Io(e) => e,
                other => io::Error::other(other.to_string()),
            })
        })
    }

    /// The atomic write of a payload of `len` bytes that `fill` writes; the file is refused
    /// (left as a temporary file) if `fill` writes another number of bytes.
    fn write_with(
        &self,
        header: &Header,
        operator: &'static str,
        len: u64,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<PathBuf, CheckpointError> {
        let head = header_bytes(header, len)?;
        let dir = self.checkpoint_dir(header.boundary);
        fs::create_dir_all(&dir).map_err(|e| CheckpointError::io(&dir, e))?;
        let path = self.path(header.boundary, &header.part, header.worker);
        let tmp = path.with_extension("ckpt.tmp");
        let f = fs::File::create(&tmp).map_err(|e| CheckpointError::io(&tmp, e))?;
        // Buffered before the hash, so the checksum is updated a buffer at a time, not for
        // each of the serializer's small writes.
        let mut w = BufWriter::with_capacity(WRITE_BUFFER, HashingWriter::new(f));
        let hashed = w
            .write_all(&head)
            .and_then(|()| fill(&mut w))
            .and_then(|()| w.into_inner().map_err(io::IntoInnerError::into_error))
            .map_err(|e| CheckpointError::io(&tmp, e))?;
        let payload = hashed.written() - head.len() as u64;
        if payload != len {
            return Err(CheckpointError::state(
                operator,
                format!("serialized to {payload} bytes, {len} announced"),
            ));
        }
        let (sum, mut f) = hashed.finish();
        f.write_all(&sum.to_le_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| CheckpointError::io(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| CheckpointError::io(&path, e))?;
        sync_dir(&dir)?;
        Ok(path)
    }

    /// Reads and verifies one part: the file must decode, and its header must name this
    /// boundary, part, worker, worker count and job.
    pub fn read(
        &self,
        boundary: u64,
        part: &str,
        worker: u32,
        workers: u32,
        job: u64,
    ) -> Result<(Header, Vec<u8>), CheckpointError> {
        let path = self.path(boundary, part, worker);
        let mut bytes = fs::read(&path).map_err(|e| CheckpointError::io(&path, e))?;
        let (h, payload) = decode(&path, &bytes)?;
        // The payload ends where the checksum starts: it is kept in place, not copied.
        let payload = bytes.len() - 8 - payload.len()..bytes.len() - 8;
        let check = |what: &'static str, found: String, expected: String| {
            if found == expected {
                Ok(())
            } else {
                Err(CheckpointError::Mismatch {
                    path: path.clone(),
                    what,
                    found,
                    expected,
                })
            }
        };
        check(
            "job fingerprint",
            format!("{:#x}", h.job),
            format!("{job:#x}"),
        )?;
        check("worker count", h.workers.to_string(), workers.to_string())?;
        check("part", h.part.clone(), part.to_owned())?;
        check("worker", h.worker.to_string(), worker.to_string())?;
        check("boundary", h.boundary.to_string(), boundary.to_string())?;
        bytes.truncate(payload.end);
        bytes.drain(..payload.start);
        Ok((h, bytes))
    }

    /// Boundaries of the checkpoints in the directory, newest first (complete or not).
    pub fn boundaries(&self) -> Result<Vec<u64>, CheckpointError> {
        let entries = fs::read_dir(&self.dir).map_err(|e| CheckpointError::io(&self.dir, e))?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| CheckpointError::io(&self.dir, e))?;
            let name = entry.file_name();
            let Some(b) = name
                .to_str()
                .and_then(|n| n.strip_prefix(DIR_PREFIX))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            out.push(b);
        }
        out.sort_unstable_by(|a, b| b.cmp(a));
        Ok(out)
    }

    /// Whether every expected `(part, worker)` file of `boundary` exists (written whole: files
    /// appear only by rename). Cheap; [`Self::newest_complete`] also verifies them.
    pub fn all_present(&self, boundary: u64, expected: &[(&str, u32)]) -> bool {
        expected
            .iter()
            .all(|(part, w)| self.path(boundary, part, *w).is_file())
    }

    /// The newest checkpoint whose every expected `(part, worker)` file exists and verifies
    /// against `job` and `workers`, and why newer ones were skipped. A file of another job or
    /// worker count is an error, not a skip: resuming a different job from it would be wrong.
    pub fn newest_complete(
        &self,
        job: u64,
        workers: u32,
        expected: &[(&str, u32)],
    ) -> Result<Scan, CheckpointError> {
        let mut scan = Scan::default();
        for b in self.boundaries()? {
            let mut problem = None;
            for (part, w) in expected {
                match self.read(b, part, *w, workers, job) {
                    Ok(_) => {}
                    Err(e @ CheckpointError::Mismatch { what, .. })
                        if what == "job fingerprint" || what == "worker count" =>
                    {
                        return Err(e)
                    }
                    Err(e) => {
                        problem = Some(e);
                        break;
                    }
                }
            }
            match problem {
                None => {
                    scan.complete = Some(b);
                    return Ok(scan);
                }
                Some(e) => scan.skipped.push((b, e)),
            }
        }
        Ok(scan)
    }

    /// Removes every checkpoint older than `keep_from` (call it with a complete checkpoint's
    /// boundary). Returns how many were removed.
    pub fn prune_before(&self, keep_from: u64) -> Result<usize, CheckpointError> {
        let mut removed = 0;
        for b in self.boundaries()? {
            if b < keep_from {
                let dir = self.checkpoint_dir(b);
                match fs::remove_dir_all(&dir) {
                    Ok(()) => removed += 1,
                    // Another worker pruned it first.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(CheckpointError::io(&dir, e)),
                }
            }
        }
        Ok(removed)
    }
}

fn sync_dir(dir: &Path) -> Result<(), CheckpointError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| CheckpointError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(part: &str, worker: u32, boundary: u64) -> Header {
        Header {
            part: part.into(),
            worker,
            workers: 2,
            boundary,
            job: 1,
        }
    }

    #[test]
    fn an_incomplete_or_corrupt_newer_checkpoint_falls_back_to_the_complete_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let s = CheckpointStore::open(dir.path()).expect("open");
        let expected = [("a", 0), ("a", 1)];
        for w in 0..2 {
            s.write(&header("a", w, 10), b"x").expect("write");
        }
        s.write(&header("a", 0, 20), b"y").expect("write");
        let scan = s.newest_complete(1, 2, &expected).expect("scan");
        assert_eq!(scan.complete, Some(10));
        assert_eq!(scan.skipped.len(), 1);
        s.write(&header("a", 1, 20), b"y").expect("write");
        let p = s.path(20, "a", 1);
        let mut bytes = fs::read(&p).expect("read");
        let last = bytes.len() - 9;
        bytes[last] ^= 0x40;
        fs::write(&p, bytes).expect("corrupt");
        let scan = s.newest_complete(1, 2, &expected).expect("scan");
        assert_eq!(scan.complete, Some(10));
        assert!(matches!(scan.skipped[0].1, CheckpointError::Corrupt { .. }));
        assert!(s.all_present(20, &expected));
        assert_eq!(s.prune_before(20).expect("prune"), 1);
        assert_eq!(s.boundaries().expect("list"), vec![20]);
    }

    #[test]
    fn state_written_straight_into_the_file_is_the_encoded_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let s = CheckpointStore::open(dir.path()).expect("open");
        let state: (u64, Vec<Option<String>>, [u8; 3]) =
            (7, vec![Some("x".repeat(100_000)), None], [1, 2, 3]);
        let h = header("state", 1, 30);
        let path = s.write_state(&h, "state", &state).expect("write");
        let payload = crate::checkpoint::to_bytes("state", &state).expect("bytes");
        let file = fs::read(&path).expect("read");
        assert_eq!(file, super::super::encode(&h, &payload).expect("encode"));
        let (_, back) = s.read(30, "state", 1, 2, 1).expect("read back");
        assert_eq!(back, payload);
    }

    #[test]
    fn another_jobs_checkpoint_is_refused_not_skipped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let s = CheckpointStore::open(dir.path()).expect("open");
        s.write(&header("a", 0, 10), b"x").expect("write");
        let err = s.newest_complete(2, 2, &[("a", 0)]).expect_err("other job");
        assert!(err.to_string().contains("job fingerprint"), "{err}");
        let err = s
            .newest_complete(1, 4, &[("a", 0)])
            .expect_err("other size");
        assert!(err.to_string().contains("worker count is 2"), "{err}");
    }
}
