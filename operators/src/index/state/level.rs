//! One level of a partition as a worker holds it: its words (all, or the worker's share when
//! sharded), merged from deltas, set by shipped records, probed by queries.

use super::super::delta::{shard_words, BLOCK_WORDS};
use chronobloom_core::bits::LineWords;
use chronobloom_core::bloom::{blocked_probes, probes_in_block, FilterShape, Layout, BLOCK_BITS};
use chronobloom_core::hash::{FastMod, KeyHash};
use chronobloom_core::prefetch::prefetch;
use std::ops::Range;

/// The words of one level a worker holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LevelShard {
    pub(super) shape: FilterShape,
    pub(super) layout: Layout,
    /// What probes are reduced by (the bits, or the blocks when blocked); `None` for a level
    /// without bits.
    pub(super) modulus: Option<FastMod>,
    /// Index of the first word held.
    pub(super) first: usize,
    /// The held words, the first at the start of a cache line: a blocked filter's 512-bit block is
    /// one line (in a plain `Vec` most blocks straddle two, and a probe of the second line missed
    /// its prefetch).
    pub(super) words: LineWords,
    pub(super) ones: u64,
    /// Per held block: changed since the last digest refresh.
    pub(super) dirty: Vec<bool>,
}

/// Words of a blocked filter's block (one cache line).
const LINE_WORDS: usize = (BLOCK_BITS / 64) as usize;

/// How many blocks are in flight when a level's hashes are set: requested, their bits not yet
/// set.
pub(super) const AHEAD: usize = 32;

/// Present words from which a held 64-word group of a bitmap delta is merged as one run.
const DENSE_GROUP: usize = 16;

impl LevelShard {
    pub(super) fn new(shape: FilterShape, layout: Layout, owner: usize, me: usize) -> Self {
        let range = shard_words(owner, shape.bits.div_ceil(64) as usize, me);
        let blocks = range.len().div_ceil(BLOCK_WORDS);
        let modulus = match layout {
            Layout::Standard => FastMod::new(shape.bits),
            Layout::Blocked => FastMod::new(shape.bits / BLOCK_BITS),
        };
        LevelShard {
            shape,
            layout,
            modulus,
            first: range.start,
            words: LineWords::zeroed(range.len()),
            ones: 0,
            dirty: vec![true; blocks],
        }
    }

    pub(super) fn held(&self) -> Range<usize> {
        self.first..self.first + self.words.len()
    }

    /// ORs `word` into word `i`; false when the level does not hold it.
    #[inline]
    pub(super) fn or_word(&mut self, i: usize, word: u64) -> bool {
        let Some(w) = i
            .checked_sub(self.first)
            .and_then(|j| self.words.get_mut(j))
        else {
            return false;
        };
        let new = *w | word;
        if new != *w {
            self.ones += u64::from((new ^ *w).count_ones());
            *w = new;
            self.dirty[(i - self.first) / BLOCK_WORDS] = true;
        }
        true
    }

    /// ORs a bitmap delta (word `first + j` carries the next of `words` for each set bit `j` of
    /// `present`) into the words held; returns how many the level does not hold. A group of 64
    /// words with at least [`DENSE_GROUP`] present (all 64 when it is not wholly held) goes in as
    /// one run, absent words as zeros.
    pub(super) fn or_bitmap(&mut self, first: usize, present: &[u64], words: &[u64]) -> u64 {
        let held = self.held();
        let (mut refused, mut next) = (0, 0);
        for (g, &bits) in present.iter().enumerate() {
            let at = first + g * 64;
            let n = bits.count_ones() as usize;
            let inside = at >= held.start && at + 64 <= held.end;
            if bits == u64::MAX || (inside && n >= DENSE_GROUP) {
                let Some(carried) = words.get(next..next + n) else {
                    return refused;
                };
                next += n;
                if bits == u64::MAX {
                    refused += self.or_run(at, carried);
                    continue;
                }
                // Spread over the group's 64 words (absent ones zero) and OR as one run.
                let mut run = [0u64; 64];
                let mut rest = bits;
                for &w in carried {
                    run[rest.trailing_zeros() as usize] = w;
                    rest &= rest - 1;
                }
                self.or_run(at, &run);
                continue;
            }
            let mut rest = bits;
            while rest != 0 {
                let j = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let Some(&w) = words.get(next) else {
                    return refused;
                };
                next += 1;
                refused += u64::from(!self.or_word(at + j, w));
            }
        }
        refused
    }

