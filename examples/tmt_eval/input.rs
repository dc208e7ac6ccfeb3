//! Reading `DATA.csv` (`timestamp,element`) and `QUERIES.csv` (`element,start,end`).

use chronobloom::core::temporal::TimeRange;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};

/// A problem with an input file, naming the file and the line.
#[derive(Debug)]
pub enum InputError {
    /// The file could not be opened or read.
    Io {
        path: String,
        source: std::io::Error,
    },
    /// A line that does not parse.
    Malformed {
        path: String,
        line: u64,
        reason: String,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Io { path, source } => write!(f, "{path}: {source}"),
            InputError::Malformed { path, line, reason } => write!(f, "{path}:{line}: {reason}"),
        }
    }
}

impl std::error::Error for InputError {}

/// Lines read, with the number of malformed lines skipped under `--skip-bad`.
pub struct Parsed<T> {
    pub rows: Vec<T>,
    pub skipped: u64,
}

/// Parses every non-blank line of `path` with `parse`; a malformed line is an error unless
/// `skip_bad`, in which case it is counted.
pub fn read_lines<T>(
    path: &str,
    skip_bad: bool,
    mut parse: impl FnMut(&str) -> Result<T, String>,
) -> Result<Parsed<T>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_string(),
        source,
    };
    let reader = BufReader::new(File::open(path).map_err(io)?);
    let mut out = Parsed {
        rows: Vec::new(),
        skipped: 0,
    };
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(io)?;
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        match parse(line) {
            Ok(row) => out.rows.push(row),
            Err(_) if skip_bad => out.skipped += 1,
            Err(reason) => {
                return Err(InputError::Malformed {
                    path: path.to_string(),
                    line: i as u64 + 1,
                    reason,
                })
            }
        }
    }
    Ok(out)
}

fn tick(field: &str, what: &str) -> Result<u64, String> {
    field
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("{what} `{field}` is not a non-negative integer"))
}

/// `timestamp,element`.
pub fn data_line(line: &str) -> Result<(u64, String), String> {
    let (t, element) = line.split_once(',').ok_or("expected `timestamp,element`")?;
    if element.is_empty() || element.contains(',') {
        return Err("the element must be non-empty and contain no comma".into());
    }
    Ok((tick(t, "timestamp")?, element.to_string()))
}

/// `element,start,end` (inclusive, start <= end).
pub fn query_line(line: &str) -> Result<(String, TimeRange), String> {
    let mut it = line.split(',');
    let (Some(element), Some(s), Some(e), None) = (it.next(), it.next(), it.next(), it.next())
    else {
        return Err("expected `element,start,end`".into());
    };
    if element.is_empty() {
        return Err("the element is empty".into());
    }
    let range = TimeRange::new(tick(s, "start")?, tick(e, "end")?).map_err(|e| e.to_string())?;
    Ok((element.to_string(), range))
}
