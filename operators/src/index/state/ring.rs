//! The blocks of the levels an epoch's shipped records set only a few of, across those levels:
//! each block's line is requested [`AHEAD`] sets before its bits are set, whatever level it is
//! in.
//!
//! A sparse stream's epoch holds a few dozen records, so each level sets a handful of blocks: a
//! look-ahead within one level drained after a few sets, and every set waited for its line
//! (`data/real.pcap`, 17 records a second: the index's sets took 15 times as long with 1 s
//! epochs as with 60 s ones, the same 161,459 sets). One look-ahead across the levels keeps as
//! many lines in flight as a dense epoch does. (A level with many blocks to set keeps its own,
//! [`LevelShard::insert_blocks`], which is cheaper a set.)

use super::level::{LevelShard, AHEAD};
use chronobloom_core::bloom::BLOCK_BITS;
use chronobloom_core::prefetch::prefetch;

/// Blocks requested and waiting for their bits: `(level, hash low half, block)`.
pub(super) struct BlockRing {
    slots: [(usize, u64, u64); AHEAD],
    queued: usize,
}

impl BlockRing {
    pub(super) fn new() -> Self {
        BlockRing {
            slots: [(0, 0, 0); AHEAD],
            queued: 0,
        }
    }

    /// Requests the line of `block` of level `level` (wholly held, blocked) for the hash with
    /// low half `lo`, and sets the bits of the block requested `AHEAD` pushes ago.
    #[inline(always)]
    pub(super) fn push(&mut self, levels: &mut [LevelShard], level: usize, lo: u64, block: u64) {
        let Some(shard) = levels.get(level) else {
            return;
        };
        prefetch(&shard.words, (block * BLOCK_BITS / 64) as usize);
        let slot = self.queued % AHEAD;
        if self.queued >= AHEAD {
            set(levels, self.slots[slot]);
        }
        self.slots[slot] = (level, lo, block);
        self.queued += 1;
    }

    /// Sets the bits of the blocks still waiting, oldest first.
    pub(super) fn finish(self, levels: &mut [LevelShard]) {
        for j in self.queued.saturating_sub(AHEAD)..self.queued {
            set(levels, self.slots[j % AHEAD]);
        }
    }
}

fn set(levels: &mut [LevelShard], (level, lo, block): (usize, u64, u64)) {
    if let Some(shard) = levels.get_mut(level) {
        let k = shard.shape.hashes;
        shard.set_block_probes((lo, block), k);
    }
}
