//! Keys and their canonical byte encoding (step 1 of the hashing specification).

use super::KeyHash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const INLINE: usize = 64;

/// A byte buffer for one key's canonical encoding: on the stack up to 64 bytes, on the heap beyond.
#[derive(Debug, Clone)]
pub struct CanonicalBytes {
    inline: [u8; INLINE],
    len: usize,
    spill: Vec<u8>,
}

impl Default for CanonicalBytes {
    fn default() -> Self {
        Self::new()
    }
}

impl CanonicalBytes {
    /// An empty buffer.
    #[inline]
    pub fn new() -> Self {
        CanonicalBytes {
            inline: [0; INLINE],
            len: 0,
            spill: Vec::new(),
        }
    }

    /// Appends raw bytes.
    #[inline]
    pub fn put(&mut self, bytes: &[u8]) {
        if self.spill.is_empty() && self.len + bytes.len() <= INLINE {
            self.inline[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline[..self.len]);
            }
            self.spill.extend_from_slice(bytes);
        }
    }

    /// Appends a length prefix (`u64`, little-endian) and then the bytes.
    #[inline]
    pub fn put_prefixed(&mut self, bytes: &[u8]) {
        self.put(&(bytes.len() as u64).to_le_bytes());
        self.put(bytes);
    }

    /// The encoding so far.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        if self.spill.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }
}

/// Something that can be a filter key: it writes a stable, self-delimiting byte encoding.
///
/// Implemented for integers, `bool`, strings, byte slices, IP addresses, references to keys and
/// tuples of up to five keys (a network 5-tuple). Implement it for your own type by writing its
/// fields in a fixed order with implementations that already exist.
///
/// ```
/// use chronobloom_core::hash::{CanonicalBytes, Key};
/// let mut b = CanonicalBytes::new();
/// (1u8, "ab").write_canonical(&mut b);
/// assert_eq!(b.as_slice(), &[1, 2, 0, 0, 0, 0, 0, 0, 0, b'a', b'b']);
/// ```
pub trait Key {
    /// Appends the canonical encoding of `self` to `out`.
    fn write_canonical(&self, out: &mut CanonicalBytes);

    /// [`KeyHash::of`] `self`: the hash of its canonical encoding. Integers override it to hash
    /// their bytes without the buffer (same bytes, same hash); other keys need not.
    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        let mut bytes = CanonicalBytes::new();
        self.write_canonical(&mut bytes);
        KeyHash::of_bytes(bytes.as_slice(), seed)
    }
}

macro_rules! int_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            #[inline]
            fn write_canonical(&self, out: &mut CanonicalBytes) {
                out.put(&self.to_le_bytes());
            }

            #[inline]
            fn key_hash(&self, seed: u64) -> KeyHash {
                KeyHash::of_bytes(&self.to_le_bytes(), seed)
            }
        }
    )*};
}
int_key!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128);

impl Key for usize {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        (*self as u64).write_canonical(out);
    }

    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        (*self as u64).key_hash(seed)
    }
}

impl Key for isize {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        (*self as i64).write_canonical(out);
    }

    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        (*self as i64).key_hash(seed)
    }
}

impl Key for bool {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        out.put(&[u8::from(*self)]);
    }
}

impl Key for str {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        out.put_prefixed(self.as_bytes());
    }
}

impl Key for String {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        self.as_str().write_canonical(out);
    }
}

impl Key for [u8] {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        out.put_prefixed(self);
    }
}

impl Key for Vec<u8> {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        self.as_slice().write_canonical(out);
    }
}

impl Key for Ipv4Addr {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        out.put(&self.octets());
    }
}

impl Key for Ipv6Addr {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        out.put(&self.octets());
    }
}

impl Key for IpAddr {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        match self {
            IpAddr::V4(a) => {
                out.put(&[4]);
                a.write_canonical(out);
            }
            IpAddr::V6(a) => {
                out.put(&[6]);
                a.write_canonical(out);
            }
        }
    }
}

impl<K: Key + ?Sized> Key for &K {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        (**self).write_canonical(out);
    }

    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        (**self).key_hash(seed)
    }
}

macro_rules! tuple_key {
    ($($name:ident . $idx:tt),+) => {
        impl<$($name: Key),+> Key for ($($name,)+) {
            #[inline]
            fn write_canonical(&self, out: &mut CanonicalBytes) {
                $(self.$idx.write_canonical(out);)+
            }
        }
    };
}
tuple_key!(A.0);
tuple_key!(A.0, B.1);
tuple_key!(A.0, B.1, C.2);
tuple_key!(A.0, B.1, C.2, D.3);
tuple_key!(A.0, B.1, C.2, D.3, E.4);
