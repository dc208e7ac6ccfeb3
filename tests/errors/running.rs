//! Rows R of `docs/ERRORS.md`: inside a running dataflow.

use super::*;

/// Runs the timed dedup and index on records `(tick, key)` sent at `stamp`, and returns the late
/// records each counted and the records the index refused past its horizon.
fn timed_run(stamp: u64, records: Vec<(u64, u64)>) -> (u64, u64, u64) {
    let dedup = dedup().build().unwrap();
    let index = index().partitions(1).build().unwrap();
    let out = Arc::new(Mutex::new((0, 0, 0)));
    let o = Arc::clone(&out);
    timely::execute_directly(move |worker| {
        use timely::dataflow::operators::{Input, Inspect, Probe};
        let probe = timely::dataflow::ProbeHandle::new();
        let (o1, o2) = (Arc::clone(&o), Arc::clone(&o));
        let (mut r_in, mut q_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<(u64, u64)>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let d = records.clone().dedup_timed_by(&dedup, |k: &u64| *k);
            let i = records.temporal_index_timed(queries, &index);
            d.stats
                .inspect(move |s| o1.lock().unwrap().0 += s.late)
                .probe_with(&probe);
            i.stats
                .inspect(move |s| {
                    let mut o = o2.lock().unwrap();
                    o.1 += s.local.late;
                    o.2 += s
                        .local
                        .rejected
                        .get(&RejectReason::BeyondHorizon)
                        .copied()
                        .unwrap_or(0);
                })
                .probe_with(&probe);
            (r_in, q_in)
        });
        r_in.advance_to(stamp);
        q_in.advance_to(stamp);
        for r in &records {
            r_in.send(*r);
        }
        drop((r_in, q_in));
        worker.step_while(|| !probe.done());
    });
    let counts = *out.lock().unwrap();
    counts
}

#[test]
fn r01_late_records_in_dataflow_counted() {
    // stamped at 20, one record's own tick is 5: it is placed at 20 and counted by both
    let (dedup_late, index_late, _) = timed_run(20, vec![(5, 1), (25, 2)]);
    assert_eq!((dedup_late, index_late), (1, 1));
}

#[test]
fn r02_records_past_index_horizon_in_dataflow_counted() {
    // one partition of 100 ticks: tick 150 is refused by the index, counted by reason
    let (_, _, beyond) = timed_run(0, vec![(5, 1), (150, 2)]);
    assert_eq!(beyond, 1);
}

#[test]
fn r03_negative_differences_reported() {
    use chronobloom::operators::differential_dataflow::input::InputSession;
    use chronobloom::operators::IndexCollection;
    use timely::dataflow::operators::capture::{Capture, Extract};
    let cfg = index().build().unwrap();
    let unsupported = timely::execute_directly(move |worker| {
        let mut input = InputSession::<u64, u64, isize>::new();
        let out = worker.dataflow(|scope| {
            let indexed = input.to_collection(scope).index_collection(&cfg);
            indexed.unsupported.inner.capture()
        });
        input.update_at(7, 3, 1);
        input.update_at(7, 20, -1);
        out
    });
    let got: Vec<_> = unsupported
        .extract()
        .into_iter()
        .flat_map(|(_, d)| d)
        .collect();
    assert_eq!(got, vec![(7, 20, -1)]);
}

#[test]
fn r04_ctrl_c_ends_the_input_and_the_records_read_are_reported() {
    use std::io::Write;
    let packets = |from: u32, n: u32| -> Vec<u8> {
        (from..from + n)
            .flat_map(|s| inputs::record(s, 0, &inputs::frame(|_| {})))
            .collect()
    };
    let (child, mut pipe) = piped::spawn(job_flags::binary(), &["--pcap", "-", "--json"]);
    // a capture of four records (its first and three more)
    pipe.write_all(&inputs::capture(&packets(2, 3))).unwrap();
    pipe.flush().unwrap();
    // the job reads the four records and waits for more
    std::thread::sleep(std::time::Duration::from_secs(2));
    piped::interrupt(child.id());
    std::thread::sleep(std::time::Duration::from_millis(200));
    // records after the interrupt end the input at the first of them
    let _ = pipe.write_all(&packets(5, 2));
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr,
        "trace_dedup: interrupted: finishing the records read so far (Ctrl-C again to stop now)\n"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (r["records"].as_u64(), r["interrupted"].as_bool()),
        (Some(4), Some(true))
    );
}
