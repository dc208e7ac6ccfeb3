//! The order a batch's new keys are placed in: ascending hash, so that the state does not depend
//! on the order the keys arrived in.

/// Batches below this many items are sorted directly.
const SMALL: usize = 256;

/// Sorts `items` by hash (items with equal hashes end up side by side, in no promised order): a
/// counting pass over the top bits of the hashes, as many as it takes for about one item a
/// bucket (the hashes are uniform), then each bucket sorted alone, then the items moved once
/// into that order.
pub(super) fn sort_by_hash<T>(items: &mut Vec<(T, u64)>) {
    if items.len() < SMALL {
        items.sort_unstable_by_key(|&(_, hash)| hash);
        return;
    }
    let bits = items.len().ilog2().min(16);
    let bucket = |hash: u64| (hash >> (64 - bits)) as usize;
    let mut starts = vec![0usize; (1 << bits) + 1];
    for &(_, hash) in items.iter() {
        starts[bucket(hash) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    // (hash, position in `items`), bucketed by the top bits.
    let mut keys = vec![(0u64, 0usize); items.len()];
    let mut next = starts.clone();
    for (p, &(_, hash)) in items.iter().enumerate() {
        let b = bucket(hash);
        keys[next[b]] = (hash, p);
        next[b] += 1;
    }
    for w in starts.windows(2) {
        if w[1] - w[0] > 1 {
            keys[w[0]..w[1]].sort_unstable_by_key(|&(hash, _)| hash);
        }
    }
    let mut taken: Vec<Option<(T, u64)>> = items.drain(..).map(Some).collect();
    items.extend(
        keys.iter()
            .filter_map(|&(_, p)| taken.get_mut(p).and_then(Option::take)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;

    /// The same hashes in the same order as a plain sort, for small and large batches with
    /// repeated hashes, and every item kept.
    #[test]
    fn sorts_like_a_plain_sort() {
        for len in [0usize, 1, 7, 255, 256, 3_000, 20_000] {
            let mut items: Vec<(usize, u64)> =
                (0..len).map(|i| (i, mix64(i as u64 % 997))).collect();
            let mut expected: Vec<u64> = items.iter().map(|&(_, h)| h).collect();
            expected.sort_unstable();
            sort_by_hash(&mut items);
            assert_eq!(items.iter().map(|&(_, h)| h).collect::<Vec<_>>(), expected);
            let mut ids: Vec<usize> = items.iter().map(|&(i, _)| i).collect();
            ids.sort_unstable();
            assert_eq!(ids, (0..len).collect::<Vec<_>>());
            assert!(items.iter().all(|&(i, h)| h == mix64(i as u64 % 997)));
        }
    }
}
