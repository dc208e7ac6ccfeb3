//! Records as a reader sends them, by their key's digest: into its own worker's input
//! ([`Local`]), and to other workers in bundles, serialized between processes ([`Routed`]) and as
//! they are within the process ([`NearRecord`]).

use crate::bundle::{self, Bundle, Near, Wire};
use crate::source::Hashed;
use chronobloom::core::hash::{CanonicalBytes, Key, KeyHash};
use chronobloom::core::temporal::Tick;
use chronobloom::operators::timely;
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::InputHandle;
use timely::ExchangeData;

/// A record as it travels between processes: its key's digest (computed once, by the reader,
/// which routes by it), and its position in the input when the passed records are collected.
pub trait JobRecord: ExchangeData + Clone + Wire {
    /// Serialized bytes of a record.
    const WIRE_BYTES: u64;
    /// The record of the key with digest `digest` at position `seq` (the position is dropped
    /// when the record carries none).
    fn from_parts(seq: u64, digest: KeyHash) -> Self;
    /// The key's digest under the job's seed.
    fn digest(&self) -> KeyHash;
    /// The record's position in the input (0 when it carries none).
    fn seq(&self) -> u64;
    /// The position a record of `r` carries: `r.seq` or 0.
    fn seq_of(r: &Hashed) -> u64;
}

impl JobRecord for KeyHash {
    const WIRE_BYTES: u64 = 16;
    fn from_parts(_: u64, digest: KeyHash) -> Self {
        digest
    }
    fn digest(&self) -> KeyHash {
        *self
    }
    fn seq(&self) -> u64 {
        0
    }
    fn seq_of(_: &Hashed) -> u64 {
        0
    }
}

impl JobRecord for (u64, KeyHash) {
    const WIRE_BYTES: u64 = 8 + 16;
    fn from_parts(seq: u64, digest: KeyHash) -> Self {
        (seq, digest)
    }
    fn digest(&self) -> KeyHash {
        self.1
    }
    fn seq(&self) -> u64 {
        self.0
    }
    fn seq_of(r: &Hashed) -> u64 {
        r.seq
    }
}

/// Records a reader hands an input at a time: fuller messages than one `send` per record makes.
pub const BATCH: usize = 1024;

/// Sends `batch` (when not empty) into `input` at its current time, leaving it empty.
pub fn flush<T: Clone + 'static>(
    batch: &mut Vec<T>,
    input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<T>>>,
) {
    if !batch.is_empty() {
        input.send_batch(batch);
        batch.clear();
        batch.reserve(BATCH);
    }
}

/// Sends `bundle` (leaving it empty, with room for a batch of the forms it held); returns its
/// serialized bytes besides its records'.
pub fn send_bundle<D: JobRecord>(
    input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Sent<D>>>>,
    bundle: &mut Sent<D>,
) -> u64 {
    let room = |held: usize| if held > 0 { BATCH } else { 0 };
    let next = Bundle::with_capacity(
        bundle.dest,
        room(bundle.records.len()),
        room(bundle.near.len()),
    );
    bundle.base = *input.time();
    input.send(std::mem::replace(bundle, next));
    input.flush();
    bundle::OVERHEAD_BYTES
}

/// Sends every non-empty bundle of `bundles`; returns their serialized bytes besides their
/// records'.
pub fn send_bundles<D: JobRecord>(
    bundles: &mut [Sent<D>],
    input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Sent<D>>>>,
) -> u64 {
    let mut bytes = 0;
    for b in bundles.iter_mut().filter(|b| !b.is_empty()) {
        bytes += send_bundle(input, b);
    }
    bytes
}

/// A record routed to another worker: its tick's offset from its timestamp (the reader's input
/// time, the first tick of its epoch or of an earlier one), and the record (16 bytes of digest,
/// plus 8 of position when collected: less than an IPv6 key, 2 bytes more than an IPv4 5-tuple's,
/// and nothing to parse or hash where it lands).
pub type Routed<D> = (u32, D);

/// Serialized bytes of a routed record's offset.
pub const ROUTE_BYTES: u64 = 4;

/// A routed record for a worker of the reader's own process, as the operators take it: its tick
/// and the record ([`Bundle`]; a bundle of them lands whole, without a pass over its records).
pub type NearRecord = (Tick, Local);

