//! Same-tick repeats resolved exactly: of a tick's records with one key, the one with the smallest
//! `bincode` encoding passes (the first of equal ones), so the choice depends neither on the
//! worker count nor on arrival order.
//!
//! Records are grouped by `(tick, fingerprint)` first, in a map kept from epoch to epoch, and
//! their exact keys are compared once a group has a second record: a key whose fingerprint
//! another key of the tick has goes to a side map by its exact bytes, so a collision never drops
//! a record. Key bytes and encodings are appended to one buffer, so nothing is allocated per
//! record (except for collisions, which a 64-bit fingerprint makes rare).

use super::super::KeyBytes;
use chronobloom_core::temporal::Tick;
use serde::Serialize;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

/// Candidates below this many never make [`SameTick::reset`] drop the map.
const MIN_KEPT: usize = 1024;

/// A candidate without a fresh record so far.
const UNMET: usize = usize::MAX;

/// The state of [`SameTick::resolve`], kept between epochs.
#[derive(Default)]
pub(super) struct SameTick {
    /// Candidates by `(tick, fingerprint)`: where the group of the first key met with them is
    /// in `found` ([`UNMET`] until a fresh record is met). Small entries, for the cache.
    candidates: HashMap<(Tick, u64), usize, BuildHasherDefault<PairHasher>>,
    /// The groups of `candidates`.
    found: Vec<Group>,
    /// Groups of keys that met another key's group at their `(tick, fingerprint)`, by exact key.
    collided: HashMap<(Tick, Vec<u8>), Group>,
    /// The groups' key bytes and encodings, which they hold as ranges of it.
    bytes: Vec<u8>,
}

/// Same-tick records of one key.
struct Group {
    /// The index of the best record so far.
    best: usize,
    /// The key's canonical bytes, once a second record is met.
    key: Option<Range<usize>>,
    /// The best record's encoding, once compared.
    enc: Option<Range<usize>>,
}

impl SameTick {
    /// Among fresh records whose `(tick, fingerprint)` is in `candidates` (flagged by the
    /// filter, in any order, repeated or not), keeps one per tick and exact key fresh, the one
    /// with the smallest encoding; returns how many it dropped. `stamps[i]` is `records[i]`'s
    /// `(tick, fingerprint)`, the 16 bytes the pass over every record reads.
    pub fn resolve<D: Serialize>(
        &mut self,
        records: &[D],
        stamps: &[(Tick, u64)],
        candidates: &[(Tick, u64)],
        fresh: &mut [bool],
        key: &KeyBytes<D>,
    ) -> u64 {
        if candidates.is_empty() {
            return 0;
        }
        self.reset(candidates.len());
        // a 4096-bit prefilter keeps the map lookups off most records
        let mut bloom = [0u64; 64];
        for &(t, fp) in candidates {
            bloom[(fp >> 6) as usize & 63] |= 1 << (fp & 63);
            self.candidates.entry((t, fp)).or_insert(UNMET);
        }
        let SameTick {
            candidates,
            found,
            collided,
            bytes,
        } = self;
        let mut dropped = 0;
        for (i, (t, fp)) in stamps.iter().enumerate() {
            if !fresh[i] || bloom[(fp >> 6) as usize & 63] & (1 << (fp & 63)) == 0 {
                continue;
            }
            let Some(slot) = candidates.get_mut(&(*t, *fp)) else {
                continue;
            };
            let record = &records[i];
            if *slot == UNMET {
                *slot = found.len();
                found.push(Group::new(i));
                continue;
            }
            let group = &mut found[*slot];
            let mine = key(record);
            let theirs = group
                .key
                .get_or_insert_with(|| append(bytes, key(&records[group.best]).as_slice()))
                .clone();
            let group = if bytes[theirs] == *mine.as_slice() {
                group
            } else {
                match collided.entry((*t, mine.as_slice().to_vec())) {
                    Entry::Vacant(v) => {
                        v.insert(Group::new(i));
                        continue;
                    }
                    Entry::Occupied(o) => o.into_mut(),
                }
            };
            dropped += 1;
            group.challenge(i, records, fresh, bytes);
        }
        dropped
    }

    /// Empties the state for an epoch with `candidates` candidates. Clearing a map takes time in
    /// proportion to its capacity, so one much larger than the epoch needs (a burst's) is dropped.
    fn reset(&mut self, candidates: usize) {
        if self.candidates.capacity() > 4 * candidates.max(MIN_KEPT) {
            self.candidates = HashMap::default();
        } else {
            self.candidates.clear();
        }
        self.found.clear();
        self.collided.clear();
        self.bytes.clear();
    }
}

impl Group {
    fn new(best: usize) -> Self {
        Group {
            best,
            key: None,
            enc: None,
        }
    }

    /// Keeps the better of the best record so far and record `i` (of the same key) fresh: the
    /// smaller encoding, the earlier of equal ones.
    fn challenge<D: Serialize>(
        &mut self,
        i: usize,
        records: &[D],
        fresh: &mut [bool],
        bytes: &mut Vec<u8>,
    ) {
        let best = self
            .enc
            .get_or_insert_with(|| encode(bytes, &records[self.best]))
            .clone();
        let mine = encode(bytes, &records[i]);
        if bytes[mine.clone()] < bytes[best] {
            fresh[self.best] = false;
            self.best = i;
            self.enc = Some(mine);
        } else {
            fresh[i] = false;
            bytes.truncate(mine.start);
        }
    }
}

