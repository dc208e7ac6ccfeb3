//! Records a reader routes to one worker, exchanged as one item: the exchange moves bundles, not
//! records (no copy between threads; one message a bundle between processes), and a record
//! carries no worker index of its own. Between processes a bundle is one byte string, its
//! records written and read by [`Wire`] rather than by `serde` field by field (which took about
//! 80 ns a record over the two sides of a two-process run on the generated capture: 325 perf
//! samples at 2 kHz for 1.98 M routed records).

use serde::de::Visitor;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::marker::PhantomData;

/// Serialized bytes of a bundle besides its records: the byte string's length (`u64`) and the
/// worker index (`u32`).
pub const OVERHEAD_BYTES: u64 = 8 + 4;

/// A record in the bytes a bundle carries it in between processes.
pub trait Wire: Sized {
    /// Appends the record's bytes to `out`.
    fn put(&self, out: &mut Vec<u8>);
    /// Reads a record from the front of `input` and moves past it; `None` when the bytes are cut
    /// short or are not a record.
    fn take(input: &mut &[u8]) -> Option<Self>;
}

/// The first `N` bytes of `input`, moved past.
pub fn take_array<const N: usize>(input: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = input.split_first_chunk::<N>()?;
    *input = rest;
    Some(*head)
}

impl Wire for u32 {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn take(input: &mut &[u8]) -> Option<Self> {
        take_array(input).map(u32::from_le_bytes)
    }
}

impl Wire for u64 {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn take(input: &mut &[u8]) -> Option<Self> {
        take_array(input).map(u64::from_le_bytes)
    }
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    fn put(&self, out: &mut Vec<u8>) {
        self.0.put(out);
        self.1.put(out);
    }
    fn take(input: &mut &[u8]) -> Option<Self> {
        Some((A::take(input)?, B::take(input)?))
    }
}

/// A record in the form a worker of the reader's own process takes it (its key hashed already,
/// its tick whole), and the record as read, which is what travels when its bundle is serialized
/// after all.
pub trait Near<R> {
    /// The record as read, in a bundle whose offsets count from `base`.
    fn as_read(&self, base: u64) -> R;
}

/// Records for worker `dest`: `records` as read, hashed where they land, and `near` ones in the
/// form a worker of the same process takes them (its channel moves the bundle without
/// serializing it, so their hashes are not computed twice). Serialized, both are records as read
/// (`near` ones by [`Near::as_read`]): a bundle that does cross processes is read back whole,
/// all in `records`.
#[derive(Debug, Clone)]
pub struct Bundle<R, N> {
    pub dest: u32,
    /// The time the records' offsets count from: the reader's input time when it is sent (not
    /// on the wire: the receiver's timestamp is that time).
    pub base: u64,
    pub records: Vec<R>,
    pub near: Vec<N>,
}

impl<R, N> Bundle<R, N> {
    /// An empty bundle for `dest` with room for `records` records as read and `near` near ones.
    pub fn with_capacity(dest: u32, records: usize, near: usize) -> Self {
        Bundle {
            dest,
            base: 0,
            records: Vec::with_capacity(records),
            near: Vec::with_capacity(near),
        }
    }

    /// Records in the bundle, of both forms.
    pub fn len(&self) -> usize {
        self.records.len() + self.near.len()
    }

    /// Whether the bundle holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Bytes a serialized record takes at most, to size a bundle's byte string once.
const RECORD_BYTES_HINT: usize = 48;

impl<R: Wire, N: Near<R>> Serialize for Bundle<R, N> {
    /// One byte string: the worker index, then the records back to back.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(4 + RECORD_BYTES_HINT * self.len());
        self.dest.put(&mut bytes);
        for r in &self.records {
            r.put(&mut bytes);
        }
        for n in &self.near {
            n.as_read(self.base).put(&mut bytes);
        }
        s.serialize_bytes(&bytes)
    }
}

