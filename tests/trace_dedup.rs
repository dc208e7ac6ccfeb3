//! The main job, run as a user runs it: the `trace_dedup` example binary (cargo builds examples
//! for `cargo test`) on the real captures and on bad input.
//!
//! The real-trace tests need `scripts/fetch-traces.sh` (CI runs it); without the files they say so
//! and pass.

#![allow(clippy::unwrap_used)]

#[path = "support/piped.rs"]
mod piped;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn binary() -> PathBuf {
    // target/<profile>/deps/trace_dedup-<hash> → target/<profile>/examples/trace_dedup
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(Path::parent).unwrap();
    profile
        .join("examples")
        .join(format!("trace_dedup{}", std::env::consts::EXE_SUFFIX))
}

fn data(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {} is absent; run scripts/fetch-traces.sh",
            p.display()
        );
        None
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(binary()).args(args).output().unwrap()
}

/// The JSON report: the last non-empty line of stdout.
fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    serde_json::from_str(last).unwrap()
}

/// 99% one-sided upper bound of Binomial(n, p) (normal approximation, z = 2.326).
fn upper_99(n: f64, p: f64) -> f64 {
    n * p + 2.326 * (n * p * (1.0 - p)).sqrt()
}

/// `--verify` in `bykey` mode: no duplicate passes, false drops within ε's bound, and the digest
/// of the temporal index is the same for 1 and 2 workers. (10 s epochs keep the debug-build test
/// short; the final digest does not depend on the epoch length.)
fn check_trace(file: &str) {
    let Some(path) = data(file) else { return };
    let path = path.to_str().unwrap();
    let mut digests = Vec::new();
    for w in ["1", "2"] {
        let args = [
            "--pcap", path, "--key", "5tuple", "--verify", "--json", "--digest", "--mode", "bykey",
            "--epoch", "10s", "-w", w,
        ];
        let r = json(&run(&args));
        assert_eq!(r["missed_duplicates"], 0, "{file} -w {w}");
        let unique = r["exact_unique"].as_f64().unwrap();
        let drops = r["false_drops"].as_f64().unwrap();
        assert!(
            drops <= upper_99(unique, 0.01),
            "{file} -w {w}: {drops} false drops of {unique}"
        );
        // what passes: the unique records not falsely dropped, and those in the slack (last
        // seen W to W + S ago) not dropped
        let in_slack = r["slack_records"].as_f64().unwrap() - r["slack_drops"].as_f64().unwrap();
        assert_eq!(
            r["unique_out"].as_f64().unwrap(),
            unique - drops + in_slack,
            "{file} -w {w}"
        );
        assert_eq!(
            r["late_records"], 0,
            "{file}: 1 ms of lateness absorbs the ≤ 18 µs inversions"
        );
        digests.push(r["digest"].as_str().unwrap().to_string());
    }
    assert_eq!(digests[0], digests[1], "{file}: digest for -w 1 and -w 2");
}

#[test]
fn real_pcap_five_tuples() {
    check_trace("real.pcap");
}

#[test]
fn icmp_ttl_pcapng_raw_ip() {
    check_trace("icmp_ttl.pcap");
}

