//! Mutation fuzzing (issue 17) of the capture and CSV readers, frame decoding, and the
//! deserialization of every filter a user can save and load again, on the stable toolchain: a
//! seeded mutator (`fuzz/mutate.rs`, `fuzz/formats.rs`) over valid seeds (`fuzz/seeds.rs`, the
//! filters' samples), targets that must return for every input without panicking, hanging or
//! allocating out of proportion (`fuzz/targets.rs`), and a loop that saves what fails
//! (`fuzz/harness.rs`).
//!
//! - `smoke`: every target for a fixed number of cases from a fixed seed (every CI run).
//! - `seeds_are_accepted`: each target accepts its own seeds, so mutation starts from valid input.
//! - `regressions`: every input under `tests/fuzz-regressions/<target>/` runs clean.
//! - `long` (ignored; `scripts/fuzz.sh` runs it in release): `FUZZ_TARGET` (names, comma
//!   separated; all by default), `FUZZ_ITERS` (cases per target), `FUZZ_SECS` (time per target),
//!   `FUZZ_SEED` (random by default, printed), `FUZZ_JOBS` (targets fuzzed at once).
//!
//! Failing inputs are written to `target/fuzz-failures/<target>/seed-<seed>-iter-<n>.bin`; once
//! fixed, copy them to `tests/fuzz-regressions/<target>/` under a name saying what they caught.

/// The harness, its mutators and targets, in `tests/fuzz/`.
mod fuzz {
    pub mod alloc;
    pub mod checkpoints;
    pub mod filters;
    pub mod formats;
    pub mod harness;
    pub mod mutate;
    pub mod rng;
    pub mod seeds;
    pub mod targets;
    pub mod traces;
}

use fuzz::harness::{fuzz, replay, Config, Outcome, Report, Target};
use fuzz::{alloc, targets};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// Cases per target in the smoke run: a few seconds for all targets in a debug build.
const SMOKE_CASES: u64 = 3_000;
/// The smoke run's seed.
const SMOKE_SEED: u64 = 17;

/// Fuzzes `targets` on `jobs` threads; returns the reports in target order.
fn run_all(targets: &[Target], config: &Config, jobs: usize) -> Vec<Report> {
    let next = Mutex::new(0usize);
    let reports = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, targets.len().max(1)) {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().expect("queue");
                    *n += 1;
                    *n - 1
                };
                let Some(target) = targets.get(i) else { break };
                let report = fuzz(target, config);
                println!("{report}");
                reports.lock().expect("reports").push((i, report));
            });
        }
    });
    let mut reports = reports.into_inner().expect("reports");
    reports.sort_by_key(|(i, _)| *i);
    reports.into_iter().map(|(_, r)| r).collect()
}

/// Fails with every finding of `reports`.
fn assert_clean(reports: &[Report]) {
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| !r.findings.is_empty())
        .map(|r| r.to_string())
        .collect();
    assert!(failed.is_empty(), "fuzz findings:\n{}", failed.join("\n"));
}

fn parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

#[test]
fn smoke() {
    let reports = run_all(
        &targets::all(),
        &Config::new(SMOKE_SEED, SMOKE_CASES),
        parallelism(),
    );
    let (cases, secs) = reports.iter().fold((0, 0.0), |(c, s), r| {
        (c + r.iters, s + r.elapsed.as_secs_f64())
    });
    println!(
        "smoke: {} targets, {cases} cases, {secs:.1} s",
        reports.len()
    );
    assert_clean(&reports);
}

#[test]
fn seeds_are_accepted() {
    for target in targets::all() {
        // A target may have none (mutation then grows inputs from nothing).
        for (i, seed) in (target.seeds)().iter().enumerate() {
            let outcome = replay(&target, seed, Config::new(0, 0).max_alloc);
            assert_eq!(
                outcome,
                Ok(Outcome::Accepted),
                "{} does not accept its seed {i}",
                target.name
            );
        }
    }
}

