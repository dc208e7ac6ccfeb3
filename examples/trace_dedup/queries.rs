//! The query file of `--queries`: `key,start,end` lines.

use crate::error::JobError;
use chronobloom::core::temporal::TimeRange;
use chronobloom::trace::FlowKey;
use std::io::BufRead;

/// `key,start,end` lines (ticks, inclusive); blank lines are skipped.
pub fn read_queries(path: &std::path::Path) -> Result<Vec<(FlowKey, TimeRange)>, JobError> {
    let unreadable = |source| JobError::QueriesFile {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).split(b'\n').enumerate() {
        let at = |reason: String| JobError::QueryLine {
            path: path.to_path_buf(),
            line: i + 1,
            reason,
        };
        let bytes = line.map_err(unreadable)?;
        let line = std::str::from_utf8(&bytes).map_err(|e| {
            let column = e.valid_up_to();
            at(format!(
                "not UTF-8 text: byte {:#04x} at column {}",
                bytes[column],
                column + 1
            ))
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let mut parts = line.rsplitn(3, ',');
        let (Some(e), Some(s), Some(k)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(at(format!(
                "expected `key,start,end`, found `{}`",
                line.trim()
            )));
        };
        let key: FlowKey = k
            .trim()
            .parse()
            .map_err(|e: chronobloom::trace::TraceError| at(e.to_string()))?;
        let tick = |v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| at(format!("`{}` is not a tick (a whole number)", v.trim())))
        };
        let range = TimeRange::new(tick(s)?, tick(e)?).map_err(|e| at(e.to_string()))?;
        out.push((key, range));
    }
    Ok(out)
}
