//! A counting global allocator: each thread's live heap bytes and their peak, so that a case
//! whose allocations its input cannot justify is reported like a panic; a request too large to
//! attempt at all is refused and remembered ([`refused`]), after [`set_refusal_hook`]'s hook
//! has saved the input (a caller that cannot handle the refusal aborts the process).
// A global allocator is an `unsafe impl`; this is the only unsafe code of the test suite, and it
// forwards every call unchanged to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::OnceLock;

/// Single requests above this are refused: the process then aborts, as it would have on the
/// failed allocation, but with the input saved.
pub const REFUSE_BYTES: usize = 1 << 30;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
    static REFUSED: Cell<u64> = const { Cell::new(0) };
}

static REFUSAL_HOOK: OnceLock<fn(usize)> = OnceLock::new();

/// Called (once per process) with the size of a refused request, before the process aborts.
pub fn set_refusal_hook(hook: fn(usize)) {
    let _ = REFUSAL_HOOK.set(hook);
}

/// The system allocator, counted per thread.
pub struct Counting;

fn count(delta: i64) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

fn refuse(size: usize) -> *mut u8 {
    let _ = REFUSED.try_with(|r| r.set(r.get().max(size as u64)));
    if let Some(hook) = REFUSAL_HOOK.get() {
        hook(size);
    }
    std::ptr::null_mut()
}

// SAFETY: every call is forwarded to `System` with the caller's arguments; the counters are
// thread-local cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > REFUSE_BYTES {
            return refuse(layout.size());
        }
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > REFUSE_BYTES {
            return refuse(layout.size());
        }
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > REFUSE_BYTES {
            return refuse(new_size);
        }
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// Starts measuring: the peak is reset to the bytes live now, which are returned, and no
/// request counts as refused.
pub fn start() -> i64 {
    let live = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(live));
    REFUSED.with(|r| r.set(0));
    live
}

/// The largest request refused on this thread since [`start`] (0 for none).
pub fn refused() -> u64 {
    REFUSED.with(Cell::get)
}

/// The most bytes live on this thread above `base` since [`start`].
pub fn peak_above(base: i64) -> u64 {
    PEAK.with(Cell::get).saturating_sub(base).max(0) as u64
}