    /// ORs the run of words starting at word `first` into the words held; returns how many of
    /// them the level does not hold.
    pub(super) fn or_run(&mut self, first: usize, run: &[u64]) -> u64 {
        let held = self.held();
        let lo = first.max(held.start);
        let hi = (first + run.len()).min(held.end);
        if lo >= hi {
            return run.len() as u64;
        }
        let (a, b) = (lo - self.first, hi - self.first);
        let mut ones = 0;
        for (block, (dst, src)) in self.words[a..b]
            .chunks_mut(BLOCK_WORDS)
            .zip(run[lo - first..hi - first].chunks(BLOCK_WORDS))
            .enumerate()
        {
            let mut added = 0;
            for (d, &w) in dst.iter_mut().zip(src) {
                added += u64::from((w & !*d).count_ones());
                *d |= w;
            }
            if added > 0 {
                ones += added;
                // `a` may not be block-aligned: mark every block the chunk touches.
                let start = (a + block * BLOCK_WORDS) / BLOCK_WORDS;
                let end = (a + block * BLOCK_WORDS + dst.len() - 1) / BLOCK_WORDS;
                for d in &mut self.dirty[start..=end] {
                    *d = true;
                }
            }
        }
        self.ones += ones;
        (run.len() - (hi - lo)) as u64
    }

    /// Sets the probe bits of `hash` (already at its bucket) that this shard holds.
    pub(super) fn insert(&mut self, hash: KeyHash) {
        self.insert_each(std::iter::once(hash));
    }

    /// Sets the probe bits of each hash (already at its bucket) that this shard holds, software
    /// pipelined: the words of the next 16 hashes are prefetched before the bits of the current
    /// 16 are set, and no write branches on a word's old value, so the cache misses of many keys
    /// overlap.
    pub(super) fn insert_each(&mut self, hashes: impl Iterator<Item = KeyHash>) {
        const CHUNK: usize = 16;
        let Some(m) = self.modulus.filter(|_| !self.words.is_empty()) else {
            return;
        };
        let k = self.shape.hashes;
        let mut hashes = hashes.peekable();
        let mut current: Vec<u64> = Vec::with_capacity(CHUNK * k as usize);
        let mut next: Vec<u64> = Vec::with_capacity(CHUNK * k as usize);
        loop {
            next.clear();
            for h in hashes.by_ref().take(CHUNK) {
                match self.layout {
                    Layout::Standard => next.extend(h.probes(k, m)),
                    Layout::Blocked => next.extend(blocked_probes(h, k, m)),
                }
            }
            for &p in &next {
                if let Some(j) = ((p / 64) as usize).checked_sub(self.first) {
                    prefetch(&self.words, j);
                }
            }
            for &p in &current {
                self.set_bit(p);
            }
            if next.is_empty() {
                break;
            }
            std::mem::swap(&mut current, &mut next);
        }
    }

    /// What a wholly held blocked level reduces a hash's low half by to find its block (`None`
    /// for a standard or partly held level, whose probes go through [`Self::insert_each`]).
    pub(super) fn blocks(&self) -> Option<FastMod> {
        self.modulus.filter(|_| {
            self.layout == Layout::Blocked
                && self.first == 0
                && self.words.len() as u64 * 64 >= self.shape.bits
        })
    }

    /// Sets the probe bits of each hash in its block of this wholly held blocked level (`blocks`
    /// from [`Self::blocks`]): the block of the hash [`AHEAD`] places on is prefetched while this
    /// one's bits are set. For a level with many hashes; a few go through a [`BlockRing`] shared
    /// by the levels instead.
    ///
    /// [`BlockRing`]: super::ring::BlockRing
    pub(super) fn insert_blocks(&mut self, hashes: impl Iterator<Item = KeyHash>, blocks: FastMod) {
        // the usual probe counts get a loop unrolled for them
        self.ones += match self.shape.hashes {
            1 => self.insert_blocks_k::<1>(hashes, blocks),
            2 => self.insert_blocks_k::<2>(hashes, blocks),
            3 => self.insert_blocks_k::<3>(hashes, blocks),
            4 => self.insert_blocks_k::<4>(hashes, blocks),
            5 => self.insert_blocks_k::<5>(hashes, blocks),
            6 => self.insert_blocks_k::<6>(hashes, blocks),
            7 => self.insert_blocks_k::<7>(hashes, blocks),
            8 => self.insert_blocks_k::<8>(hashes, blocks),
            _ => self.insert_blocks_k::<0>(hashes, blocks),
        };
    }

