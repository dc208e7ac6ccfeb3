//! What the job writes for a reader: the passed records as CSV (`--out`) and the summary.

use crate::error::JobError;
use crate::source;
use chronobloom::trace::TraceError;
use std::collections::HashSet;
use std::io::{BufWriter, Write};

/// Writes the records of `records` whose position is in `passed` as
/// `timestamp,src,dst,sport,dport,proto` (decimal seconds), as they are read: the input is not
/// held.
pub fn write_out(
    path: &std::path::Path,
    records: impl IntoIterator<Item = Result<source::Rec, TraceError>>,
    passed: &HashSet<u64>,
) -> Result<(), JobError> {
    let failed = |e: std::io::Error| JobError::Output {
        flag: "out",
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut w = BufWriter::new(std::fs::File::create(path).map_err(failed)?);
    writeln!(w, "timestamp,src,dst,sport,dport,proto").map_err(failed)?;
    for r in records {
        let r = r?;
        if !passed.contains(&r.seq) {
            continue;
        }
        let f = &r.flow;
        let (s, ns) = (f.ts_nanos / 1_000_000_000, f.ts_nanos % 1_000_000_000);
        writeln!(
            w,
            "{s}.{ns:09},{},{},{},{},{}",
            f.src, f.dst, f.sport, f.dport, f.proto
        )
        .map_err(failed)?;
    }
    w.flush().map_err(failed)
}

/// The summary printed without `--json`.
pub fn summary(r: &serde_json::Value, show_digest: bool, w: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        w,
        "chronobloom trace_dedup — {}",
        r["input"].as_str().unwrap_or("")
    )?;
    writeln!(
        w,
        "  records {}  passed {}  dropped as duplicates {}  late {}  bad {}",
        r["records"], r["unique_out"], r["duplicates_dropped"], r["late_records"], r["bad_records"]
    )?;
    interrupted_note(r, w)?;
    if r["records_not_indexed"].as_u64().unwrap_or(0) > 0 {
        writeln!(
            w,
            "  not indexed {} ({}): past the index's --index-partitions hours, or held back",
            r["records_not_indexed"], r["not_indexed_by_reason"]
        )?;
    }
    writeln!(
        w,
        "  window {} ({} ticks, slack {}{}), target fpr {}, mode {}, {} workers",
        r["window"].as_str().unwrap_or(""),
        r["window_ticks"],
        r["slack_ticks"],
        if r["exact_edge"].as_bool().unwrap_or(false) {
            ", exact edge"
        } else {
            ""
        },
        r["fpr"],
        r["mode"].as_str().unwrap_or(""),
        r["workers"]
    )?;
    if !r["missed_duplicates"].is_null() {
        writeln!(
            w,
            "  verify: missed duplicates {}, false drops {} (rate {:.5} of {} unique)",
            r["missed_duplicates"],
            r["false_drops"],
            r["false_drop_rate"].as_f64().unwrap_or(0.0),
            r["exact_unique"]
        )?;
        writeln!(w,
            "  verify: {} records in the slack ({} dropped); peak {} keys in a window, {:.1} dedup bits per key",
            r["slack_records"],
            r["slack_drops"],
            r["peak_window_keys"],
            r["dedup_bits_per_window_key"].as_f64().unwrap_or(0.0)
        )?;
    }
    writeln!(w,
        "  {:.0} records/s ({:.3} s whole run), {:.1} bytes exchanged per record, dedup {} bits, index {} bits",
        r["records_per_sec_total"].as_f64().unwrap_or(0.0),
        r["seconds_total"].as_f64().unwrap_or(0.0),
        r["bytes_exchanged_per_record"].as_f64().unwrap_or(0.0),
        r["dedup_bits"],
        r["index_bits"]
    )?;
    if show_digest {
        writeln!(w, "  digest {}", r["digest"].as_str().unwrap_or("-"))?;
    }
    for a in r["answers"].as_array().into_iter().flatten() {
        writeln!(
            w,
            "  query {} [{}, {}]: {}{}",
            a["key"].as_str().unwrap_or(""),
            a["start"],
            a["end"],
            if a["present"].as_bool() == Some(true) {
                "present"
            } else {
                "absent"
            },
            match a["exact"].as_bool() {
                Some(true) => " (exact: present)",
                Some(false) => " (exact: absent)",
                None => "",
            }
        )?;
    }
    Ok(())
}

/// A line saying the run was interrupted, when it was: the counts are of the records read before.
pub fn interrupted_note(r: &serde_json::Value, w: &mut dyn Write) -> std::io::Result<()> {
    if r["interrupted"].as_bool() == Some(true) {
        writeln!(
            w,
            "  interrupted (Ctrl-C): the counts are of the records read before it"
        )?;
    }
    Ok(())
}
