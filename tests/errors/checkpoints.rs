//! Rows K of `docs/ERRORS.md`: checkpoints and peers.

use super::*;

use chronobloom::core::temporal::TimeRange;
use chronobloom::operators::checkpoint::{decode, encode, CheckpointError, Header};
use chronobloom::operators::timely;
use chronobloom::operators::{Allocator, AllocatorConfig, AllocatorSnapshot, Lag};
use chronobloom::operators::{DedupConfig, DedupSnapshot, IndexSnapshot, TimedDedup};
use chronobloom::operators::{MembershipConfig, TimedWindowMembership};
use std::path::{Path, PathBuf};
use std::process::Command;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::ProbeHandle;

fn file() -> Vec<u8> {
    let h = Header {
        part: "dedup".into(),
        worker: 0,
        workers: 1,
        boundary: 10,
        job: 1,
    };
    encode(&h, b"payload").unwrap()
}

fn p() -> &'static Path {
    Path::new("ck/dedup-w0000.ckpt")
}

#[test]
fn k01_foreign_file_refused() {
    let e = decode(p(), b"%PDF-1.7 not a checkpoint").unwrap_err();
    assert!(matches!(e, CheckpointError::Foreign { .. }));
    assert_eq!(
        e.to_string(),
        "ck/dedup-w0000.ckpt is not a chronobloom checkpoint (no `CHRBLMCP` header)"
    );
}

#[test]
fn k02_truncated_file_refused() {
    let bytes = file();
    let e = decode(p(), &bytes[..bytes.len() - 5]).unwrap_err();
    assert!(matches!(e, CheckpointError::Truncated { .. }));
    assert_eq!(
        e.to_string(),
        format!(
            "ck/dedup-w0000.ckpt is truncated: {} bytes, {} needed",
            bytes.len() - 5,
            bytes.len()
        )
    );
}

#[test]
fn k03_corrupted_file_refused() {
    let mut bytes = file();
    bytes[50] ^= 4; // a payload byte
    let e = decode(p(), &bytes).unwrap_err();
    assert!(matches!(e, CheckpointError::Corrupt { .. }));
    assert!(e
        .to_string()
        .starts_with("ck/dedup-w0000.ckpt is corrupted: checksum 0x"));
}

#[test]
fn k04_future_version_refused() {
    let mut bytes = file();
    bytes[8] = 5;
    let e = decode(p(), &bytes).unwrap_err();
    assert!(matches!(e, CheckpointError::Version { found: 5, .. }));
    assert_eq!(
        e.to_string(),
        "ck/dedup-w0000.ckpt: checkpoint format version 5, this build reads version 4"
    );
}

const JOB: [&str; 6] = [
    "--synthetic",
    "30000",
    "--json",
    "--checkpoint-every",
    "300s",
    "--digest",
];

/// Runs the job with checkpoints in a fresh directory; returns it and the checkpoints made.
fn checkpointed(extra: &[&str]) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let mut args: Vec<&str> = JOB.to_vec();
    args.extend(["--checkpoint-dir", &d]);
    args.extend(extra);
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut made: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    made.sort();
    assert!(!made.is_empty());
    (dir, made)
}

fn resume(dir: &Path, extra: &[&str]) -> std::process::Output {
    let d = dir.to_str().unwrap();
    let mut args: Vec<&str> = JOB.to_vec();
    args.extend(["--checkpoint-dir", d]);
    args.extend(extra);
    run(&args)
}

