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

/// Records for worker `dest`.
#[derive(Debug, Clone)]
pub struct Bundle<R> {
    pub dest: u32,
    pub records: Vec<R>,
}

impl<R: Serialize> Serialize for Bundle<R> {
    /// The worker index, the count as a `u16` (where a vector would take a `u64`), the records.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let count = u16::try_from(self.records.len())
            .map_err(|_| S::Error::custom("a bundle holds at most 65,535 records"))?;
        let mut t = s.serialize_tuple(2 + self.records.len())?;
        t.serialize_element(&self.dest)?;
        t.serialize_element(&count)?;
        for r in &self.records {
            t.serialize_element(r)?;
        }
        t.end()
    }
}

impl<'de, R: Deserialize<'de>> Deserialize<'de> for Bundle<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Items<R>(PhantomData<R>);
        impl<'de, R: Deserialize<'de>> Visitor<'de> for Items<R> {
            type Value = Bundle<R>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a bundle: a worker index, a record count and the records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bundle<R>, A::Error> {
                let missing = || A::Error::custom("truncated bundle");
                let dest: u32 = seq.next_element()?.ok_or_else(missing)?;
                let count: u16 = seq.next_element()?.ok_or_else(missing)?;
                let mut records = Vec::with_capacity(usize::from(count));
                for _ in 0..count {
                    records.push(seq.next_element()?.ok_or_else(missing)?);
                }
                Ok(Bundle { dest, records })
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

    fn bundle(n: u32) -> Bundle<(u32, FlowKey)> {
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        Bundle {
            dest: 3,
            records: (0..n)
                .map(|i| (i, FlowKey::FiveTuple(a, a, i as u16, 80, 6)))
                .collect(),
        }
    }

    #[test]
    fn round_trips_in_its_counted_bytes() -> Result<(), bincode::Error> {
        for n in [0, 1, 1024] {
            let b = bundle(n);
            let bytes = bincode::serialize(&b)?;
            let records = bincode::serialized_size(&b.records)? - 8;
            assert_eq!(bytes.len() as u64, OVERHEAD_BYTES + records);
            let back: Bundle<(u32, FlowKey)> = bincode::deserialize(&bytes)?;
            assert_eq!((back.dest, back.records), (b.dest, b.records));
        }
        Ok(())
    }

    #[test]
    fn a_bundle_over_the_count_does_not_serialize_and_a_cut_one_does_not_read() {
        let mut big = bundle(1);
        big.records = vec![big.records[0]; MAX_RECORDS + 1];
        assert!(bincode::serialize(&big).is_err());
        let bytes = bincode::serialize(&bundle(5)).unwrap_or_default();
        let cut: Result<Bundle<(u32, FlowKey)>, _> =
            bincode::deserialize(&bytes[..bytes.len() - 3]);
        assert!(cut.is_err());
    }
}
