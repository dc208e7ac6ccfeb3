//! Records a local index holds back until their epoch is the earliest open one: key hashes in
//! arrival order, grouped in runs of one tick so that they go into the filter in batches.

use chronobloom_core::hash::KeyHash;
use chronobloom_core::temporal::Tick;

/// Held-back key hashes in runs of equal ticks.
///
/// ```
/// use chronobloom_core::hash::KeyHash;
/// use chronobloom_operators::held::Held;
/// let mut h = Held::default();
/// h.push(5, (0..3u64).map(|k| KeyHash::of(&k, 0)));
/// h.push(5, [KeyHash::of(&3u64, 0)]);
/// h.push(7, [KeyHash::of(&4u64, 0)]);
/// let runs: Vec<(u64, usize)> = h.runs().map(|(t, keys)| (t, keys.len())).collect();
/// assert_eq!(runs, vec![(5, 4), (7, 1)]);
/// assert_eq!(h.len(), 5);
/// ```
#[derive(Debug, Default)]
pub struct Held {
    hashes: Vec<KeyHash>,
    /// (tick, end of the run in `hashes`), ends ascending.
    runs: Vec<(Tick, usize)>,
}

impl Held {
    /// Appends `hashes` at `tick`, extending the last run when it has the same tick.
    pub fn push(&mut self, tick: Tick, hashes: impl IntoIterator<Item = KeyHash>) {
        let start = self.hashes.len();
        self.hashes.extend(hashes);
        let end = self.hashes.len();
        match self.runs.last_mut() {
            _ if end == start => {}
            Some((t, e)) if *t == tick => *e = end,
            _ => self.runs.push((tick, end)),
        }
    }

    /// The runs in arrival order: a tick and its hashes.
    pub fn runs(&self) -> impl Iterator<Item = (Tick, &[KeyHash])> {
        let starts = std::iter::once(0).chain(self.runs.iter().map(|r| r.1));
        self.runs
            .iter()
            .zip(starts)
            .map(|(&(t, end), start)| (t, &self.hashes[start..end]))
    }

    /// Number of hashes held.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }
}