#[test]
fn k05_corrupted_newest_checkpoint_skipped() {
    let (dir, made) = checkpointed(&[]);
    assert_eq!(
        made.len(),
        2,
        "the two newest complete checkpoints are kept"
    );
    let newest = made.last().unwrap();
    let index = newest.join("index-w0000.ckpt");
    let mut bytes = std::fs::read(&index).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&index, bytes).unwrap();
    let out = resume(dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("skipped: ") && stderr.contains("is corrupted: checksum"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn k06_other_flags_refused() {
    let (dir, _) = checkpointed(&[]);
    let out = resume(dir.path(), &["--window", "30s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("trace_dedup: ")
            && stderr.contains("belongs elsewhere: job fingerprint is 0x"),
        "{stderr}"
    );
}

#[test]
fn k07_other_worker_count_refused() {
    let (dir, _) = checkpointed(&[]);
    let out = resume(dir.path(), &["-w", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("belongs elsewhere: worker count is 1, this job expects 2"),
        "{stderr}"
    );
}

#[test]
fn k08_changed_input_refused() {
    let csv = |n: u32| {
        let mut text = String::from("timestamp,src,dst,sport,dport,proto\n");
        for i in 0..2_000u32 {
            text.push_str(&format!(
                "{}.0,10.0.{}.{},192.0.2.1,{},443,6\n",
                i,
                (i * n) % 7,
                i % 250,
                1000 + i % 9
            ));
        }
        text
    };
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), csv(1)).unwrap();
    let ck = tempfile::tempdir().unwrap();
    let args = |ck: &Path| {
        vec![
            "--csv".to_string(),
            input.path().to_str().unwrap().to_string(),
            "--json".into(),
            "--checkpoint-every".into(),
            "600s".into(),
            "--checkpoint-dir".into(),
            ck.to_str().unwrap().to_string(),
        ]
    };
    let out = Command::new(binary())
        .args(args(ck.path()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(input.path(), csv(3)).unwrap(); // same name and size, other records
    let out = Command::new(binary())
        .args(args(ck.path()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the input changed since the checkpoint: "),
        "{stderr}"
    );
}

#[test]
fn k09_compact_snapshot_into_exact_edge_refused() {
    let snap = snapshot(8, true).unwrap();
    let exact = DedupConfig::builder()
        .window(50)
        .epoch_len(10)
        .shards(8)
        .exact_edge(true)
        .expected_items_per_window(1_000)
        .build()
        .unwrap();
    let e = timely::execute_directly(move |worker| {
        worker.dataflow::<u64, _, _>(|scope| {
            let (_input, recs) = scope.new_input::<Vec<(u64, u64)>>();
            recs.dedup_timed_resumable(&exact, |k: &u64| *k, Some(snap))
                .map(|_| ())
        })
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "checkpointed state of dedup cannot be restored: a compact shard filter, and the \
         configuration has exact edges"
    );
}

#[test]
fn k10_checkpoint_dir_that_is_a_file_refused() {
    let f = tempfile::NamedTempFile::new().unwrap();
    let out = run(&["--checkpoint-dir", f.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "trace_dedup: checkpoint file {}: ",
            f.path().display()
        )),
        "{stderr}"
    );
}

fn config(shards: u32) -> DedupConfig {
    DedupConfig::builder()
        .window(50)
        .epoch_len(10)
        .shards(shards)
        .build()
        .unwrap()
}

/// A dedup dataflow fed a few records; `settle` steps until the probe passes tick 20 before
/// the snapshot is taken. Returns the snapshot or its error.
fn snapshot(shards: u32, settle: bool) -> Result<DedupSnapshot, CheckpointError> {
    timely::execute_directly(move |worker| {
        let probe = ProbeHandle::new();
        let (mut input, handle) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, recs) = scope.new_input::<Vec<(u64, u64)>>();
            let (out, h) = recs
                .dedup_timed_resumable(&config(shards), |k: &u64| *k, None)
                .unwrap();
            out.stats.probe_with(&probe);
            (input, h)
        });
        for t in 0..15u64 {
            input.send((t, t % 4));
        }
        input.advance_to(20);
        if settle {
            worker.step_while(|| probe.less_than(&20));
        } else {
            worker.step();
        }
        handle.snapshot(20)
    })
}

#[test]
fn k11_snapshot_before_the_probe_passed_refused() {
    let e = snapshot(8, false).unwrap_err();
    assert!(matches!(e, CheckpointError::NotQuiescent { .. }));
    assert!(
        e.to_string()
            .starts_with("dedup is not quiescent at tick 20: "),
        "{e}"
    );
}

#[test]
fn k12_snapshot_of_another_configuration_refused() {
    let snap = snapshot(8, true).unwrap();
    let e = timely::execute_directly(move |worker| {
        worker.dataflow::<u64, _, _>(|scope| {
            let (_input, recs) = scope.new_input::<Vec<(u64, u64)>>();
            recs.dedup_timed_resumable(&config(16), |k: &u64| *k, Some(snap))
                .map(|_| ())
        })
    })
    .unwrap_err();
    assert!(matches!(e, CheckpointError::State { .. }));
    assert_eq!(
        e.to_string(),
        "checkpointed state of dedup cannot be restored: 8 shards checkpointed, the configuration has 16"
    );
}

#[test]
fn k13_undecodable_payload_refused() {
    let e = IndexSnapshot::from_bytes(&[7; 40]).unwrap_err();
    assert!(matches!(e, CheckpointError::State { .. }));
    assert!(
        e.to_string().starts_with(
            "checkpointed state of index cannot be restored: payload does not decode: "
        ),
        "{e}"
    );
    let e = DedupSnapshot::from_bytes(&[]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("checkpointed state of dedup cannot be restored: "),
        "{e}"
    );
}

/// A one-worker allocator's snapshot at tick 250, after records in partitions 0 to 2.
fn allocator_snapshot() -> AllocatorSnapshot {
    timely::execute_directly(|worker| {
        let probe = ProbeHandle::new();
        let cfg = super::index().partitions(4).build().unwrap();
        let (mut records, mut queries, handle) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, recs) = scope.new_input::<Vec<u64>>();
            let (q_in, qs) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let (streams, handle) = recs
                .allocator_resumable(qs, &cfg, &AllocatorConfig::new(Lag::Simple), None)
                .unwrap();
            streams.allocations.probe_with(&probe);
            (r_in, q_in, handle)
        });
        for t in 0..250u64 {
            records.advance_to(t);
            queries.advance_to(t);
            records.send(t % 37);
        }
        records.advance_to(250);
        queries.advance_to(250);
        worker.step_while(|| probe.less_than(&250));
        handle.snapshot(250).unwrap()
    })
}

