//! A fixed-width packed integer array: slot `i` holds `width` bits starting at bit `i * width` of a
//! run of `u64` words, so a slot may straddle two words. Packing is what lets a table of bucket
//! codes and raw fingerprint bits cost exactly its width per entry.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// `len` unsigned integers of `width` bits each (`0 <= width <= 64`; width 0 holds only zeros and
/// no memory), all zero at first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PackedRepr", into = "PackedRepr")]
pub(crate) struct Packed {
    width: u32,
    len: u64,
    words: Vec<u64>,
}

/// The serialized form, validated on the way in.
#[derive(Serialize, Deserialize)]
struct PackedRepr {
    width: u32,
    len: u64,
    words: Vec<u64>,
}

impl TryFrom<PackedRepr> for Packed {
    type Error = Error;
    fn try_from(r: PackedRepr) -> Result<Self> {
        check_width(r.width)?;
        let expected = words_for(r.width, r.len)?;
        if r.words.len() != expected {
            return Err(Error::ShapeMismatch {
                what: "words for the packed slots",
                left: expected as u64,
                right: r.words.len() as u64,
            });
        }
        Ok(Packed {
            width: r.width,
            len: r.len,
            words: r.words,
        })
    }
}

impl From<Packed> for PackedRepr {
    fn from(p: Packed) -> Self {
        PackedRepr {
            width: p.width,
            len: p.len,
            words: p.words,
        }
    }
}

fn check_width(width: u32) -> Result<()> {
    if width <= 64 {
        Ok(())
    } else {
        Err(Error::invalid(
            "width",
            format!("slot width {width} is outside 0..=64"),
        ))
    }
}

fn words_for(width: u32, len: u64) -> Result<usize> {
    let bits = len
        .checked_mul(u64::from(width))
        .ok_or(Error::OutOfMemory { bits: u64::MAX })?;
    usize::try_from(bits.div_ceil(64)).map_err(|_| Error::OutOfMemory { bits })
}

impl Packed {
    /// `len` zero slots of `width` bits; refuses (instead of aborting) when the memory is not there.
    pub(crate) fn new(width: u32, len: u64) -> Result<Self> {
        check_width(width)?;
        let n = words_for(width, len)?;
        let mut words = Vec::new();
        words.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
            bits: n as u64 * 64,
        })?;
        words.resize(n, 0);
        Ok(Packed { width, len, words })
    }

    /// Number of slots.
    #[inline]
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Bits per slot.
    pub(crate) fn width(&self) -> u32 {
        self.width
    }

    /// The low `width` bits (only called with `width >= 1`).
    #[inline]
    fn mask(&self) -> u64 {
        u64::MAX >> (64 - self.width)
    }

    /// The value in slot `i` (`i < len`).
    #[inline]
    pub(crate) fn get(&self, i: u64) -> u64 {
        debug_assert!(i < self.len);
        if self.width == 0 {
            return 0;
        }
        let bit = i * u64::from(self.width);
        let w = (bit / 64) as usize;
        let off = (bit % 64) as u32;
        // The next word's bits come in without a branch (`<< 1 << (63 − off)` is `<< (64 − off)`,
        // and 0 when off = 0); no slot straddles past the last word, so 0 stands in there.
        let next = self.words.get(w + 1).copied().unwrap_or(0);
        ((self.words[w] >> off) | (next << 1 << (63 - off))) & self.mask()
    }

    /// Stores `v` (which must fit in `width` bits) in slot `i` (`i < len`).
    #[inline]
    pub(crate) fn set(&mut self, i: u64, v: u64) {
        debug_assert!(i < self.len);
        if self.width == 0 {
            debug_assert!(v == 0);
            return;
        }
        debug_assert!(v <= self.mask());
        let mask = self.mask();
        let bit = i * u64::from(self.width);
        let w = (bit / 64) as usize;
        let off = (bit % 64) as u32;
        self.words[w] = (self.words[w] & !(mask << off)) | (v << off);
        if let Some(next) = self.words.get_mut(w + 1) {
            // The bits past word w (none, and an unchanged word, unless the slot straddles).
            *next = (*next & !(mask >> 1 >> (63 - off))) | (v >> 1 >> (63 - off));
        }
    }

    /// Zeroes every slot.
    pub(crate) fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Memory held by the words, in bits.
    pub(crate) fn memory_bits(&self) -> u64 {
        self.words.len() as u64 * 64
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn refuses_bad_width_and_shape() {
        assert!(Packed::new(65, 10).is_err());
        let empty = Packed::new(0, 10).unwrap();
        assert_eq!((empty.get(9), empty.memory_bits()), (0, 0));
        let bad = r#"{"width":13,"len":10,"words":[0]}"#;
        assert!(serde_json::from_str::<Packed>(bad).is_err());
        let good = r#"{"width":13,"len":10,"words":[0,0,0]}"#;
        assert!(serde_json::from_str::<Packed>(good).is_ok());
    }

    #[test]
    fn memory_is_the_packed_size() {
        let p = Packed::new(13, 100).unwrap();
        assert_eq!(p.memory_bits(), 1300u64.div_ceil(64) * 64);
    }

    proptest! {
        #[test]
        fn behaves_like_a_vec(
            width in 1u32..=64,
            writes in proptest::collection::vec((0u64..300, any::<u64>()), 0..400),
        ) {
            let mut p = Packed::new(width, 300).unwrap();
            let mut model = vec![0u64; 300];
            let mask = u64::MAX >> (64 - width);
            for &(i, v) in &writes {
                p.set(i, v & mask);
                model[i as usize] = v & mask;
            }
            for (i, &v) in model.iter().enumerate() {
                prop_assert_eq!(p.get(i as u64), v);
            }
            let json = serde_json::to_string(&p).unwrap();
            prop_assert_eq!(serde_json::from_str::<Packed>(&json).unwrap(), p.clone());
            p.clear();
            prop_assert!((0..300).all(|i| p.get(i) == 0));
        }
    }
}