impl<'de, R: Wire, N> Deserialize<'de> for Bundle<R, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes<R, N>(PhantomData<(R, N)>);
        impl<R: Wire, N> Visitor<'_> for Bytes<R, N> {
            type Value = Bundle<R, N>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a bundle: a worker index and records, as bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, mut bytes: &[u8]) -> Result<Bundle<R, N>, E> {
                let dest = u32::take(&mut bytes).ok_or_else(|| E::custom("truncated bundle"))?;
                let mut records = Vec::with_capacity(bytes.len() / RECORD_BYTES_HINT);
                while !bytes.is_empty() {
                    let record = R::take(&mut bytes)
                        .ok_or_else(|| E::custom("a bundle's record is cut short or malformed"))?;
                    records.push(record);
                }
                Ok(Bundle {
                    dest,
                    base: 0,
                    records,
                    near: Vec::new(),
                })
            }
        }
        d.deserialize_bytes(Bytes(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record in the tests: an offset and a value.
    type Rec = (u32, u64);

    /// A near record in the tests: its whole tick and a value, tagged so that a test can tell
    /// it was converted.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Tagged(u64, u64);

    impl Near<Rec> for Tagged {
        fn as_read(&self, base: u64) -> Rec {
            ((self.0 - base) as u32, self.1)
        }
    }

    /// `n` records as read at offsets `0..n`, then `near` near ones at offsets `n..` (ticks from
    /// a base of 1,000).
    fn bundle(n: u32, near: u32) -> Bundle<Rec, Tagged> {
        Bundle {
            dest: 3,
            base: 1_000,
            records: (0..n).map(|i| (i, u64::from(i) << 40)).collect(),
            near: (n..n + near)
                .map(|i| Tagged(1_000 + u64::from(i), u64::from(i) << 40))
                .collect(),
        }
    }

    #[test]
    fn round_trips_in_its_counted_bytes() -> Result<(), bincode::Error> {
        for n in [0, 1, 1024, 70_000] {
            let b = bundle(n, 0);
            let bytes = bincode::serialize(&b)?;
            assert_eq!(bytes.len() as u64, OVERHEAD_BYTES + 12 * u64::from(n));
            let back: Bundle<Rec, Tagged> = bincode::deserialize(&bytes)?;
            assert_eq!((back.dest, back.records), (b.dest, b.records));
        }
        Ok(())
    }

    /// Near records cross a process as the records they were read as, after the others, in the
    /// bytes a bundle of only records as read takes.
    #[test]
    fn near_records_travel_as_read() -> Result<(), bincode::Error> {
        let mixed = bundle(3, 2);
        let read = bundle(5, 0);
        let bytes = bincode::serialize(&mixed)?;
        assert_eq!(bytes, bincode::serialize(&read)?);
        let back: Bundle<Rec, Tagged> = bincode::deserialize(&bytes)?;
        assert_eq!((mixed.len(), back.len()), (5, 5));
        assert_eq!((back.records, back.near), (read.records, Vec::new()));
        Ok(())
    }

    /// A bundle cut inside a record, or without its worker index, is an error, not fewer records.
    #[test]
    fn a_cut_bundle_does_not_read() {
        let b = bundle(5, 0);
        let mut blob = Vec::new();
        b.dest.put(&mut blob);
        for r in &b.records {
            r.put(&mut blob);
        }
        for cut in [0, 2, blob.len() - 3, blob.len() - 11] {
            let bytes = bincode::serialize(&serde_bytes_of(&blob[..cut])).unwrap_or_default();
            let read: Result<Bundle<Rec, Tagged>, _> = bincode::deserialize(&bytes);
            assert!(read.is_err(), "cut at {cut}");
        }
    }

    /// `bytes` as `serde` writes a byte string.
    fn serde_bytes_of(bytes: &[u8]) -> impl Serialize + '_ {
        struct B<'a>(&'a [u8]);
        impl Serialize for B<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        B(bytes)
    }
}
