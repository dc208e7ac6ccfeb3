//! The main job's one error type: every message names the flag or file at fault and its value,
//! and ends the run with exit code 2 (`docs/ERRORS.md` lists them).

use chronobloom::trace::TraceError;
use std::path::PathBuf;
use std::time::Duration;
use thiserror::Error;

/// Everything that stops `trace_dedup`.
#[derive(Debug, Error)]
pub enum JobError {
    /// A duration flag shorter than one tick of `--unit` (so zero ticks long).
    #[error(
        "--{flag} {value:?} is shorter than one tick (--unit {unit:?}); give at least {unit:?}"
    )]
    BelowOneTick {
        /// The flag, without dashes.
        flag: &'static str,
        /// Its value.
        value: Duration,
        /// The tick length.
        unit: Duration,
    },
    /// An epoch longer than 2^32 ticks (a routed record carries its tick as a 32-bit offset in
    /// its epoch).
    #[error("--epoch {value:?} is {ticks} ticks of --unit {unit:?}; at most 4294967296")]
    EpochTooLong {
        /// Its value.
        value: Duration,
        /// Its ticks.
        ticks: u64,
        /// The tick length.
        unit: Duration,
    },
    /// A flag the dedup or index configuration refused.
    #[error("{flag} {value}: {source}")]
    Config {
        /// The flag (`--fpr`, ...).
        flag: &'static str,
        /// Its value as given.
        value: String,
        /// Why the configuration refused it.
        #[source]
        source: chronobloom::operators::Error,
    },
    /// A configuration error no single flag explains.
    #[error(transparent)]
    Operators(#[from] chronobloom::operators::Error),
    /// A structure the job sizes from its flags could not be built.
    #[error(transparent)]
    Core(#[from] chronobloom::core::Error),
    /// A value of timely's `-w`, `-n`, `-p` or `-h` outside its domain.
    #[error("invalid {flag} `{value}`: expected {expected}")]
    Timely {
        /// The flag as given (`-w`, `--workers`, ...).
        flag: String,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A hostfile (`-h`) that cannot be read.
    #[error("cannot read hostfile {}: {source}", path.display())]
    Hostfile {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A directory given to `--pcap` or `--csv` that holds no file of that kind.
    #[error("{}: no {kinds} file in this directory (--{flag})", path.display())]
    EmptyDirectory {
        /// The directory.
        path: PathBuf,
        /// `pcap` or `csv`.
        flag: &'static str,
        /// The extensions looked for.
        kinds: &'static str,
    },
    /// A directory given to `--pcap` or `--csv` that cannot be listed.
    #[error("cannot list directory {}: {source}", path.display())]
    ListDirectory {
        /// The directory.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The queries file cannot be opened or read.
    #[error("cannot read queries file {}: {source}", path.display())]
    QueriesFile {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// One line of the queries file is not `key,start,end`.
    #[error("{}:{line}: {reason}", path.display())]
    QueryLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// An output file (`--out`, `--plot`) that cannot be written.
    #[error("cannot write --{flag} {}: {reason}", path.display())]
    Output {
        /// `out`, `out-pcap` or `plot`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The report could not be written (standard output closed).
    #[error("cannot write the report: {0}")]
    Report(std::io::Error),
    /// An output file that is one of the inputs: writing it would destroy what is read.
    #[error(
        "--{flag} {} is an input of the job: writing it would destroy what is being read; \
         write elsewhere",
        path.display()
    )]
    OutputIsInput {
        /// `out`, `out-pcap` or `plot`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// `--out-pcap` with an input other than one capture.
    #[error(
        "--out-pcap writes the deduplicated capture of one capture, read by one worker; the \
         input is {input}"
    )]
    OutPcapInput {
        /// The input's name.
        input: String,
    },
    /// `--out-pcap` with a flag it cannot go with.
    #[error("--out-pcap cannot go with --{flag}: {why}")]
    OutPcapWith {
        /// The other flag.
        flag: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// Standard input, a pipe or a FIFO among several inputs, which are opened once ahead for
    /// their first timestamps (a stream can be read only once).
    #[error(
        "{input} is read as it comes and can only be the one input; --{flag} got {inputs} \
         (several inputs are opened ahead for their first timestamps): save it to a file"
    )]
    StreamAmongSeveral {
        /// The stream's name.
        input: String,
        /// `pcap` or `csv`.
        flag: &'static str,
        /// How many inputs were given.
        inputs: usize,
    },
    /// A stream input with a flag that reads the input again after the job.
    #[error(
        "--{flag} reads the input a second time after the job, and {input} is read as it \
         comes: save it to a file first"
    )]
    StreamReadTwice {
        /// The stream's name.
        input: String,
        /// `verify` or `out`.
        flag: &'static str,
    },
    /// The input held no IP record.
    #[error("{input}: no IP records")]
    NoRecords {
        /// The input's name.
        input: String,
    },
    /// Reading the input failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A checkpoint directory or file that cannot be used.
    #[error(transparent)]
    Checkpoint(#[from] chronobloom::operators::checkpoint::CheckpointError),
    /// Timely could not start the workers, or a worker's reader failed (its message).
    #[error("{0}")]
    Dataflow(String),
}
