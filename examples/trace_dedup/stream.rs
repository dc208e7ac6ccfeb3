//! Inputs read once, as they come: standard input (`-`), a pipe or a FIFO (`tcpdump -w - |
//! trace_dedup --pcap -`). Such an input cannot be opened twice, so it must be the job's only
//! input (several are opened once ahead for their first timestamps) and no flag may read it again
//! after the job (`--verify`, `--out`).

use crate::error::JobError;
use chronobloom::trace::{CsvTrace, PcapTrace, TraceError};
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// The path that stands for standard input.
pub const STDIN: &str = "-";

/// How standard input is named in messages.
const STDIN_NAME: &str = "standard input";

/// Whether `path` is read once, as it comes: standard input, or anything that is not a regular
/// file (a pipe, a FIFO, a character device). A path that cannot be looked up is not: opening it
/// reports why.
pub fn is_stream(path: &Path) -> bool {
    path == Path::new(STDIN) || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// How `path` is named in messages.
pub fn name(path: &Path) -> String {
    if path == Path::new(STDIN) {
        STDIN_NAME.to_string()
    } else {
        path.display().to_string()
    }
}

/// Opens a capture: standard input for [`STDIN`], else the file.
pub fn open_pcap(path: &Path) -> Result<PcapTrace, TraceError> {
    if path == Path::new(STDIN) {
        PcapTrace::from_reader(STDIN_NAME, std::io::stdin())
    } else {
        PcapTrace::open(path)
    }
}

/// Opens a CSV flow list: standard input for [`STDIN`], else the file.
pub fn open_csv(path: &Path) -> Result<CsvTrace, TraceError> {
    if path == Path::new(STDIN) {
        CsvTrace::from_reader(STDIN_NAME, BufReader::new(std::io::stdin()))
    } else {
        CsvTrace::open(path)
    }
}

/// Refuses a stream among several inputs of `--{flag}`, and a stream input with `rereads`, the
/// first flag given that reads the input a second time.
pub fn check(
    files: &[PathBuf],
    flag: &'static str,
    rereads: Option<&'static str>,
) -> Result<(), JobError> {
    let Some(stream) = files.iter().find(|f| is_stream(f)) else {
        return Ok(());
    };
    if files.len() > 1 {
        return Err(JobError::StreamAmongSeveral {
            input: name(stream),
            flag,
            inputs: files.len(),
        });
    }
    match rereads {
        Some(again) => Err(JobError::StreamReadTwice {
            input: name(stream),
            flag: again,
        }),
        None => Ok(()),
    }
}
