//! A cache prefetch hint, so that batch operations can overlap the cache misses of many keys
//! without holding loads in the reorder buffer.

/// Asks the CPU to start loading the cache line of `slice[i]`. Only a hint: it changes no value,
/// does nothing when `i` is out of range, and nothing on targets without a prefetch instruction.
///
/// ```
/// let cells = vec![0u32; 1 << 20];
/// chronobloom_core::prefetch::prefetch(&cells, 123_456);
/// chronobloom_core::prefetch::prefetch(&cells, usize::MAX); // out of range: nothing
/// assert_eq!(cells[123_456], 0);
/// ```
#[inline]
pub fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = slice.get(i) {
        // SAFETY: `prefetcht0` only hints the cache; it never faults and has no architectural
        // effect, and the address is that of a live element of `slice` besides.
        #[allow(unsafe_code)]
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(x).cast::<i8>());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}
