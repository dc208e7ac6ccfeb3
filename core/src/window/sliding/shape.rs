//! The parameters of a sliding Bloom filter (§2.3): generations, generation length, and the
//! cheapest fingerprint and tag coding for a window and a false positive rate.

use super::table::{Layout, LOAD, MAX_FP_BITS, MAX_RADIX, MAX_TAGS, SLOTS};
use super::SlidingWindow;
use crate::error::{Error, Result};

/// Buckets scanned per insertion are capped at this when choosing `c`.
pub(super) const MAX_SWEEP: f64 = 2.0;

/// The parameters §2.3 derives from the window and ε.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingShape {
    /// `c`: live generations besides the current one.
    pub generations: u64,
    /// `G`: insertions (count window) or ticks (time window) per generation.
    pub generation_len: u64,
    /// `Φ`: fingerprint values (`16·K·2^b − 1`, not a power of two in general); a live slot
    /// matches a foreign key with probability `1/Φ`.
    pub fingerprints: u64,
    /// `M`: tag values; tags count generations modulo `M`.
    pub tags: u64,
    /// `⌈log2(Φ + 1)⌉`: the bits a fingerprint would take stored alone.
    pub fingerprint_bits: u32,
    /// `⌈log2 M⌉`: the bits a tag would take stored alone.
    pub tag_bits: u32,
    /// Bits of one 4-slot bucket as stored (head code and raw fingerprint bits).
    pub bucket_bits: u32,
    pub(super) layout: Layout,
}

impl SlidingShape {
    pub(super) fn derive(window: SlidingWindow, fpr: f64) -> Result<Self> {
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::invalid("fpr", format!("{fpr} is not in (0, 1)")));
        }
        // Φ ≥ 8α/ε: two buckets of 4 slots, each live with probability at most α.
        let need = 2.0 * SLOTS as f64 * LOAD / fpr;
        let f = (need + 1.0).log2().ceil() as u32;
        if f > MAX_FP_BITS {
            return Err(Error::invalid(
                "fpr",
                format!("{fpr} needs {f}-bit fingerprints; at most {MAX_FP_BITS} are supported"),
            ));
        }
        let (c, layout) = choose_generations(need.ceil() as u64)
            .ok_or_else(|| Error::invalid("fpr", format!("{fpr} needs too many fingerprints")))?;
        let (c, len) = match window {
            SlidingWindow::Count(0) | SlidingWindow::Time(0) => {
                return Err(Error::invalid("window", "must be at least 1"));
            }
            SlidingWindow::Count(n) => {
                let c = c.min(n);
                (c, n.div_ceil(c))
            }
            SlidingWindow::Time(t) => {
                let c = c.min((t - 1).max(1));
                (c, (t - 1).div_ceil(c).max(1))
            }
        };
        let bits = |v: u64| 64 - (v - 1).leading_zeros();
        let tags = u64::from(layout.tags);
        Ok(SlidingShape {
            generations: c,
            generation_len: len,
            fingerprints: layout.fingerprints(),
            tags,
            fingerprint_bits: bits(layout.fingerprints() + 1),
            tag_bits: bits(tags),
            bucket_bits: layout.bucket_bits(),
            layout,
        })
    }

    pub(super) fn spare(&self) -> u64 {
        self.tags - self.generations - 1
    }
}

/// The cheapest coding of `need` or more fingerprint values with `tags` tag values: the
/// `(K, b)` with `16·K·2^b − 1 ≥ need` whose bucket takes the fewest bits (then the fewest
/// fingerprints), or `None` when no layout holds that many.
fn layout_for(need: u64, tags: u32) -> Option<Layout> {
    (1..=MAX_RADIX)
        .filter_map(|radix| {
            let per_bit = 16 * u64::from(radix);
            // Φ = 16·K·2^b − 1 ≥ need.
            let low_bits = (0..=MAX_FP_BITS).find(|&b| (per_bit << b) > need)?;
            let layout = Layout {
                radix,
                low_bits,
                tags,
            };
            layout.check().ok().map(|()| layout)
        })
        .min_by_key(|l| (l.bucket_bits(), l.fingerprints()))
}

/// The `(c, layout)` minimizing `(1 + 1/c) · bucket bits` (the table holds `(c + 1) G ≈ n(1 + 1/c)`
/// entries) over tag alphabets `M ≥ c + 2` whose spare tags let the sweep cycle at no more than
/// [`MAX_SWEEP`] buckets per insertion; ties go to the smaller `c`. `None` when no layout holds
/// `need` fingerprints.
fn choose_generations(need: u64) -> Option<(u64, Layout)> {
    let mut best: Option<(u64, Layout)> = None;
    for tags in 3..=MAX_TAGS {
        let Some(layout) = layout_for(need, tags) else {
            continue;
        };
        let m = u64::from(tags);
        for c in 1..=m - 2 {
            let sweep = (c + 1) as f64 / ((m - c - 1) as f64 * LOAD * SLOTS as f64);
            // (1 + 1/c)·bits compared exactly: (c + 1)·bits·c' against (c' + 1)·bits'·c.
            let cost = |c: u64, l: Layout| (c + 1) * u64::from(l.bucket_bits());
            let better = best.is_none_or(|(bc, bl)| {
                let (a, b) = (cost(c, layout) * bc, cost(bc, bl) * c);
                a < b || a == b && c < bc
            });
            if sweep <= MAX_SWEEP && better {
                best = Some((c, layout));
            }
        }
    }
    best
}