/// Appends `b` to `bytes`; returns where it is.
fn append(bytes: &mut Vec<u8>, b: &[u8]) -> Range<usize> {
    let start = bytes.len();
    bytes.extend_from_slice(b);
    start..bytes.len()
}

/// Appends `record`'s `bincode` encoding, the tie-breaker between same-tick records with the same
/// key, to `bytes` (nothing for a record that cannot be encoded); returns where it is.
fn encode<D: Serialize>(bytes: &mut Vec<u8>, record: &D) -> Range<usize> {
    let start = bytes.len();
    if bincode::serialize_into(&mut *bytes, record).is_err() {
        bytes.truncate(start);
    }
    start..bytes.len()
}

/// Hashes the `(tick, fingerprint)` keys of [`SameTick`]'s map, a multiply per word (as
/// `FxHasher`): the fingerprint is already a uniform hash of the key. Never for filters.
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use chronobloom_core::hash::{mix64, CanonicalBytes, Key};
    use std::rc::Rc;

    /// `(key, payload)`, keyed by `key`.
    type Rec = (u64, u64);

    fn key_bytes() -> KeyBytes<Rec> {
        Rc::new(|d: &Rec| {
            let mut bytes = CanonicalBytes::new();
            d.0.write_canonical(&mut bytes);
            bytes
        })
    }

    /// The resolution as it was first written (a map by tick and key bytes, a fresh encoding per
    /// comparison): the decisions to keep.
    fn model(
        records: &[(Tick, u64, Rec)],
        candidates: &[(Tick, u64)],
        fresh: &mut [bool],
        key: &KeyBytes<Rec>,
    ) -> u64 {
        // (tick, exact key) -> (index of the best record so far, its encoding once compared)
        let mut first: HashMap<_, (usize, Option<Vec<u8>>)> = HashMap::new();
        let mut dropped = 0;
        for (i, (t, fp, record)) in records.iter().enumerate() {
            if !fresh[i] || !candidates.contains(&(*t, *fp)) {
                continue;
            }
            match first.entry((*t, key(record).as_slice().to_vec())) {
                Entry::Vacant(v) => {
                    v.insert((i, None));
                }
                Entry::Occupied(mut o) => {
                    dropped += 1;
                    let (j, best) = o.get_mut();
                    let best =
                        best.get_or_insert_with(|| bincode::serialize(&records[*j].2).unwrap());
                    let mine = bincode::serialize(record).unwrap();
                    if mine < *best {
                        fresh[*j] = false;
                        *j = i;
                        *best = mine;
                    } else {
                        fresh[i] = false;
                    }
                }
            }
        }
        dropped
    }

    #[test]
    fn decides_as_the_model_with_collisions_and_reuse() {
        let key = key_bytes();
        let mut state = SameTick::default();
        let mut s = 0u64;
        let mut next = |n: u64| {
            s = mix64(s.wrapping_add(0x9e37_79b9_7f4a_7c15));
            s % n
        };
        let fingerprints: [fn(u64) -> u64; 4] = [|k| mix64(k), |k| k % 3, |_| 5, |k| k >> 1];
        for case in 0..600 {
            // every 50th case a burst, which the next one's reset drops
            let n = if case % 50 == 7 { 6_000 } else { next(200) };
            let fp = fingerprints[case % fingerprints.len()];
            let records: Vec<(Tick, u64, Rec)> = (0..n)
                .map(|_| {
                    let (t, k) = (next(4), next(12));
                    // payloads whose little-endian bytes sort unlike their values
                    (t, fp(k), (k, [1, 256, 2, 65_536, 257][next(5) as usize]))
                })
                .collect();
            let mut candidates: Vec<_> = records
                .iter()
                .filter(|_| next(3) > 0)
                .map(|&(t, fp, _)| (t, fp))
                .collect();
            candidates.push((9, 9));
            let before: Vec<bool> = records.iter().map(|_| next(5) > 0).collect();
            let (mut want, mut got) = (before.clone(), before);
            let dropped = model(&records, &candidates, &mut want, &key);
            let stamps: Vec<_> = records.iter().map(|&(t, fp, _)| (t, fp)).collect();
            let data: Vec<Rec> = records.iter().map(|&(_, _, d)| d).collect();
            assert_eq!(
                state.resolve(&data, &stamps, &candidates, &mut got, &key),
                dropped,
                "case {case}"
            );
            assert_eq!(got, want, "case {case}");
        }
    }

    #[test]
    fn nothing_to_resolve_without_candidates() {
        let records = vec![(1, 1), (1, 2)];
        let mut fresh = vec![true; 2];
        assert_eq!(
            SameTick::default().resolve(&records, &[(1, 1), (1, 1)], &[], &mut fresh, &key_bytes()),
            0
        );
        assert_eq!(fresh, [true, true]);
    }
}
