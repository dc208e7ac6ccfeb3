//! The main job fed through a pipe, as `tcpdump -w - | trace_dedup --pcap -` feeds it: spawned with
//! its standard input a pipe, and interrupted as Ctrl-C would.

use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

/// Spawns `binary` with `args`, its outputs captured and its standard input a pipe, returned
/// (dropping it ends the input).
pub fn spawn(binary: &Path, args: &[&str]) -> (Child, ChildStdin) {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = child.stdin.take().unwrap();
    (child, pipe)
}

/// Sends SIGINT, what Ctrl-C sends, to process `pid`.
pub fn interrupt(pid: u32) {
    let sent = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
    assert!(sent.is_ok_and(|s| s.success()), "kill -INT {pid}");
}
