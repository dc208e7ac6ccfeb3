//! Rows J of `docs/ERRORS.md`: the main job's flags.

use super::*;

pub(super) fn binary() -> &'static Path {
    binary::trace_dedup()
}

pub(super) fn run(args: &[&str]) -> Output {
    Command::new(binary()).args(args).output().unwrap()
}

/// Asserts that `args` end the job with exit code 2 and a clean stderr containing `says`.
fn job_refuses(args: &[&str], says: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    assert!(stderr.contains(says), "{args:?}: `{stderr}` lacks `{says}`");
}

/// [`job_refuses`] for an error of ours: stderr is exactly `trace_dedup: {message}`.
fn job_says(args: &[&str], message: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr, format!("trace_dedup: {message}\n"), "{args:?}");
}

/// The JSON report of a successful run.
fn report(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn text(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn j01_zero_window_refused() {
    job_says(
        &["--window", "0s"],
        "--window 0ns is shorter than one tick (--unit 1ms); give at least 1ms",
    );
}

#[test]
fn j02_zero_epoch_refused() {
    job_says(
        &["--epoch", "0ms"],
        "--epoch 0ns is shorter than one tick (--unit 1ms); give at least 1ms",
    );
}

#[test]
fn j03_window_shorter_than_unit_refused() {
    job_says(
        &["--window", "1ms", "--unit", "1s"],
        "--window 1ms is shorter than one tick (--unit 1s); give at least 1s",
    );
}

#[test]
fn j04_zero_unit_refused() {
    job_says(
        &["--unit", "0s"],
        "invalid tick unit `0ns`: expected a duration of at least 1 ns",
    );
}

#[test]
fn j05_fpr_outside_unit_interval_refused() {
    for (given, shown) in [
        ("1.5", "1.5"),
        ("0", "0"),
        ("1", "1"),
        ("NaN", "NaN"),
        ("-0.1", "-0.1"),
    ] {
        job_says(
            &["--fpr", given],
            &format!("--fpr {shown}: invalid dedup configuration `fpr`: {shown} is not in (0, 1)"),
        );
    }
}

#[test]
fn j06_fpr_below_compact_floor_refused() {
    job_says(
        &["--fpr", "1e-9"],
        "--fpr 0.000000001: invalid dedup configuration `fpr`: 0.000000001 is below 1.132e-7, \
         the least rate 32-bit slots reach",
    );
}

#[test]
fn j07_duration_without_known_unit_refused() {
    job_refuses(
        &["--window", "10 parsecs"],
        "error: invalid value '10 parsecs' for '--window <WINDOW>': invalid duration `10 \
         parsecs`: unknown unit: use ms, s, m or h",
    );
    job_refuses(
        &["--window", "60"],
        "error: invalid value '60' for '--window <WINDOW>': invalid duration `60`: missing unit: \
         write e.g. `60s`; units are ms, s, m, h",
    );
}

#[test]
fn j08_slack_below_minimum_refused() {
    job_says(
        &["--slack", "0s"],
        "--slack 0ns: invalid dedup configuration `slack`: 0 ticks is below 1999, the least for a \
         window of 60000 ticks (at most 31 generations); use `exact_edge` for a sharp edge",
    );
}

#[test]
fn j09_slack_with_exact_edge_refused() {
    job_refuses(
        &["--slack", "1s", "--exact-edge"],
        "error: the argument '--slack <SLACK>' cannot be used with '--exact-edge'",
    );
}

#[test]
fn j10_exact_edge_expected_keys_zero_or_too_many_refused() {
    job_says(
        &["--exact-edge", "--expected-keys", "0"],
        "--expected-keys 0: invalid dedup configuration `expected_items`: must be at least 1",
    );
    job_refuses(
        &["--exact-edge", "--expected-keys", "1000000000000"],
        "trace_dedup: --expected-keys 1000000000000: invalid dedup configuration \
         `expected_items`: ",
    );
}

#[test]
fn j11_index_bits_or_partitions_zero_refused() {
    job_says(
        &["--index-bits", "0"],
        "--index-bits 0: invalid index configuration `bits`: at least one level needs bits",
    );
    job_says(
        &["--index-partitions", "0"],
        "--index-partitions 0: invalid index configuration `partitions`: must be at least 1",
    );
}

#[test]
fn j31_index_resolution_below_a_tick_or_not_dividing_an_hour_refused() {
    job_says(
        &["--index-resolution", "7s"],
        "--index-resolution 7s: invalid index configuration `resolution`: 7000 does not divide \
         partition_len 3600000",
    );
    job_says(
        &["--unit", "1s", "--index-resolution", "500ms"],
        "--index-resolution 500ms: invalid index configuration `resolution`: must be at least 1 tick",
    );
}

#[test]
fn j32_epoch_longer_than_2_pow_32_ticks_refused() {
    job_says(
        &["--epoch", "1200h"],
        "--epoch 4320000s is 4320000000 ticks of --unit 1ms; at most 4294967296",
    );
}

#[test]
fn j33_dedup_shards_outside_1_to_4096_refused() {
    for n in ["0", "4097"] {
        job_says(
            &["--dedup-shards", n],
            &format!(
                "--dedup-shards {n}: invalid dedup configuration `shards`: {n} is outside 1..=4096"
            ),
        );
    }
}

#[test]
fn j12_numeric_flags_out_of_range_refused() {
    job_refuses(
        &["--in-flight", "0"],
        "error: invalid value '0' for '--in-flight <IN_FLIGHT>': 0 is not in 1..18446744073709551615",
    );
    job_refuses(
        &["--synthetic", "0"],
        "error: invalid value '0' for '--synthetic <SYNTHETIC>': 0 is not in 1..18446744073709551615",
    );
    job_refuses(
        &["--in-flight-records", "0"],
        "error: invalid value '0' for '--in-flight-records <IN_FLIGHT_RECORDS>': 0 is not in 1..18446744073709551615",
    );
    job_refuses(
        &["--reader-share", "0"],
        "error: invalid value '0' for '--reader-share <READER_SHARE>': 0 is not in 1..=100",
    );
    job_refuses(
        &["--reader-index-share", "101"],
        "error: invalid value '101' for '--reader-index-share <READER_INDEX_SHARE>': 101 is not in 0..=100",
    );
}

#[test]
fn j13_unknown_key_or_mode_refused() {
    job_refuses(
        &["--key", "foo"],
        "error: invalid value 'foo' for '--key <KEY>': invalid key `foo`: expected one of `src`, \
         `pair`, `5tuple`",
    );
    job_refuses(
        &["--mode", "x"],
        "error: invalid value 'x' for '--mode <MODE>'",
    );
}

#[test]
fn j14_two_input_kinds_refused() {
    job_refuses(
        &["--pcap", "a.pcap", "--csv", "b.csv"],
        "error: the argument '--pcap <PCAP>...' cannot be used with '--csv <CSV>...'",
    );
}

#[test]
fn j15_bad_flags_refused_with_exact_too() {
    job_says(
        &["--exact", "--fpr", "2"],
        "--fpr 2: invalid dedup configuration `fpr`: 2 is not in (0, 1)",
    );
}

#[test]
fn j16_workers_or_processes_zero_refused() {
    job_says(
        &["-w", "0"],
        "invalid -w `0`: expected a number of worker threads per process, at least 1",
    );
    job_says(
        &["--workers", "abc"],
        "invalid --workers `abc`: expected a number of worker threads per process, at least 1",
    );
    job_says(
        &["-n", "0"],
        "invalid -n `0`: expected a number of processes, at least 1",
    );
}

#[test]
fn j17_process_index_not_below_processes_refused() {
    job_says(
        &["-n", "2", "-p", "5"],
        "invalid -p `5`: expected a process index below -n 2 (0 to 1)",
    );
}

#[test]
fn j18_missing_hostfile_refused() {
    job_says(
        &["-n", "2", "-p", "0", "-h", "/nonexistent/hosts.txt"],
        "cannot read hostfile /nonexistent/hosts.txt: No such file or directory (os error 2)",
    );
}

#[test]
fn j19_missing_input_file_refused() {
    job_says(
        &["--pcap", "/nonexistent/capture.pcap"],
        "cannot open trace file /nonexistent/capture.pcap: No such file or directory (os error 2)",
    );
}

#[test]
fn j20_directory_without_inputs_refused() {
    let d = dir();
    write(&d, "capture.pcap", &capture(&[]));
    job_says(
        &["--csv", text(d.path())],
        &format!(
            "{}: no .csv file in this directory (--csv)",
            d.path().display()
        ),
    );
    let empty = dir();
    job_says(
        &["--pcap", text(empty.path())],
        &format!(
            "{}: no .pcap or .pcapng file in this directory (--pcap)",
            empty.path().display()
        ),
    );
}

#[test]
fn j21_flow_list_given_as_capture_refused() {
    let d = dir();
    let csv = write(&d, "flows.csv", HEADER.as_bytes());
    job_says(
        &["--pcap", text(&csv)],
        &format!(
            "{} is not a pcap or pcapng capture (it starts with 0x74696d65); use --csv for flow \
             lists",
            csv.display()
        ),
    );
}

#[test]
fn j22_malformed_record_refused_or_skipped() {
    let d = dir();
    let csv = write(
        &d,
        "flows.csv",
        format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,6\nnot,a,line\n2.0,10.0.0.1,10.0.0.2,1,2,6\n")
            .as_bytes(),
    );
    job_says(
        &["--csv", text(&csv)],
        &format!(
            "{}: line 3: expected 6 comma-separated fields (timestamp,src,dst,sport,dport,proto), \
             found 3",
            csv.display()
        ),
    );
    let r = report(&["--csv", text(&csv), "--skip-bad", "--json"]);
    assert_eq!(
        (r["bad_records"].as_u64(), r["records"].as_u64()),
        (Some(1), Some(2))
    );
}

#[test]
fn j23_truncated_capture_refused() {
    let d = dir();
    let cut = record(2, 0, &frame(|_| {}));
    let p = write(&d, "cut.pcap", &capture(&cut[..30]));
    job_says(
        &["--pcap", text(&p)],
        &format!(
            "{} is truncated: it ends inside the packet record starting at byte offset 94",
            p.display()
        ),
    );
}

#[test]
fn j24_input_without_ip_records_refused() {
    let d = dir();
    let csv = write(&d, "flows.csv", HEADER.as_bytes());
    job_says(
        &["--csv", text(&csv)],
        &format!("csv {}: no IP records", csv.display()),
    );
}

/// A one-record input and a queries file holding `queries`.
fn with_queries(queries: &[u8]) -> (TempDir, PathBuf, PathBuf) {
    let d = dir();
    let csv = write(
        &d,
        "flows.csv",
        format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,6\n").as_bytes(),
    );
    let q = write(&d, "queries.txt", queries);
    (d, csv, q)
}

#[test]
fn j25_queries_file_unreadable_refused() {
    let (d, csv, _) = with_queries(b"");
    job_says(
        &["--csv", text(&csv), "--queries", "/nonexistent/queries.txt"],
        "cannot read queries file /nonexistent/queries.txt: No such file or directory (os error 2)",
    );
    job_says(
        &["--csv", text(&csv), "--queries", text(d.path())],
        &format!(
            "cannot read queries file {}: Is a directory (os error 21)",
            d.path().display()
        ),
    );
}

#[test]
fn j26_query_line_malformed_refused() {
    for (line, reason) in [
        (&b"nokey\n"[..], "expected `key,start,end`, found `nokey`"),
        (b"10.0.0.1,x,3\n", "`x` is not a tick (a whole number)"),
        (
            b"bogus,1,3\n",
            "invalid key `bogus`: expected `src`, `src>dst` or `src:sport>dst:dport/proto`",
        ),
        (
            b"10.0.0.1,\xff,3\n",
            "not UTF-8 text: byte 0xff at column 10",
        ),
    ] {
        let (_d, csv, q) = with_queries(line);
        job_says(
            &["--csv", text(&csv), "--queries", text(&q)],
            &format!("{}:1: {reason}", q.display()),
        );
    }
}

#[test]
fn j27_query_range_start_after_end_refused() {
    let (_d, csv, q) = with_queries(b"\n10.0.0.1:1>10.0.0.2:2/6,5,3\n");
    job_says(
        &["--csv", text(&csv), "--queries", text(&q)],
        &format!(
            "{}:2: empty time range: start 5 is after end 3",
            q.display()
        ),
    );
}

#[test]
fn j28_output_into_missing_directory_refused() {
    let (_d, csv, _) = with_queries(b"");
    job_says(
        &["--csv", text(&csv), "--out", "/nonexistent/passed.csv"],
        "cannot write --out /nonexistent/passed.csv: directory /nonexistent does not exist",
    );
    job_says(
        &["--csv", text(&csv), "--plot", "/nonexistent/plot.svg"],
        "cannot write --plot /nonexistent/plot.svg: directory /nonexistent does not exist",
    );
}

#[test]
fn j29_late_records_counted_and_reported() {
    let d = dir();
    // the second record is 2 s behind the first, past the default lateness of 1 ms
    let csv = write(
        &d,
        "late.csv",
        format!("{HEADER}5.0,10.0.0.1,10.0.0.2,1,2,6\n3.0,10.0.0.3,10.0.0.2,1,2,6\n").as_bytes(),
    );
    let r = report(&["--csv", text(&csv), "--json"]);
    assert_eq!(
        (r["records"].as_u64(), r["late_records"].as_u64()),
        (Some(1), Some(1))
    );
    let out = run(&["--csv", text(&csv)]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("records 1  passed 1  dropped as duplicates 0  late 1  bad 0"),
        "{stdout}"
    );
    // with enough lateness it is placed at the latest tick instead
    let r = report(&["--csv", text(&csv), "--json", "--lateness", "3s"]);
    assert_eq!(
        (r["records"].as_u64(), r["late_records"].as_u64()),
        (Some(2), Some(0))
    );
}

#[test]
fn j30_records_past_index_horizon_counted_and_reported() {
    let d = dir();
    let csv = write(
        &d,
        "span.csv",
        format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,6\n3700.0,10.0.0.3,10.0.0.2,1,2,6\n").as_bytes(),
    );
    let r = report(&["--csv", text(&csv), "--index-partitions", "1", "--json"]);
    assert_eq!(r["records"].as_u64(), Some(2));
    assert_eq!(r["records_not_indexed"].as_u64(), Some(1));
    assert_eq!(
        r["not_indexed_by_reason"]["beyond_horizon"].as_u64(),
        Some(1)
    );
    let out = run(&["--csv", text(&csv), "--index-partitions", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("not indexed 1 ({\"beyond_horizon\":1})"),
        "{stdout}"
    );
}

/// Runs the job with `stdin` written to it through a pipe (a thread writes it, so a job that
/// stops early only closes the pipe).
fn run_piped(args: &[&str], stdin: Vec<u8>) -> Output {
    use std::io::Write;
    let (child, mut pipe) = piped::spawn(binary(), args);
    let writer = std::thread::spawn(move || {
        // a job that refuses its input closes the pipe: the write may fail
        let _ = pipe.write_all(&stdin);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// [`job_says`] for a job reading `stdin` from a pipe.
fn piped_job_says(args: &[&str], stdin: Vec<u8>, message: &str) {
    let out = run_piped(args, stdin);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr, format!("trace_dedup: {message}\n"), "{args:?}");
}

#[test]
fn j34_stream_among_several_inputs_refused() {
    let d = dir();
    let p = write(&d, "one.pcap", &capture(&record(1, 0, &frame(|_| {}))));
    let input = capture(&record(2, 0, &frame(|_| {})));
    piped_job_says(
        &["--pcap", text(&p), "-"],
        input.clone(),
        "standard input is read as it comes and can only be the one input; --pcap got 2 \
         (several inputs are opened ahead for their first timestamps): save it to a file",
    );
    // a FIFO is a stream too, as is a directory's
    let fifo = d.path().join("live.pcap");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        job_says(
            &["--pcap", text(d.path())],
            &format!(
                "{} is read as it comes and can only be the one input; --pcap got 2 (several \
                 inputs are opened ahead for their first timestamps): save it to a file",
                fifo.display()
            ),
        );
    }
}

#[test]
fn j35_stream_with_a_flag_that_reads_the_input_again_refused() {
    let input = capture(&record(1, 0, &frame(|_| {})));
    for flag in ["verify", "out"] {
        let out = std::env::temp_dir().join("never-written.csv");
        let args: Vec<&str> = match flag {
            "verify" => vec!["--pcap", "-", "--verify"],
            _ => vec!["--pcap", "-", "--out", text(&out)],
        };
        piped_job_says(
            &args,
            input.clone(),
            &format!(
                "--{flag} reads the input a second time after the job, and standard input is \
                 read as it comes: save it to a file first"
            ),
        );
    }
}

#[test]
fn j36_standard_input_that_is_not_a_capture_refused() {
    piped_job_says(
        &["--pcap", "-"],
        HEADER.as_bytes().to_vec(),
        "standard input is not a pcap or pcapng capture (it starts with 0x74696d65); use --csv \
         for flow lists",
    );
    piped_job_says(
        &["--pcap", "-"],
        Vec::new(),
        "standard input is truncated: it ends inside the file header starting at byte offset 0",
    );
    // a flow list on standard input is read as a file is
    let flows = format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,6\n2.0,10.0.0.1,10.0.0.2,1,2,6\n");
    let out = run_piped(&["--csv", "-", "--json"], flows.into_bytes());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (r["records"].as_u64(), r["input"].as_str()),
        (Some(2), Some("csv standard input"))
    );
}

#[test]
fn j37_out_pcap_of_an_input_other_than_one_capture_refused() {
    let d = dir();
    let one = write(&d, "one.pcap", &capture(&[]));
    let two = write(&d, "two.pcap", &capture(&[]));
    let flows = write(
        &d,
        "flows.csv",
        format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,6\n").as_bytes(),
    );
    let out = d.path().join("deduped.pcap");
    for (args, input) in [
        (vec!["--synthetic", "1000"], "synthetic 1000".to_string()),
        (
            vec!["--pcap", text(&one), text(&two)],
            "pcap 2 files".into(),
        ),
        (
            vec!["--csv", text(&flows)],
            format!("csv {}", flows.display()),
        ),
    ] {
        let mut args = args;
        args.extend(["--out-pcap", text(&out)]);
        job_says(
            &args,
            &format!(
                "--out-pcap writes the deduplicated capture of one capture, read by one worker; \
                 the input is {input}"
            ),
        );
        assert!(!out.exists(), "{args:?}: nothing written");
    }
}

#[test]
fn j38_out_pcap_with_checkpoints_or_into_a_missing_directory_refused() {
    let d = dir();
    let one = write(&d, "one.pcap", &capture(&[]));
    let out = d.path().join("deduped.pcap");
    let ckpt = d.path().join("ckpt");
    job_says(
        &[
            "--pcap",
            text(&one),
            "--out-pcap",
            "-",
            "--checkpoint-dir",
            text(&ckpt),
        ],
        "--out-pcap cannot go with --checkpoint-dir: standard output or a pipe cannot be cut \
         back to a checkpoint on a restart; write the capture to a file",
    );
    assert!(!ckpt.exists(), "nothing written");
    // a FIFO is a pipe too
    if Command::new("mkfifo")
        .arg(&out)
        .status()
        .is_ok_and(|s| s.success())
    {
        job_says(
            &[
                "--pcap",
                text(&one),
                "--out-pcap",
                text(&out),
                "--checkpoint-dir",
                text(&ckpt),
            ],
            "--out-pcap cannot go with --checkpoint-dir: standard output or a pipe cannot be \
             cut back to a checkpoint on a restart; write the capture to a file",
        );
    }
    job_says(
        &[
            "--pcap",
            text(&one),
            "--out-pcap",
            "/no/such/dir/deduped.pcap",
        ],
        "cannot write --out-pcap /no/such/dir/deduped.pcap: directory /no/such/dir does not exist",
    );
}

#[test]
fn j39_output_that_is_an_input_refused() {
    let d = dir();
    let bytes = capture(&record(2, 0, &frame(|_| {})));
    let one = write(&d, "one.pcap", &bytes);
    // the same file by another name
    let again = d.path().join(".").join("one.pcap");
    for (flag, path) in [
        ("out-pcap", text(&one)),
        ("out-pcap", text(&again)),
        ("out", text(&one)),
        ("plot", text(&again)),
    ] {
        job_says(
            &["--pcap", text(&one), &format!("--{flag}"), path],
            &format!(
                "--{flag} {path} is an input of the job: writing it would destroy what is being \
                 read; write elsewhere"
            ),
        );
        assert_eq!(
            std::fs::read(&one).unwrap(),
            bytes,
            "--{flag}: the input is intact"
        );
    }
}
