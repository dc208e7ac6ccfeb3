//! Peer processes: one clear message and exit code 3, instead of timely's panics or an endless
//! wait, when a peer process is lost mid-run or cannot be reached at the start.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Exit code of a job stopped by a lost or unreachable peer process.
pub const EXIT_PEER: i32 = 3;

/// Set once this process's workers have started (every peer connected).
static STARTED: AtomicBool = AtomicBool::new(false);

/// Called by every worker when it starts.
pub fn started() {
    STARTED.store(true, Ordering::Release);
}

/// Stops the process with one message if its workers have not started within `timeout` (timely
/// waits for every peer process to connect, forever).
pub fn watch_startup(me: usize, processes: usize, hosts: String, timeout: Duration) {
    std::thread::spawn(move || {
        let step = Duration::from_millis(50);
        let mut waited = Duration::ZERO;
        while waited < timeout {
            if STARTED.load(Ordering::Acquire) {
                return;
            }
            std::thread::sleep(step);
            waited += step;
        }
        eprintln!(
            "trace_dedup: process {me} of {processes} could not reach every peer process within \
             {timeout:?} ({hosts}); start every process with the same -n and hostfile, or raise \
             --peer-timeout"
        );
        std::process::exit(EXIT_PEER);
    });
}

/// Installs the panic hook that turns a lost connection to a peer process (timely's
/// communication threads panic) into one message and exit code 3: which process was lost, the
/// last complete checkpoint and how to restart. Other panics keep the default report.
pub fn on_lost_peer(
    me: usize,
    processes: usize,
    latest: impl Fn() -> String + Send + Sync + 'static,
) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        let lost = text.starts_with("timely communication error")
            || text.starts_with("MergeQueue poisoned");
        if !lost {
            default(info);
            return;
        }
        let thread = std::thread::current();
        let peer = thread
            .name()
            .and_then(|n| {
                n.strip_prefix("timely:recv-")
                    .or(n.strip_prefix("timely:send-"))
            })
            .map_or_else(|| "a peer process".to_string(), |p| format!("process {p}"));
        eprintln!(
            "trace_dedup: process {me} of {processes} lost its connection to {peer} ({text}); \
             stopping. Last complete checkpoint: {}. Restart every process with the same flags \
             (and --checkpoint-dir) to resume from it.",
            latest()
        );
        std::process::exit(EXIT_PEER);
    }));
}
