//! How far a reader runs ahead of the dataflow's output: at most `--in-flight` epochs, and at
//! most `--in-flight-records` records in the epochs not yet through it. The epochs bound hides
//! the latency between workers and processes on sparse inputs (many epochs of few records); the
//! records bound keeps a dense input's buffers small when a worker lags the reader.

use std::collections::VecDeque;

/// Epochs a reader runs ahead by default in `bykey`: a sparse input (the default one, 555
/// records an epoch) moves a few epochs at a time, and at 16 two processes waited a round trip
/// every couple of moves (default input `-n 2`: 0.62 s at 16, 0.57 s at 64, 0.55 s at 128, for
/// 1–2 MiB more per process; a dense one is bound by its records first).
pub const EPOCHS_BYKEY: u64 = 64;
/// Epochs a reader runs ahead by default in `bykey` with several processes, where every wait for
/// the dataflow is a round trip to the other processes and a sparse input's reader otherwise
/// waits at almost every move of its time (every 4 epochs): two processes on `data/real.pcap`
/// 0.167 → 0.138 s and on the default input 0.631 → 0.558 s against 64 (medians of 4 alternated
/// runs), process 0's peak 17.2 → 19.2 MiB. One process keeps 64: two workers gained nothing
/// from 256 and held 8 MiB more.
pub const EPOCHS_BYKEY_PROCESSES: u64 = 256;
/// Epochs a reader runs ahead by default in `local`, where each epoch in flight also holds the
/// other workers' keys until it is decided.
pub const EPOCHS_LOCAL: u64 = 16;

/// The epochs a reader has read that the dataflow may not have finished, with their records.
pub struct InFlight {
    epochs: u64,
    records: u64,
    read: VecDeque<(u64, u64)>,
}

impl InFlight {
    /// At most `epochs` epochs and `records` records ahead.
    pub fn new(epochs: u64, records: u64) -> Self {
        InFlight {
            epochs,
            records,
            read: VecDeque::new(),
        }
    }

    /// The reader starts epoch `e`: returns the first epoch the dataflow must not be busy with
    /// any more (every earlier one must be through it) before the reader goes on.
    ///
    /// ```text
    /// epochs 4, records 100: read 10, 60, 50 records in epochs 7, 8, 9; starting 10 →
    /// 50 + 60 > 100, so wait until epochs before 9 are done (the epoch bound says before 6)
    /// ```
    pub fn begin(&mut self, e: u64) -> u64 {
        let mut wait = e.saturating_sub(self.epochs);
        let mut sum = 0u64;
        for &(x, n) in self.read.iter().rev() {
            sum = sum.saturating_add(n);
            if sum > self.records {
                wait = wait.max(x + 1);
                break;
            }
        }
        self.read.retain(|&(x, _)| x >= wait);
        self.read.push_back((e, 0));
        wait
    }

    /// One more record read in the current epoch.
    pub fn record(&mut self) {
        if let Some(last) = self.read.back_mut() {
            last.1 += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tighter_bound_decides() {
        let mut f = InFlight::new(4, 100);
        for (e, n) in [(7, 10), (8, 60), (9, 50)] {
            f.begin(e);
            (0..n).for_each(|_| f.record());
        }
        assert_eq!(f.begin(10), 9); // 50 + 60 > 100
        let mut sparse = InFlight::new(4, 100);
        for e in 0..10 {
            sparse.begin(e);
            sparse.record();
        }
        assert_eq!(sparse.begin(10), 6); // 4 epochs of one record each
    }
}
