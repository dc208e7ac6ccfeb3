//! Which worker owns each of a set of items (dedup shards, index levels): round robin, or with
//! worker 0 taking a smaller part when it also reads the whole input (a single capture), so that
//! reading plus its part weighs about what every other worker's part does.

/// The largest lead share, in percent: worker 0 owns as many items as any other worker.
pub const EVEN: u32 = 100;

/// The owner among `peers` workers of item `item` of `items`, worker 0 owning `lead` percent of
/// what every other worker owns (`lead` in 0..=[`EVEN`]; 0: none).
///
/// With `lead` = [`EVEN`] (or a single worker) item `i` goes to worker `i mod peers`. Otherwise
/// worker 0 owns `round(items · lead / (lead + 100 · (peers − 1)))` items spread evenly over the
/// range, and the rest go round robin to workers `1..peers`. A function of its arguments alone,
/// so every worker of every process computes the same owners.
///
/// ```
/// use chronobloom_operators::share::owner;
/// assert_eq!((0..4).map(|s| owner(s, 4, 2, 100)).collect::<Vec<_>>(), vec![0, 1, 0, 1]);
/// // worker 0 at 40%: 16 · 40 / 140 ≈ 5 of 16 shards
/// let lead: Vec<usize> = (0..16).map(|s| owner(s, 16, 2, 40)).collect();
/// assert_eq!(lead.iter().filter(|&&w| w == 0).count(), 5);
/// ```
pub fn owner(item: u32, items: u32, peers: usize, lead: u32) -> usize {
    if peers <= 1 {
        return 0;
    }
    let lead = u64::from(lead.min(EVEN));
    if lead == u64::from(EVEN) {
        return item as usize % peers;
    }
    let (item, items) = (u64::from(item), u64::from(items.max(1)));
    let others = 100 * (peers as u64 - 1);
    // round(items · lead / (lead + others)), at most `items`
    let led = (2 * items * lead + lead + others) / (2 * (lead + others));
    // item i is worker 0's when a multiple of items / led falls in [i, i + 1)
    let is_led = |i: u64| led > 0 && (i * led).div_ceil(items) < ((i + 1) * led).div_ceil(items);
    if is_led(item) {
        return 0;
    }
    let before = (item * led).div_ceil(items);
    1 + ((item - before) % (peers as u64 - 1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item has one owner in range; worker 0 owns the rounded share; the others split the
    /// rest within one item of each other; even shares are round robin.
    #[test]
    fn shares_are_as_documented() {
        for items in [1u32, 2, 7, 13, 16, 23, 64, 4096] {
            for peers in [1usize, 2, 3, 4, 7] {
                for lead in [0u32, 1, 10, 40, 50, 99, 100] {
                    let owners: Vec<usize> =
                        (0..items).map(|i| owner(i, items, peers, lead)).collect();
                    assert!(owners.iter().all(|&w| w < peers));
                    let count = |w: usize| owners.iter().filter(|&&o| o == w).count() as f64;
                    if peers == 1 {
                        assert_eq!(count(0), f64::from(items));
                        continue;
                    }
                    if lead == EVEN {
                        assert!(owners.iter().enumerate().all(|(i, &w)| w == i % peers));
                        continue;
                    }
                    let fair = f64::from(items) * f64::from(lead)
                        / (f64::from(lead) + 100.0 * (peers as f64 - 1.0));
                    assert!(
                        (count(0) - fair).abs() <= 0.5 + 1e-9,
                        "{items} {peers} {lead}"
                    );
                    let rest: Vec<f64> = (1..peers).map(count).collect();
                    let (lo, hi) = rest
                        .iter()
                        .fold((f64::MAX, 0.0f64), |(l, h), &c| (l.min(c), h.max(c)));
                    assert!(hi - lo <= 1.0, "{items} {peers} {lead}: {rest:?}");
                }
            }
        }
    }
}