#[test]
fn k16_allocator_snapshot_of_another_shape_refused() {
    let snap = allocator_snapshot();
    let e = timely::execute_directly(move |worker| {
        let cfg = super::index().partitions(4).build().unwrap();
        let other = AllocatorConfig::new(Lag::Simple).with_bitmaps(16);
        worker.dataflow::<u64, _, _>(|scope| {
            let (_r, recs) = scope.new_input::<Vec<u64>>();
            let (_q, qs) = scope.new_input::<Vec<(u64, TimeRange)>>();
            recs.allocator_resumable(qs, &cfg, &other, Some(snap))
                .map(|_| ())
        })
    })
    .unwrap_err();
    assert!(matches!(
        e,
        OpError::Config {
            config: "allocator",
            name: "restore",
            ..
        }
    ));
    assert!(
        e.to_string()
            .starts_with("invalid allocator configuration `restore`: partition 2's sketch: "),
        "{e}"
    );
}

#[test]
fn k17_membership_view_of_another_configuration_refused() {
    let membership = |window: u64| {
        MembershipConfig::builder()
            .window(window)
            .epoch_len(10)
            .build()
            .unwrap()
    };
    let e = timely::execute_directly(move |worker| {
        worker.dataflow::<u64, _, _>(|scope| {
            let (_i, inserts) = scope.new_input::<Vec<(u64, u64)>>();
            let (_q, queries) = scope.new_input::<Vec<(u64, u64)>>();
            let (_, handle) = inserts
                .clone()
                .window_membership_resumable(queries.clone(), &membership(60), None)
                .unwrap();
            let snap = handle.snapshot(0).unwrap();
            inserts
                .window_membership_resumable(queries, &membership(120), Some(snap))
                .map(|_| ())
        })
    })
    .unwrap_err();
    assert!(matches!(e, CheckpointError::State { .. }));
    assert_eq!(
        e.to_string(),
        "checkpointed state of membership cannot be restored: the checkpointed view has \
         another window, slack, rate or seed"
    );
}

/// A loopback port free when asked (its listener is closed again).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A hostfile of two processes on loopback at `ports`.
fn hostfile(ports: [u16; 2]) -> tempfile::NamedTempFile {
    let hosts = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        hosts.path(),
        format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]),
    )
    .unwrap();
    hosts
}

#[test]
fn k15_unreachable_peer_stops_with_a_message() {
    let hosts = hostfile([free_port(), free_port()]);
    let h = hosts.path().to_str().unwrap();
    let out = run(&["-n", "2", "-p", "0", "-h", h, "--peer-timeout", "1s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.starts_with(
            "trace_dedup: process 0 of 2 could not reach every peer process within 1s (hostfile "
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn k18_own_address_in_use_is_an_error() {
    // the first process's port, held open by this test for the run
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hosts = hostfile([taken.local_addr().unwrap().port(), free_port()]);
    let h = hosts.path().to_str().unwrap();
    let out = run(&["-n", "2", "-p", "0", "-h", h, "--peer-timeout", "5s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("trace_dedup: failed to connect process 0 to its peers ("),
        "{stderr}"
    );
    assert!(stderr.contains("in use"), "{stderr}");
    assert!(!stderr.contains("panicked"));
    drop(taken);
}

#[test]
fn k20_out_pcap_file_shorter_than_its_checkpoint_refused() {
    let d = dir();
    // a packet a second for 40 s: checkpoints every 10 s
    let packets: Vec<u8> = (1..=40u32)
        .flat_map(|s| record(s, 0, &frame(|h| h[19] = (s % 200) as u8)))
        .collect();
    let one = write(&d, "one.pcap", &capture(&packets));
    let (out, ck) = (d.path().join("deduped.pcap"), d.path().join("ck"));
    let args = [
        "--pcap",
        one.to_str().unwrap(),
        "--json",
        "--out-pcap",
        out.to_str().unwrap(),
        "--checkpoint-dir",
        ck.to_str().unwrap(),
        "--checkpoint-every",
        "10s",
    ];
    let first = Command::new(binary()).args(args).output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let bytes = std::fs::read(&out).unwrap();
    std::fs::write(&out, &bytes[..100]).unwrap();
    let again = Command::new(binary()).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot write --out-pcap {}: 100 bytes, shorter than the ",
            out.display()
        )) && stderr.contains(
            "the checkpoint's run had written: resume with that file or a new --checkpoint-dir"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        std::fs::read(&out).unwrap().len(),
        100,
        "the file is left as it was"
    );
}
