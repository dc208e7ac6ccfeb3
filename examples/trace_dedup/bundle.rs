//! Records a reader routes to one worker, exchanged as one item: the exchange moves bundles, not
//! records (no copy between threads; one message a bundle between processes), and a record
//! carries no worker index of its own.

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::{Error as _, SerializeTuple};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::marker::PhantomData;

/// The most records a bundle holds (its length travels as a `u16`).
pub const MAX_RECORDS: usize = u16::MAX as usize;

/// Serialized bytes of a bundle besides its records: the worker index (`u32`) and the record
/// count (`u16`).
pub const OVERHEAD_BYTES: u64 = 4 + 2;

/// A record in the form a worker of the reader's own process takes it (its key hashed already),
/// and the record as read, which is what travels when its bundle is serialized after all.
pub trait Near<R> {
    /// The record as read.
    fn as_read(&self) -> R;
}

/// Records for worker `dest`: `records` as read, hashed where they land, and `near` ones in the
/// form a worker of the same process takes them (its channel moves the bundle without
/// serializing it, so their hashes are not computed twice). Serialized, both are records as read
/// (`near` ones by [`Near::as_read`]): a bundle that does cross processes is read back whole,
/// all in `records`.
#[derive(Debug, Clone)]
pub struct Bundle<R, N> {
    pub dest: u32,
    pub records: Vec<R>,
    pub near: Vec<N>,
}

impl<R, N> Bundle<R, N> {
    /// An empty bundle for `dest` with room for `records` records as read and `near` near ones.
    pub fn with_capacity(dest: u32, records: usize, near: usize) -> Self {
        Bundle {
            dest,
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

impl<R: Serialize, N: Near<R>> Serialize for Bundle<R, N> {
    /// The worker index, the count as a `u16` (where a vector would take a `u64`), the records.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let count = u16::try_from(self.len())
            .map_err(|_| S::Error::custom("a bundle holds at most 65,535 records"))?;
        let mut t = s.serialize_tuple(2 + self.len())?;
        t.serialize_element(&self.dest)?;
        t.serialize_element(&count)?;
        for r in &self.records {
            t.serialize_element(r)?;
        }
        for n in &self.near {
            t.serialize_element(&n.as_read())?;
        }
        t.end()
    }
}

impl<'de, R: Deserialize<'de>, N> Deserialize<'de> for Bundle<R, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Items<R, N>(PhantomData<(R, N)>);
        impl<'de, R: Deserialize<'de>, N> Visitor<'de> for Items<R, N> {
            type Value = Bundle<R, N>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a bundle: a worker index, a record count and the records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bundle<R, N>, A::Error> {
                let missing = || A::Error::custom("truncated bundle");
                let dest: u32 = seq.next_element()?.ok_or_else(missing)?;
                let count: u16 = seq.next_element()?.ok_or_else(missing)?;
                let mut records = Vec::with_capacity(usize::from(count));
                for _ in 0..count {
                    records.push(seq.next_element()?.ok_or_else(missing)?);
                }
                Ok(Bundle {
                    dest,
                    records,
                    near: Vec::new(),
                })
            }
        }
        // the most elements a bundle has; the visitor reads as many as its count says
        d.deserialize_tuple(2 + MAX_RECORDS, Items(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chronobloom::trace::FlowKey;
    use std::net::{IpAddr, Ipv4Addr};

    /// A near record in the tests: the record as read, tagged so that a test can tell it was
    /// converted.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Tagged(u32, FlowKey);

    impl Near<(u32, FlowKey)> for Tagged {
        fn as_read(&self) -> (u32, FlowKey) {
            (self.0, self.1)
        }
    }

    fn key(i: u32) -> FlowKey {
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        FlowKey::FiveTuple(a, a, i as u16, 80, 6)
    }

    fn bundle(n: u32, near: u32) -> Bundle<(u32, FlowKey), Tagged> {
        Bundle {
            dest: 3,
            records: (0..n).map(|i| (i, key(i))).collect(),
            near: (n..n + near).map(|i| Tagged(i, key(i))).collect(),
        }
    }

    #[test]
    fn round_trips_in_its_counted_bytes() -> Result<(), bincode::Error> {
        for n in [0, 1, 1024] {
            let b = bundle(n, 0);
            let bytes = bincode::serialize(&b)?;
            let records = bincode::serialized_size(&b.records)? - 8;
            assert_eq!(bytes.len() as u64, OVERHEAD_BYTES + records);
            let back: Bundle<(u32, FlowKey), Tagged> = bincode::deserialize(&bytes)?;
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
        let back: Bundle<(u32, FlowKey), Tagged> = bincode::deserialize(&bytes)?;
        assert_eq!((mixed.len(), back.len()), (5, 5));
        assert_eq!((back.records, back.near), (read.records, Vec::new()));
        Ok(())
    }

    #[test]
    fn a_bundle_over_the_count_does_not_serialize_and_a_cut_one_does_not_read() {
        let mut big = bundle(1, 0);
        big.records = vec![big.records[0]; MAX_RECORDS];
        big.near = vec![Tagged(0, key(0))];
        assert!(bincode::serialize(&big).is_err());
        let bytes = bincode::serialize(&bundle(5, 0)).unwrap_or_default();
        let cut: Result<Bundle<(u32, FlowKey), Tagged>, _> =
            bincode::deserialize(&bytes[..bytes.len() - 3]);
        assert!(cut.is_err());
    }
}