#[test]
fn two_processes_give_the_same_digest_as_one() {
    let Some(path) = data("icmp_ttl.pcap") else {
        return;
    };
    let path = path.to_str().unwrap();
    let base = ["--pcap", path, "--json", "--digest", "--epoch", "10s"];
    let single = json(&run(&base))["digest"].as_str().unwrap().to_string();
    let ports: Vec<u16> = (0..2)
        .map(|_| {
            TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        })
        .collect();
    let hosts = std::env::temp_dir().join(format!("trace_dedup_hosts_{}", std::process::id()));
    std::fs::write(
        &hosts,
        format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]),
    )
    .unwrap();
    let spawn = |p: &str| {
        Command::new(binary())
            .args(base)
            .args(["-n", "2", "-p", p, "-h", hosts.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (p1, p0) = (spawn("1"), spawn("0"));
    let (o0, o1) = (
        p0.wait_with_output().unwrap(),
        p1.wait_with_output().unwrap(),
    );
    std::fs::remove_file(&hosts).ok();
    assert!(
        o1.status.success(),
        "process 1: {}",
        String::from_utf8_lossy(&o1.stderr)
    );
    let r = json(&o0);
    assert_eq!(r["workers"], 2);
    assert_eq!(r["digest"].as_str().unwrap(), single);
}

/// The blocked index layout: the digest is the same for 1 and 2 workers, and differs from the
/// standard layout's (the bits are placed differently).
#[test]
fn blocked_index_layout_digest_is_independent_of_workers() {
    let digest = |extra: &[&str]| {
        let mut args = vec![
            "--synthetic",
            "20000",
            "--json",
            "--digest",
            "--epoch",
            "10s",
        ];
        args.extend_from_slice(extra);
        json(&run(&args))["digest"].as_str().unwrap().to_string()
    };
    let one = digest(&["--index-layout", "blocked"]);
    assert_eq!(one, digest(&["--index-layout", "blocked", "-w", "2"]));
    assert_ne!(one, digest(&["--index-layout", "standard"]));
}

#[test]
fn default_input_runs_and_reports() {
    let r = json(&run(&[
        "--synthetic",
        "20000",
        "--verify",
        "--json",
        "--mode",
        "local",
        "--epoch",
        "10s",
        "-w",
        "2",
    ]));
    assert_eq!(r["records"], 20_000);
    assert_eq!(r["mode"], "local");
    assert!(
        r["digest"].is_null(),
        "the digest is computed only with --digest"
    );
    // Local mode may let a duplicate through (another worker's open epoch), never more than it drops.
    assert!(r["missed_duplicates"].as_u64().unwrap() < r["duplicates_dropped"].as_u64().unwrap());
    for field in [
        "unique_out",
        "bytes_exchanged",
        "filter_bits",
        "records_per_sec",
        "seconds_total",
        "bytes_exchanged_per_record",
        "raw_bytes_per_record",
        "peak_rss_bytes",
        "dedup_bits",
        "index_bits",
        "window",
        "fpr",
        "workers",
        "late_records",
        "bad_records",
        "false_drop_rate",
    ] {
        assert!(!r[field].is_null(), "{field}");
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("trace_dedup_bad_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A missing file.
    let out = run(&["--pcap", "/nonexistent/capture.pcap"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/capture.pcap"));
    // A malformed CSV line: an error naming the line, or counted with --skip-bad.
    let csv = dir.join("flows.csv");
    std::fs::write(
        &csv,
        "timestamp,src,dst,sport,dport,proto\n1.0,10.0.0.1,10.0.0.2,1,2,6\nnot,a,line\n2.0,10.0.0.1,10.0.0.2,1,2,6\n",
    )
    .unwrap();
    let out = run(&["--csv", csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("3"),
        "names the line: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&run(&[
        "--csv",
        csv.to_str().unwrap(),
        "--skip-bad",
        "--json",
    ]));
    assert_eq!(r["bad_records"], 1);
    assert_eq!(r["records"], 2);
    assert_eq!(r["duplicates_dropped"], 1);
    // A truncated capture and an unknown link type.
    let mut pcap = vec![
        0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0,
    ];
    pcap.extend_from_slice(&147u32.to_le_bytes()); // a user-defined link type
    let unknown = dir.join("unknown.pcap");
    std::fs::write(&unknown, &pcap).unwrap();
    let out = run(&["--pcap", unknown.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("147"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let truncated = dir.join("truncated.pcap");
    std::fs::write(&truncated, &pcap[..10]).unwrap();
    let out = run(&["--pcap", truncated.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    // Bad flags.
    assert_eq!(run(&["--window", "60"]).status.code(), Some(2));
    assert_eq!(
        run(&["--fpr", "1.5", "--synthetic", "10"]).status.code(),
        Some(2)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Several captures are split over the workers (each file read by one worker, all sharing one
/// tick origin): the records are those of both files, no duplicate passes in `bykey`, and the
/// outcome and digest are the same for 1 and 2 workers; `--exact` on the same files agrees with
/// the exact verdict.
#[test]
fn several_captures_are_split_over_workers() {
    let (Some(a), Some(b)) = (data("real.pcap"), data("icmp_ttl.pcap")) else {
        return;
    };
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let mut outcomes = Vec::new();
    for w in ["1", "2"] {
        let r = json(&run(&[
            "--pcap", a, b, "--verify", "--digest", "--json", "--epoch", "10s", "-w", w,
        ]));
        assert_eq!(r["input"], "pcap 2 files");
        assert_eq!(r["missed_duplicates"], 0, "-w {w}");
        // every file's passed records count as passed (they were not before: 19.7% "false drops")
        let unique = r["exact_unique"].as_f64().unwrap();
        let drops = r["false_drops"].as_f64().unwrap();
        assert!(
            drops <= upper_99(unique, 0.01),
            "-w {w}: {drops} of {unique}"
        );
        outcomes.push((
            r["records"].clone(),
            r["unique_out"].clone(),
            r["digest"].clone(),
        ));
    }
    assert_eq!(outcomes[0], outcomes[1], "-w 1 and -w 2");
    let one = |f: &str| {
        json(&run(&["--pcap", f, "--json"]))["records"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(outcomes[0].0.as_u64().unwrap(), one(a) + one(b));
    let exact = json(&run(&["--pcap", a, b, "--exact", "--json"]));
    let verified = json(&run(&[
        "--pcap", a, b, "--verify", "--json", "--epoch", "10s",
    ]));
    assert_eq!(exact["records"], verified["records"]);
    // the exact map's window is sharp: it passes the unique records and those in the slack
    let sharp =
        verified["exact_unique"].as_u64().unwrap() + verified["slack_records"].as_u64().unwrap();
    assert_eq!(exact["unique_out"].as_u64().unwrap(), sharp);
}

/// The index's answers at any `--index-resolution` (1 ms ticks): no query whose range holds one
/// of its key's records answers "absent", for 1 and 2 workers. The queries hug records: ranges
/// of 0 to 999 ticks ending at, starting at or straddling a record (inside one second, where a
/// coarser resolution answers for the whole second), and ones just missing it.
#[test]
fn index_answers_have_no_false_negative_at_any_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let (mut s, mut csv) = (7u64, String::from("timestamp,src,dst,sport,dport,proto\n"));
    let mut next = || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let z = (s ^ (s >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z ^ (z >> 29)
    };
    // 4000 records of 60 flows over 20 s; origin 1000 s, so tick = ms after it.
    let mut records: Vec<(u64, u64)> = (0..4000).map(|_| (next() % 20_000, next() % 60)).collect();
    records.sort();
    records[0].0 = 0; // the origin: the job counts ticks from the first record
    for &(t, k) in &records {
        csv.push_str(&format!(
            "{}.{:03}000000,10.0.{}.1,10.1.0.2,{},80,6\n",
            1000 + t / 1000,
            t % 1000,
            k % 4,
            1000 + k
        ));
    }
    let key = |k: u64| format!("10.0.{}.1:{}>10.1.0.2:80/6", k % 4, 1000 + k);
    let mut queries = String::new();
    for _ in 0..600 {
        let (t, k) = records[(next() % records.len() as u64) as usize];
        let (a, b) = (next() % 1000, next() % 1000);
        let (k2, shift) = (if next() % 3 == 0 { next() % 60 } else { k }, next() % 3);
        let range = match shift {
            0 => (t.saturating_sub(a), t + b),
            1 => (t + 1, t + 1 + b),
            _ => (t.saturating_sub(a + 1), t.saturating_sub(1)),
        };
        queries.push_str(&format!("{},{},{}\n", key(k2), range.0, range.1));
    }
    let flows = dir.path().join("flows.csv");
    let qs = dir.path().join("queries.txt");
    std::fs::write(&flows, csv).unwrap();
    std::fs::write(&qs, queries).unwrap();
    for resolution in ["1ms", "1s", "10s"] {
        for w in ["1", "2"] {
            let r = json(&run(&[
                "--csv",
                flows.to_str().unwrap(),
                "--queries",
                qs.to_str().unwrap(),
                "--index-resolution",
                resolution,
                "--verify",
                "--json",
                "-w",
                w,
            ]));
            let answers = r["answers"].as_array().unwrap();
            assert_eq!(answers.len(), 600);
            let hits: Vec<_> = answers.iter().filter(|a| a["exact"] == true).collect();
            let missed = hits.iter().filter(|a| a["present"] != true).count();
            assert!(hits.len() > 200, "{} queries find a record", hits.len());
            assert_eq!(missed, 0, "--index-resolution {resolution} -w {w}");
        }
    }
}

/// The synthetic trace, generated by each worker for its own keys: 1 and 2 workers give the same
/// digest and decisions, no duplicate passes, and in `bykey` no record travels (only the index
/// does).
#[test]
fn synthetic_parts_give_the_same_result_for_any_worker_count() {
    let mut seen = Vec::new();
    for w in ["1", "2"] {
        let r = json(&run(&[
            "--synthetic",
            "60000",
            "--verify",
            "--digest",
            "--json",
            "-w",
            w,
        ]));
        assert_eq!(r["records"], 60_000);
        assert_eq!(r["missed_duplicates"], 0, "-w {w}");
        assert_eq!(r["bytes_per_record_by_kind"]["input"], 0.0, "-w {w}");
        seen.push((
            r["digest"].clone(),
            r["unique_out"].clone(),
            r["false_drops"].clone(),
        ));
    }
    assert_eq!(seen[0], seen[1]);
}

/// Runs the binary, killing it (and failing) if it has not finished within `secs` seconds.
fn run_within(args: &[&str], secs: u64) -> Output {
    let mut child = Command::new(binary())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            panic!("trace_dedup {args:?} did not finish within {secs} s: waiting on itself?");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A reader runs at most a few epochs ahead (`--in-flight 1`, `--in-flight-records 1`) on a
/// sparse input, whose moves span several epochs each: an epoch's outputs are stamped with its
/// records' least timestamp, so a reader must never wait for outputs that need it further on.
/// Every worker count and mode finishes (within a minute; seconds normally) with the digest of
/// one worker, on the synthetic trace (a reader per worker) and on one capture (a sole reader).
#[test]
fn readers_kept_close_to_the_dataflow_finish_with_the_same_digest() {
    // the index digest of `input` with `extra` flags, the run killed past a minute
    let digest = |input: &[&str], extra: &[&str]| {
        let args: Vec<&str> = input
            .iter()
            .chain(&["--json", "--digest"])
            .chain(extra)
            .copied()
            .collect();
        json(&run_within(&args, 60))["digest"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let synthetic = ["--synthetic", "20000"];
    let single = digest(&synthetic, &[]);
    for extra in [
        &["--in-flight", "1"][..],
        &["-w", "2", "--in-flight", "1"],
        &["-w", "3", "--in-flight-records", "1"],
        &["-w", "2", "--in-flight", "1", "--mode", "local"],
    ] {
        assert_eq!(digest(&synthetic, extra), single, "{extra:?}");
    }
    // a sole reader (one capture) goes by its own moves: a sparse capture's span epochs
    let Some(path) = data("real.pcap") else {
        return;
    };
    let capture = ["--pcap", path.to_str().unwrap()];
    let single = digest(&capture, &[]);
    for extra in [
        &["-w", "2", "--in-flight", "1"][..],
        &["-w", "2", "--in-flight-records", "1"],
    ] {
        assert_eq!(digest(&capture, extra), single, "real.pcap {extra:?}");
    }
}

/// A capture read as it comes — piped to standard input (`--pcap -`) or through a FIFO — gives
/// what the file gives: the same records, passed records and index digest with one and two
/// workers, and the same exact baseline. Nothing opens it twice (a pipe would lose what a first
/// look read).
#[test]
fn a_capture_read_as_it_comes_gives_what_the_file_gives() {
    use std::io::Write;
    let Some(path) = data("real.pcap") else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let fields =
        |r: &serde_json::Value| ["records", "unique_out", "digest"].map(|f| r[f].to_string());
    let piped = |args: &[&str]| {
        let (child, mut pipe) = piped::spawn(&binary(), args);
        let input = bytes.clone();
        let writer = std::thread::spawn(move || pipe.write_all(&input));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        json(&out)
    };
    let file = path.to_str().unwrap();
    for extra in [&["-w", "1"][..], &["-w", "2"], &["--exact"]] {
        let with = |input| [&["--pcap", input, "--json", "--digest"][..], extra].concat();
        let want = fields(&json(&run(&with(file))));
        assert_eq!(fields(&piped(&with("-"))), want, "{extra:?} through a pipe");
    }
    let dir = std::env::temp_dir().join(format!("chronobloom-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("live.pcap");
    if Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        let target = fifo.clone();
        let input = bytes.clone();
        let writer = std::thread::spawn(move || std::fs::write(target, input));
        let args = [
            "--pcap",
            fifo.to_str().unwrap(),
            "--json",
            "--digest",
            "-w",
            "2",
        ];
        let got = fields(&json(&run(&args)));
        writer.join().unwrap().unwrap();
        let want = fields(&json(&run(&[
            "--pcap", file, "--json", "--digest", "-w", "2",
        ])));
        assert_eq!(got, want, "through a FIFO");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C ends the input, not the job: a capture piped in is cut by SIGINT halfway (the rest
/// arrives after it), and the job reports the records it read before it — about half, the same
/// number with one and two workers and for the exact baseline — marked `interrupted`, exit code
/// 0, and its `--out-pcap` capture holds the passed ones of them. A second Ctrl-C stops a job
/// still waiting for input at once (exit code 130).
#[test]
fn ctrl_c_ends_the_input_and_the_job_reports_what_it_read() {
    use std::io::Write;
    use std::time::Duration;
    let Some(path) = data("real.pcap") else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let half = bytes.len() / 2;
    let binary = binary();
    let all = json(&run(&["--pcap", path.to_str().unwrap(), "--json"]))["records"]
        .as_u64()
        .unwrap();
    let mut read = Vec::new();
    let dir = std::env::temp_dir().join(format!("chronobloom-ctrl-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let deduped = dir.join("deduped.pcap");
    let deduped = deduped.to_str().unwrap();
    for extra in [&["-w", "1"][..], &["-w", "2"], &["--exact"]] {
        let args = [&["--pcap", "-", "--json", "--out-pcap", deduped][..], extra].concat();
        let (child, mut pipe) = piped::spawn(&binary, &args);
        pipe.write_all(&bytes[..half]).unwrap();
        // the job reads the first half and waits inside a packet for the rest
        std::thread::sleep(Duration::from_secs(2));
        piped::interrupt(child.id());
        std::thread::sleep(Duration::from_millis(200));
        // the rest arrives after the interrupt: the reader stops at its next record
        let _ = pipe.write_all(&bytes[half..]);
        drop(pipe);
        let out = child.wait_with_output().unwrap();
        let r = json(&out);
        assert_eq!(r["interrupted"], true, "{extra:?}");
        let records = r["records"].as_u64().unwrap();
        assert!(
            0 < records && records < all,
            "{extra:?}: {records} of {all}"
        );
        read.push(records);
        // the deduplicated capture holds what passed of what was read, and reads back whole
        let written = chronobloom::trace::PcapTrace::open(deduped)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        assert_eq!(
            written.len() as u64,
            r["unique_out"].as_u64().unwrap(),
            "{extra:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(read.windows(2).all(|w| w[0] == w[1]), "{read:?}");
    // a second Ctrl-C while the job waits for input
    let (mut child, mut pipe) = piped::spawn(&binary, &["--pcap", "-", "--json"]);
    pipe.write_all(&bytes[..half]).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    piped::interrupt(child.id());
    std::thread::sleep(Duration::from_millis(200));
    piped::interrupt(child.id());
    let status = child.wait().unwrap();
    drop(pipe);
    assert_eq!(status.code(), Some(130));
}

/// `--out` writes exactly the passed records, one line each after the header, whatever the
/// input: the synthetic trace and several captures too, whose positions in the input are not
/// small indices (`file << 40 | index`, a session's order times 2^24; before, indexing by them
/// panicked).
#[test]
fn out_writes_the_passed_records_of_every_input() {
    let dir = std::env::temp_dir().join(format!("chronobloom-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("passed.csv");
    let mut inputs = vec![vec!["--synthetic".to_string(), "20000".to_string()]];
    if let (Some(a), Some(b)) = (data("real.pcap"), data("icmp_ttl.pcap")) {
        let path = |p: PathBuf| p.to_str().unwrap().to_string();
        inputs.push(vec!["--pcap".into(), path(a), path(b)]);
    }
    for input in inputs {
        let mut args: Vec<&str> = input.iter().map(String::as_str).collect();
        args.extend(["--json", "--out", out.to_str().unwrap()]);
        let r = json(&run(&args));
        let text = std::fs::read_to_string(&out).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("timestamp,src,dst,sport,dport,proto"));
        let passed: Vec<&str> = lines.collect();
        assert_eq!(
            passed.len() as u64,
            r["unique_out"].as_u64().unwrap(),
            "{input:?}"
        );
        assert!(
            passed.iter().all(|l| l.split(',').count() == 6),
            "{input:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Checkpoints on a sparse input read by several workers (the synthetic trace: a reader per
/// worker, whose next records lie in different epochs at a boundary): every reader stops at the
/// boundary itself, so the run finishes (before, each waited at its own record's epoch for the
/// other and the job hung), with the digest of a run without checkpoints, and the newest
/// checkpoint holds every worker's parts.
#[test]
fn checkpoints_of_a_sparse_input_read_by_two_workers_complete() {
    let dir = std::env::temp_dir().join(format!("chronobloom-sparse-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let input = ["--synthetic", "20000", "--json", "--digest", "-w", "2"];
    let plain = json(&run_within(&input, 60))["digest"].clone();
    let ckpt = dir.to_str().unwrap();
    let args = [
        &input[..],
        &["--checkpoint-dir", ckpt, "--checkpoint-every", "60s"],
    ]
    .concat();
    let r = json(&run_within(&args, 60));
    assert_eq!(r["digest"], plain);
    let mut boundaries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    boundaries.sort();
    let newest = boundaries.last().expect("a checkpoint");
    for part in ["dedup", "index", "source"] {
        for w in 0..2 {
            let file = newest.join(format!("{part}-w{w:04}.ckpt"));
            assert!(file.exists(), "{} missing", file.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes a capture of 100 flows a second to `path` with `gen_capture` (built beside the job).
fn generate(path: &Path, args: &[&str]) {
    let gen = binary().with_file_name(format!("gen_capture{}", std::env::consts::EXE_SUFFIX));
    let out = Command::new(gen)
        .args(["--out", path.to_str().unwrap(), "--flows-per-sec", "100"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Checkpoints with workers that have no input of their own (one capture over two workers, two
/// captures over three) or whose input ends long before another's (a 100 s capture beside a
/// 300 s one): such a worker holds its inputs at the next boundary and writes its part once the
/// readers still going have reached it, so every checkpoint left is complete (before: refused,
/// and earlier still, none ever completed), the digest is the plain run's, and a restart from
/// the older kept checkpoint (past the short capture's end) ends with the same report.
#[test]
fn checkpoints_complete_with_workers_whose_input_ended_or_was_none() {
    let dir = std::env::temp_dir().join(format!("chronobloom-ended-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let capture = |name: &str, packets: &str, seconds: &str, seed: &str| {
        let path = dir.join(name);
        generate(
            &path,
            &["--packets", packets, "--seconds", seconds, "--seed", seed],
        );
        path.to_str().unwrap().to_string()
    };
    let long = capture("long.pcap", "60000", "300", "1");
    let short = capture("short.pcap", "20000", "100", "2");
    let report = |r: &serde_json::Value| {
        (
            r["records"].clone(),
            r["unique_out"].clone(),
            r["digest"].clone(),
        )
    };
    for (case, (files, workers)) in [
        (vec![&long], "2"),
        (vec![&long, &short], "2"),
        (vec![&long, &short], "3"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut args = vec!["--pcap"];
        args.extend(files.iter().map(|f| f.as_str()));
        args.extend(["--json", "--digest", "-w", workers]);
        let plain = report(&json(&run_within(&args, 120)));
        let ckpt = dir.join(format!("ckpt-{case}"));
        args.extend(["--checkpoint-dir", ckpt.to_str().unwrap()]);
        args.extend(["--checkpoint-every", "30s"]);
        assert_eq!(report(&json(&run_within(&args, 120))), plain, "{args:?}");
        let mut boundaries: Vec<PathBuf> = std::fs::read_dir(&ckpt)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        boundaries.sort();
        assert!(boundaries.len() >= 2, "{args:?}: {boundaries:?}");
        for b in &boundaries {
            assert!(b.join("report-w0000.ckpt").exists(), "{}", b.display());
            for w in 0..workers.parse().unwrap() {
                for part in ["dedup", "index", "source"] {
                    let file = b.join(format!("{part}-w{w:04}.ckpt"));
                    assert!(file.exists(), "{args:?}: {} missing", file.display());
                }
            }
        }
        // the older kept checkpoint: at 240 s or later, past the short capture's 100 s
        std::fs::remove_dir_all(boundaries.last().unwrap()).unwrap();
        let older = &boundaries[boundaries.len() - 2];
        let resumed = run_within(&args, 120);
        let stderr = String::from_utf8_lossy(&resumed.stderr);
        assert!(
            stderr.contains(&format!("resuming from {}", older.display())),
            "{stderr}"
        );
        assert_eq!(report(&json(&resumed)), plain, "{args:?} resumed");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--out-pcap` writes the deduplicated capture as the job runs: exactly the frames of the
/// records that passed, in input order (read back, they are the records `--out` lists), byte for
/// byte as the input holds them (its file header, then a subsequence of its packet records), the
/// same bytes with one worker, two workers and from a pipe to a pipe (the report then on standard
/// error); `out_pcap_packets` is `unique_out`, also for the exact baseline's capture.
#[test]
fn out_pcap_writes_the_passed_frames_as_the_job_runs() {
    use chronobloom::trace::PcapTrace;
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("chronobloom-out-pcap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let generated = dir.join("generated.pcap");
    generate(&generated, &["--packets", "40000", "--seconds", "120"]);
    let mut inputs = vec![generated];
    inputs.extend(data("real.pcap"));
    inputs.extend(data("icmp_ttl.pcap")); // pcapng
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (out, csv) = (dir.join("deduped.pcap"), dir.join("passed.csv"));
    for input in inputs {
        let file = path(&input);
        let r = json(&run(&[
            "--pcap",
            &file,
            "--json",
            "--out-pcap",
            &path(&out),
            "--out",
            &path(&csv),
        ]));
        assert_eq!(r["out_pcap_packets"], r["unique_out"], "{file}");
        // read back: the records --out lists, in its order
        let lines: Vec<String> = PcapTrace::open(&out)
            .unwrap()
            .map(|f| {
                let f = f.unwrap();
                let (s, ns) = (f.ts_nanos / 1_000_000_000, f.ts_nanos % 1_000_000_000);
                format!(
                    "{s}.{ns:09},{},{},{},{},{}",
                    f.src, f.dst, f.sport, f.dport, f.proto
                )
            })
            .collect();
        let listed = std::fs::read_to_string(&csv).unwrap();
        let listed: Vec<&str> = listed.lines().skip(1).collect();
        assert_eq!(
            lines.len() as u64,
            r["unique_out"].as_u64().unwrap(),
            "{file}"
        );
        assert!(
            lines.iter().map(String::as_str).eq(listed.iter().copied()),
            "{file}"
        );
        // byte for byte: everything of the input that is not a record (file header, pcapng
        // interfaces, frames without IP), and a subsequence of its records
        let written = std::fs::read(&out).unwrap();
        let given = std::fs::read(&input).unwrap();
        let kept = |bytes: &[u8]| {
            let mut t =
                PcapTrace::from_reader("kept", std::io::Cursor::new(bytes.to_vec())).unwrap();
            t.keep_frames().unwrap();
            let (mut before, mut records) = (Vec::new(), Vec::new());
            while let Some(r) = t.next_ref() {
                r.unwrap();
                let k = t.kept().unwrap();
                before.extend_from_slice(k.before);
                records.push(k.record.to_vec());
            }
            before.extend_from_slice(t.kept().unwrap().before);
            (before, records)
        };
        let (before, records) = kept(&given);
        let subsequence = |chosen: Vec<Vec<u8>>, what: &str| {
            assert_eq!(
                chosen.len() as u64,
                r["unique_out"].as_u64().unwrap(),
                "{what}"
            );
            let mut from = records.iter();
            for k in chosen {
                assert!(
                    from.any(|p| *p == k),
                    "{what}: a record not in the input in order"
                );
            }
        };
        let (written_before, written_records) = kept(&written);
        assert!(written_before == before, "{file}: what is not a packet");
        subsequence(written_records, &file);
        // the exact baseline writes its own decisions the same way
        let exact = json(&run(&[
            "--pcap",
            &file,
            "--json",
            "--exact",
            "--out-pcap",
            &path(&out),
        ]));
        assert_eq!(
            exact["out_pcap_packets"], exact["unique_out"],
            "{file} --exact"
        );
        let (exact_before, exact_records) = kept(&std::fs::read(&out).unwrap());
        assert!(
            exact_before == before,
            "{file} --exact: what is not a packet"
        );
        assert_eq!(
            exact_records.len() as u64,
            exact["unique_out"].as_u64().unwrap()
        );
        let mut from = records.iter();
        for k in exact_records {
            assert!(
                from.any(|p| *p == k),
                "{file} --exact: a record not in the input in order"
            );
        }
        // two workers, and a pipe in and out: the same bytes
        json(&run(&[
            "--pcap",
            &file,
            "--json",
            "--out-pcap",
            &path(&out),
            "-w",
            "2",
        ]));
        assert!(std::fs::read(&out).unwrap() == written, "{file}: -w 2");
        let (child, mut pipe) = piped::spawn(
            &binary(),
            &["--pcap", "-", "--json", "--out-pcap", "-", "-w", "2"],
        );
        let feeder = std::thread::spawn(move || pipe.write_all(&given));
        let piped = child.wait_with_output().unwrap();
        feeder.join().unwrap().unwrap();
        assert!(
            piped.status.success(),
            "{}",
            String::from_utf8_lossy(&piped.stderr)
        );
        assert!(piped.stdout == written, "{file}: through pipes");
        let report: serde_json::Value = serde_json::from_str(
            String::from_utf8_lossy(&piped.stderr)
                .lines()
                .last()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            report["unique_out"], r["unique_out"],
            "{file}: report on stderr"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--out-pcap` with checkpoints: each checkpoint marks how much of the capture was written (every
/// record before the boundary decided and written, nothing after it), and a restart cuts the file
/// back to that mark and writes on, so a run stopped after a checkpoint — with bytes written past
/// it — and restarted gives the uninterrupted run's file byte for byte.
#[test]
fn out_pcap_resumes_from_a_checkpoint_byte_for_byte() {
    let dir = std::env::temp_dir().join(format!("chronobloom-out-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("long.pcap");
    generate(&input, &["--packets", "60000", "--seconds", "300"]);
    let (plain, out, ckpt) = (
        dir.join("plain.pcap"),
        dir.join("out.pcap"),
        dir.join("ckpt"),
    );
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let base = |to: &Path| {
        vec![
            "--pcap".to_string(),
            path(&input),
            "--json".into(),
            "-w".into(),
            "2".into(),
            "--out-pcap".into(),
            path(to),
        ]
    };
    let run_args = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_within(&args, 120)
    };
    let want = json(&run_args(&base(&plain)));
    let want_bytes = std::fs::read(&plain).unwrap();
    let mut args = base(&out);
    args.extend(["--checkpoint-dir".into(), path(&ckpt)]);
    args.extend(["--checkpoint-every".into(), "30s".into()]);
    let first = json(&run_args(&args));
    assert_eq!(first["out_pcap_packets"], want["out_pcap_packets"]);
    assert!(
        std::fs::read(&out).unwrap() == want_bytes,
        "with checkpoints"
    );
    // stopped after the older kept checkpoint, with bytes written past it
    let mut boundaries: Vec<PathBuf> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    boundaries.sort();
    std::fs::remove_dir_all(boundaries.last().unwrap()).unwrap();
    let mut cut = want_bytes[..want_bytes.len() - 5000].to_vec();
    cut.extend_from_slice(&[0xee; 1234]);
    std::fs::write(&out, cut).unwrap();
    let resumed = run_args(&args);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(stderr.contains("resuming from"), "{stderr}");
    let r = json(&resumed);
    assert_eq!(r["out_pcap_packets"], want["out_pcap_packets"]);
    assert_eq!(r["digest"], want["digest"]);
    assert!(std::fs::read(&out).unwrap() == want_bytes, "restarted");
    let _ = std::fs::remove_dir_all(&dir);
}