/// `tests/fuzz-regressions/`: a directory of saved inputs per target.
fn regression_root() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fuzz-regressions"
    ))
}

#[test]
fn regressions() {
    let Ok(dirs) = std::fs::read_dir(regression_root()) else {
        return;
    };
    let mut failures = Vec::new();
    let mut count = 0;
    for dir in dirs.flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        let Some(target) = targets::by_name(&name) else {
            failures.push(format!(
                "tests/fuzz-regressions/{name}: no target of that name"
            ));
            continue;
        };
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .expect("a regression directory reads")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        files.sort();
        for path in files {
            let input = std::fs::read(&path).expect("a regression input reads");
            count += 1;
            if let Err(problem) = replay(&target, &input, Config::new(0, 0).max_alloc) {
                failures.push(format!("{}: {problem}", path.display()));
            }
        }
    }
    println!("replayed {count} regression inputs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An environment variable, parsed; `None` when unset or empty.
fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    let value = std::env::var(name).ok().filter(|v| !v.trim().is_empty())?;
    match value.parse() {
        Ok(v) => Some(v),
        Err(_) => panic!("{name}={value} does not parse"),
    }
}

/// Runs one saved input (`FUZZ_TARGET`, `FUZZ_INPUT`) outside the harness, so that a panic
/// shows its backtrace (`RUST_BACKTRACE=1`) and a debugger can stop in it.
#[test]
#[ignore = "debugging aid: FUZZ_TARGET=name FUZZ_INPUT=file"]
fn replay_input() {
    let name: String = env("FUZZ_TARGET").expect("FUZZ_TARGET names the target");
    let path: String = env("FUZZ_INPUT").expect("FUZZ_INPUT names the input file");
    let target = targets::by_name(&name).expect("a known target");
    let input = std::fs::read(&path).expect("the input reads");
    let base = alloc::start();
    let outcome = (target.run)(&input);
    println!(
        "{name} on {path}: {outcome:?}; peak heap {} bytes, largest refused request {} bytes",
        alloc::peak_above(base),
        alloc::refused()
    );
}

/// Prints the target names, one per line, for `scripts/fuzz.sh`.
#[test]
#[ignore = "lists the targets for scripts/fuzz.sh"]
fn list_targets() {
    for target in targets::all() {
        println!("fuzz-target: {}", target.name);
    }
}

#[test]
#[ignore = "long fuzzing run: scripts/fuzz.sh"]
fn long() {
    let seed = env("FUZZ_SEED").unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.map_or(1, |d| d.as_nanos() as u64)
    });
    let mut config = Config::new(seed, env("FUZZ_ITERS").unwrap_or(u64::MAX));
    config.time_limit = env::<f64>("FUZZ_SECS").map(Duration::from_secs_f64);
    if config.iters == u64::MAX && config.time_limit.is_none() {
        config.iters = 100_000;
    }
    let all = targets::all();
    let chosen: Vec<Target> = match std::env::var("FUZZ_TARGET") {
        Ok(names) if !names.trim().is_empty() => names
            .split(',')
            .map(|n| {
                let n = n.trim();
                targets::by_name(n).unwrap_or_else(|| {
                    let known: Vec<_> = all.iter().map(|t| t.name).collect();
                    panic!("no fuzz target `{n}`; targets: {}", known.join(", "))
                })
            })
            .collect(),
        _ => all,
    };
    println!(
        "fuzzing {} targets from seed {seed}: {} cases{} each",
        chosen.len(),
        config.iters,
        config
            .time_limit
            .map_or(String::new(), |t| format!(" or {t:?}"))
    );
    let reports = run_all(&chosen, &config, env("FUZZ_JOBS").unwrap_or(1));
    let (cases, secs) = reports.iter().fold((0, 0.0), |(c, s), r| {
        (c + r.iters, s + r.elapsed.as_secs_f64())
    });
    println!("total: {cases} cases in {secs:.1} s of fuzzing");
    assert_clean(&reports);
}