/// The records a reader routes to one worker.
pub type Sent<D> = Bundle<Routed<D>, NearRecord>;

impl<D: JobRecord> Near<Routed<D>> for NearRecord {
    fn as_read(&self, base: u64) -> Routed<D> {
        let offset = u32::try_from(self.0.saturating_sub(base)).unwrap_or(u32::MAX);
        (offset, D::from_parts(self.1.seq, self.1.digest))
    }
}

/// A record inside a worker, as the dedup and the index take it: its position (when the passed
/// records are collected, else 0) and its key's 128-bit digest under the job's seed, hashed once
/// for routing, dedup and index (40 bytes with its tick, where the key itself made 80).
///
/// As a [`Key`] it is its digest: its hash under the job's seed is the digest, so the index
/// finds it by its flow key; the same-tick choice of the dedup operator tells keys apart by
/// their digests, as the exact baseline's map does (two keys share one with probability about
/// 2^-128). Under another seed it hashes its digest's bytes (no operator of the job uses one).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Local {
    /// The position in the input, when the passed records are collected (else 0).
    pub seq: u64,
    seed: u64,
    digest: KeyHash,
}

impl Local {
    /// The record at position `seq` of the key whose hash under `seed` is `digest`.
    pub fn new(seq: u64, seed: u64, digest: KeyHash) -> Self {
        Local { seq, seed, digest }
    }
}

impl Key for Local {
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        out.put(&self.digest.lo.to_le_bytes());
        out.put(&self.digest.hi.to_le_bytes());
    }

    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        if seed == self.seed {
            self.digest
        } else {
            let mut bytes = CanonicalBytes::new();
            self.write_canonical(&mut bytes);
            KeyHash::of_bytes(bytes.as_slice(), seed)
        }
    }
}

impl Wire for KeyHash {
    fn put(&self, out: &mut Vec<u8>) {
        (self.lo, self.hi).put(out);
    }
    fn take(input: &mut &[u8]) -> Option<Self> {
        let (lo, hi) = <(u64, u64)>::take(input)?;
        Some(KeyHash { lo, hi })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chronobloom::trace::FlowKey;

    fn keys() -> Vec<FlowKey> {
        [
            "10.0.0.1:1234>192.0.2.1:80/6",
            "[2001:db8::1]:443>10.0.0.2:5000/17",
        ]
        .iter()
        .filter_map(|k| k.parse().ok())
        .collect()
    }

    /// Under the job's seed a record is its flow key to every filter (queries by key find it);
    /// under another seed it is its digest, the same for equal digests and apart from others.
    #[test]
    fn a_record_hashes_as_its_key_under_the_jobs_seed() {
        let keys = keys();
        assert_eq!(keys.len(), 2);
        for seed in [0, 7] {
            let locals: Vec<Local> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| Local::new(i as u64, seed, KeyHash::of(k, seed)))
                .collect();
            for (k, l) in keys.iter().zip(&locals) {
                assert_eq!(l.key_hash(seed), KeyHash::of(k, seed));
                let other = Local::new(99, seed, l.digest);
                assert_eq!(other.key_hash(seed + 1), l.key_hash(seed + 1));
                assert_ne!(l.key_hash(seed + 1), l.digest);
            }
            assert_ne!(locals[0].key_hash(seed + 1), locals[1].key_hash(seed + 1));
        }
    }

    /// Records travel as 16 bytes of digest (24 with the position) and read back; cut short,
    /// they do not read.
    #[test]
    fn records_travel_in_their_counted_bytes() {
        let digest = KeyHash::of(&keys()[1], 3);
        let mut bytes = Vec::new();
        digest.put(&mut bytes);
        assert_eq!(bytes.len() as u64, <KeyHash as JobRecord>::WIRE_BYTES);
        assert_eq!(KeyHash::take(&mut bytes.as_slice()), Some(digest));
        let mut with_seq = Vec::new();
        (5u64, digest).put(&mut with_seq);
        assert_eq!(
            with_seq.len() as u64,
            <(u64, KeyHash) as JobRecord>::WIRE_BYTES
        );
        assert_eq!(
            <(u64, KeyHash)>::take(&mut with_seq.as_slice()),
            Some((5, digest))
        );
        assert_eq!(KeyHash::take(&mut &bytes[..15]), None);
    }
}
