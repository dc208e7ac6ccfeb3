//! The crash test of the main job: two processes with checkpoints; process 1 is killed with
//! SIGKILL mid-run; process 0 stops promptly with one clear message and exit code 3; both
//! restart from the checkpoint and finish with zero missed duplicates (`bykey`), no false
//! negative among the temporal queries, and the digest and counts of an uninterrupted run.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

#[path = "support/binary.rs"]
mod binary;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn binary() -> &'static Path {
    binary::trace_dedup()
}

/// The flags every run shares: a synthetic hour, source addresses as keys, checkpoints every
/// two trace minutes, temporal queries, verification and the digest.
fn flags(queries: &Path) -> Vec<String> {
    [
        "--synthetic",
        "150000",
        "--key",
        "src",
        "--json",
        "--verify",
        "--digest",
        "--checkpoint-every",
        "120s",
        "--queries",
        queries.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn report(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().rfind(|l| l.starts_with('{')).unwrap();
    serde_json::from_str(last).unwrap()
}

fn hostfile(dir: &Path) -> PathBuf {
    let ports: Vec<u16> = (0..2)
        .map(|_| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        })
        .collect();
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]),
    )
    .unwrap();
    hosts
}

fn spawn(args: &[String], extra: &[&str], hosts: &Path, p: &str) -> Child {
    Command::new(binary())
        .args(args)
        .args(extra)
        .args(["-n", "2", "-p", p, "-h", hosts.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_with_deadline(mut child: Child, secs: u64) -> Output {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("a process did not stop within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn complete_checkpoints(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| {
                // 2 workers × (dedup, index, source) + the report
                std::fs::read_dir(e.path()).map_or(0, |f| {
                    f.filter_map(Result::ok)
                        .filter(|f| f.path().extension().is_some_and(|x| x == "ckpt"))
                        .count()
                }) == 7
            })
            .count()
    })
}

#[test]
fn a_killed_process_restarts_from_the_checkpoint_without_loss() {
    let dir = tempfile::tempdir().unwrap();
    let queries = dir.path().join("queries.csv");
    let mut lines = String::new();
    for c in 0..60u32 {
        let ip = std::net::Ipv4Addr::from(0x0a00_0000 | c);
        lines.push_str(&format!(
            "{ip},0,3600000\n{ip},{},{}\n",
            c * 50_000,
            c * 50_000 + 600_000
        ));
    }
    std::fs::write(&queries, lines).unwrap();
    let args = flags(&queries);

    // the uninterrupted run (one process)
    let whole = report(&Command::new(binary()).args(&args).output().unwrap());
    assert_eq!(whole["missed_duplicates"], 0);

    // two processes with checkpoints, paced so that process 1 dies mid-run
    let ckpt = dir.path().join("ckpt");
    let hosts = hostfile(dir.path());
    let mut crashed = args.clone();
    crashed.extend(["--checkpoint-dir".into(), ckpt.to_str().unwrap().into()]);
    let p1 = spawn(&crashed, &["--rate", "30000"], &hosts, "1");
    let p0 = spawn(&crashed, &["--rate", "30000"], &hosts, "0");
    let deadline = Instant::now() + Duration::from_secs(60);
    while complete_checkpoints(&ckpt) < 1 {
        assert!(Instant::now() < deadline, "no checkpoint within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut p1 = p1;
    p1.kill().unwrap(); // SIGKILL
    let killed_at = Instant::now();
    let _ = p1.wait();
    let o0 = wait_with_deadline(p0, 30);
    let stopped_after = killed_at.elapsed();
    let stderr = String::from_utf8_lossy(&o0.stderr);
    assert_eq!(o0.status.code(), Some(3), "stderr: {stderr}");
    assert!(
        stderr.contains("lost its connection to process 1")
            && stderr.contains("Last complete checkpoint: ")
            && stderr.contains("ckpt-"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
    assert!(stopped_after < Duration::from_secs(10), "{stopped_after:?}");
    assert!(complete_checkpoints(&ckpt) >= 1);

    // both restart with the same flags and resume from the checkpoint
    let hosts = hostfile(dir.path());
    let r1 = spawn(&crashed, &[], &hosts, "1");
    let r0 = spawn(&crashed, &[], &hosts, "0");
    let (o0, o1) = (wait_with_deadline(r0, 120), wait_with_deadline(r1, 120));
    assert!(
        o1.status.success(),
        "{}",
        String::from_utf8_lossy(&o1.stderr)
    );
    assert!(String::from_utf8_lossy(&o0.stderr).contains("resuming from"));
    let resumed = report(&o0);
    assert_eq!(resumed["workers"], 2);
    assert_eq!(resumed["missed_duplicates"], 0);
    for key in [
        "records",
        "unique_out",
        "duplicates_dropped",
        "digest",
        "false_drops",
    ] {
        assert_eq!(resumed[key], whole[key], "{key}");
    }
    let answers = resumed["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 120);
    for a in answers {
        assert!(
            a["present"] == true || a["exact"] == false,
            "false negative: {a}"
        );
    }
    let verdicts = |r: &serde_json::Value| -> Vec<(String, bool)> {
        r["answers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    format!("{},{},{}", a["key"], a["start"], a["end"]),
                    a["present"] == true,
                )
            })
            .collect()
    };
    assert_eq!(verdicts(&resumed), verdicts(&whole));
}