    /// [`Self::insert_blocks`] with `K` probes a hash (0: the level's count, read at run time);
    /// returns the bits that were new.
    #[inline(always)]
    fn insert_blocks_k<const K: u32>(
        &mut self,
        hashes: impl Iterator<Item = KeyHash>,
        blocks: FastMod,
    ) -> u64 {
        let k = if K == 0 { self.shape.hashes } else { K };
        // the words and marks taken once, not through the level at each set
        let (words, dirty) = (self.words.as_mut_slice(), self.dirty.as_mut_slice());
        // Only `lo` places a blocked probe; slot `n % AHEAD` holds the `n`th hash and its block
        // until it is set.
        let mut ring = [(0u64, 0u64); AHEAD];
        let (mut n, mut ones) = (0, 0);
        for h in hashes {
            let slot = &mut ring[n % AHEAD];
            if n >= AHEAD {
                ones += set_block(words, dirty, *slot, k);
            }
            let block = blocks.reduce(h.lo);
            prefetch(words, (block * BLOCK_BITS / 64) as usize);
            *slot = (h.lo, block);
            n += 1;
        }
        for j in n.saturating_sub(AHEAD)..n {
            ones += set_block(words, dirty, ring[j % AHEAD], k);
        }
        ones
    }

    /// Sets the `k` probe bits of a blocked hash with low half `lo` in its block `block` (the
    /// level is wholly held), counting the new ones and marking the block when any is new.
    #[inline]
    pub(super) fn set_block_probes(&mut self, at: (u64, u64), k: u32) {
        self.ones += set_block(self.words.as_mut_slice(), &mut self.dirty, at, k);
    }

    /// Sets bit `p` if this shard holds it, counting it and marking its block when it is new.
    #[inline]
    pub(super) fn set_bit(&mut self, p: u64) {
        let Some(j) = ((p / 64) as usize).checked_sub(self.first) else {
            return;
        };
        let Some(w) = self.words.get_mut(j) else {
            return;
        };
        let old = *w;
        *w = old | 1 << (p % 64);
        let added = *w != old;
        self.ones += u64::from(added);
        self.dirty[j / BLOCK_WORDS] |= added;
    }

    /// True when every probe bit of `hash` this shard holds is set.
    pub(super) fn holds_all(&self, hash: KeyHash) -> bool {
        let Some(m) = self.modulus else { return true };
        let held = |p: u64| {
            let i = (p / 64) as usize;
            i.checked_sub(self.first)
                .and_then(|j| self.words.get(j))
                .is_none_or(|w| w >> (p % 64) & 1 == 1)
        };
        match self.layout {
            Layout::Standard => hash.probes(self.shape.hashes, m).all(held),
            Layout::Blocked => blocked_probes(hash, self.shape.hashes, m).all(held),
        }
    }

    /// Whether this shard holds any bits of the level.
    pub(super) fn holds_bits(&self) -> bool {
        self.modulus.is_some() && !self.words.is_empty()
    }

    /// Bits of the level this shard holds.
    pub(super) fn held_bits(&self) -> u64 {
        let end = (self.held().end as u64 * 64).min(self.shape.bits);
        end.saturating_sub(self.first as u64 * 64)
    }
}

/// Sets the `k` probe bits of a blocked hash with low half `lo` in block `block` of `words` (a
/// level's, from its first word), marking the block's digest block in `dirty` when a bit is
/// new; returns how many are.
#[inline(always)]
fn set_block(words: &mut [u64], dirty: &mut [bool], (lo, block): (u64, u64), k: u32) -> u64 {
    let first = (block * BLOCK_BITS / 64) as usize;
    // the block's line, taken once: each probe's word is then in it without a check
    let Some(line) = words
        .get_mut(first..first + LINE_WORDS)
        .and_then(|s| <&mut [u64; LINE_WORDS]>::try_from(s).ok())
    else {
        return 0;
    };
    let mut added = 0;
    // the offsets within the block: its probes were it block 0
    for o in probes_in_block(0, lo, k) {
        let w = &mut line[(o / 64) as usize % LINE_WORDS];
        added += !*w >> (o % 64) & 1;
        *w |= 1 << (o % 64);
    }
    // the digest block (of `BLOCK_WORDS` words) holding the filter block's words
    if let Some(d) = dirty.get_mut(first / BLOCK_WORDS) {
        *d |= added > 0;
    }
    added
}
