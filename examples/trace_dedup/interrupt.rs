//! Ctrl-C (SIGINT) ends the input instead of the process: the readers stop at their next record,
//! and what they read is decided, indexed and reported as at the end of the input (a live capture
//! piped in ends this way). A second Ctrl-C stops the process at once (exit code 130).

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first interrupt.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler (once per process; a second call is an error of the caller's).
pub fn install() -> Result<(), String> {
    ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
        eprintln!(
            "trace_dedup: interrupted: finishing the records read so far (Ctrl-C again to stop now)"
        );
    })
    .map_err(|e| format!("cannot install the Ctrl-C handler: {e}"))
}

/// Whether an interrupt asked the readers to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
