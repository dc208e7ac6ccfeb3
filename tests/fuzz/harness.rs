//! The fuzz loop: mutate, run the target under a panic catcher, an allocation meter and a
//! watchdog, keep inputs the target accepted as further seeds, and save what fails.

use super::alloc;
use super::mutate::{mutate, Edit};
use super::rng::{name_hash, Rng};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

/// What a target made of an input that did not break it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Parsed into something (records, a filter): worth mutating further.
    Accepted,
    /// Refused with a typed error.
    Rejected,
}

impl Outcome {
    /// [`Outcome::Accepted`] for `Ok`, [`Outcome::Rejected`] for `Err`: a decoder's result.
    pub fn of<T, E>(result: Result<T, E>) -> Outcome {
        match result {
            Ok(_) => Outcome::Accepted,
            Err(_) => Outcome::Rejected,
        }
    }
}

/// A fuzz target: a name (also its directory of regression inputs), valid inputs to start
/// from, an optional format-aware edit, and the code under test, which must return for every
/// input without panicking, hanging or allocating out of proportion.
#[derive(Clone, Copy)]
pub struct Target {
    /// Name, as `FUZZ_TARGET` and `tests/fuzz-regressions/<name>/` use it.
    pub name: &'static str,
    /// Valid inputs (may be empty: mutation then starts from an empty input).
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Format-aware mutation, mixed with the format-blind ones.
    pub edit: Option<Edit>,
    /// The code under test.
    pub run: fn(&[u8]) -> Outcome,
}

impl Target {
    /// A target without format-aware edits.
    pub const fn new(
        name: &'static str,
        seeds: fn() -> Vec<Vec<u8>>,
        run: fn(&[u8]) -> Outcome,
    ) -> Self {
        Target {
            name,
            seeds,
            edit: None,
            run,
        }
    }

    /// This target with a format-aware edit.
    pub const fn with_edit(self, edit: Edit) -> Self {
        Target {
            edit: Some(edit),
            ..self
        }
    }
}

/// How long and how hard to fuzz.
#[derive(Debug, Clone)]
pub struct Config {
    /// Seed of the run; with the target's name it fixes every input.
    pub seed: u64,
    /// Cases to run.
    pub iters: u64,
    /// Stop earlier after this long, if set.
    pub time_limit: Option<Duration>,
    /// Stop after this many findings.
    pub max_findings: usize,
    /// Heap bytes a case may hold at once beyond what was live before it.
    pub max_alloc: u64,
    /// A case running longer than this is a hang: the input is saved and the process aborts.
    pub timeout: Duration,
    /// Largest input generated.
    pub max_len: usize,
}

impl Config {
    /// `iters` cases from seed `seed`, with the default limits.
    pub fn new(seed: u64, iters: u64) -> Self {
        Config {
            seed,
            iters,
            time_limit: None,
            max_findings: 10,
            max_alloc: 64 << 20,
            timeout: Duration::from_secs(20),
            max_len: 1 << 18,
        }
    }
}

/// One failing input.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The case number.
    pub iter: u64,
    /// What went wrong (panic message and location, or the bytes allocated).
    pub problem: String,
    /// Where the input was written.
    pub saved: PathBuf,
    /// Later inputs that failed at the same place.
    pub repeats: u64,
}

/// A long message (a whole filter's `Debug` form) cut to its start and its end.
fn shorten(text: &str) -> String {
    if text.len() <= 400 {
        return text.to_string();
    }
    let head = (0..=300)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let tail = (text.len() - 100..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    format!("{} … {}", &text[..head], &text[tail..])
}

/// Where a problem happened: a panic's source location, or the kind of allocation problem.
fn site(problem: &str) -> &str {
    match problem.rsplit_once(" at ") {
        Some((_, at)) if problem.starts_with("panic") => at,
        _ => problem.split(' ').next().unwrap_or(problem),
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target.
    pub target: &'static str,
    /// The run's seed.
    pub seed: u64,
    /// Cases run.
    pub iters: u64,
    /// Cases the target accepted.
    pub accepted: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Failing inputs.
    pub findings: Vec<Finding>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        write!(
            f,
            "{:<24} seed {:<20} {:>9} cases {:>8.1} s {:>9.0}/s {:>5.1}% accepted, {} findings",
            self.target,
            self.seed,
            self.iters,
            secs,
            self.iters as f64 / secs.max(1e-9),
            100.0 * self.accepted as f64 / self.iters.max(1) as f64,
            self.findings.len()
        )?;
        for x in &self.findings {
            let problem = shorten(&x.problem);
            write!(
                f,
                "\n    iteration {} ({} more alike): {problem}\n      input: {}\n      rerun: FUZZ_TARGET={} FUZZ_SEED={} FUZZ_ITERS={} scripts/fuzz.sh",
                x.iter,
                x.repeats,
                x.saved.display(),
                self.target,
                self.seed,
                x.iter + 1
            )?;
        }
        Ok(())
    }
}

/// Fuzzes `target` as `config` says.
pub fn fuzz(target: &Target, config: &Config) -> Report {
    let seed = config.seed ^ name_hash(target.name);
    let mut rng = Rng::new(seed);
    let mut corpus = (target.seeds)();
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let fixed = corpus.len();
    let case = Arc::new(Case::new(target.name, config.seed));
    let watchdog = Watchdog::start(case.clone(), config.timeout);
    let started = Instant::now();
    let mut report = Report {
        target: target.name,
        seed: config.seed,
        iters: 0,
        accepted: 0,
        elapsed: Duration::ZERO,
        findings: Vec::new(),
    };
    for iter in 0..config.iters {
        if config.time_limit.is_some_and(|t| started.elapsed() > t) {
            break;
        }
        let input = mutate(&mut rng, &corpus, target.edit, config.max_len);
        report.iters += 1;
        match run_case(target, &case, iter, &input, config.max_alloc) {
            Ok(Outcome::Accepted) => {
                report.accepted += 1;
                // Accepted inputs reach deeper; keep up to 256 of them, replacing at random.
                if corpus.len() < fixed + 256 {
                    corpus.push(input);
                } else {
                    let slot = fixed + rng.below(256);
                    corpus[slot] = input;
                }
            }
            Ok(Outcome::Rejected) => {}
            Err(problem) => {
                // One finding per place: the same panic site or allocation again is counted only.
                let here = site(&problem);
                let same = report
                    .findings
                    .iter_mut()
                    .find(|f| site(&f.problem) == here);
                if let Some(known) = same {
                    known.repeats += 1;
                    continue;
                }
                let saved = save(target.name, config.seed, iter, &input);
                report.findings.push(Finding {
                    iter,
                    problem,
                    saved,
                    repeats: 0,
                });
                if report.findings.len() >= config.max_findings {
                    break;
                }
            }
        }
    }
    watchdog.stop();
    report.elapsed = started.elapsed();
    report
}

/// Runs one input outside a fuzz loop (regression inputs, seeds): the same checks, and the
/// watchdog's timeout.
pub fn replay(target: &Target, input: &[u8], max_alloc: u64) -> Result<Outcome, String> {
    let case = Arc::new(Case::new(target.name, 0));
    let watchdog = Watchdog::start(case.clone(), Config::new(0, 0).timeout);
    let result = run_case(target, &case, 0, input, max_alloc);
    watchdog.stop();
    result
}

/// Where failing inputs go: `target/fuzz-failures/<target>/`.
pub fn failure_dir(target: &str) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent()
        .unwrap_or(tmp)
        .join("fuzz-failures")
        .join(target)
}

fn save(target: &str, seed: u64, iter: u64, input: &[u8]) -> PathBuf {
    let dir = failure_dir(target);
    let path = dir.join(format!("seed-{seed}-iter-{iter}.bin"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input)) {
        eprintln!("fuzz: cannot save {}: {e}", path.display());
    }
    path
}

// ------------------------------------------------------------------------- one case

/// The case in progress, shared with the watchdog and the allocation refusal hook.
struct Case {
    target: &'static str,
    seed: u64,
    iter: AtomicU64,
    since: Mutex<Option<Instant>>,
    input: Mutex<Vec<u8>>,
}

impl Case {
    fn new(target: &'static str, seed: u64) -> Self {
        Case {
            target,
            seed,
            iter: AtomicU64::new(0),
            since: Mutex::new(None),
            input: Mutex::new(Vec::new()),
        }
    }

    /// Saves the input and says why the process may be about to abort.
    fn fatal(&self, why: &str) {
        let iter = self.iter.load(Ordering::SeqCst);
        let input = self.input.lock().map(|i| i.clone()).unwrap_or_default();
        let saved = save(self.target, self.seed, iter, &input);
        // Straight to the process's stderr: the test harness's capture dies with the process.
        let _ = writeln!(
            std::io::stderr(),
            "fuzz: target {} seed {} iteration {iter}: {why}; input saved to {}",
            self.target,
            self.seed,
            saved.display()
        );
    }
}

thread_local! {
    /// The case this thread runs, for the allocation refusal hook.
    static CURRENT: RefCell<Option<Arc<Case>>> = const { RefCell::new(None) };
    /// Set while a target runs: its panics are recorded here instead of printed.
    static IN_CASE: Cell<bool> = const { Cell::new(false) };
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_hooks() {
    static HOOKS: Once = Once::new();
    HOOKS.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CASE.with(Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(non-string panic)".into());
                PANIC.with(|p| *p.borrow_mut() = Some(format!("panic: {msg}{at}")));
            } else {
                previous(info);
            }
        }));
        alloc::set_refusal_hook(|size| {
            let case = CURRENT
                .try_with(|c| c.try_borrow().ok().and_then(|c| c.clone()))
                .ok()
                .flatten();
            if let Some(case) = case {
                case.fatal(&format!(
                    "requested {size} bytes at once, refused (the process aborts unless the caller handles it)"
                ));
            }
        });
    });
}

fn run_case(
    target: &Target,
    case: &Arc<Case>,
    iter: u64,
    input: &[u8],
    max_alloc: u64,
) -> Result<Outcome, String> {
    install_hooks();
    case.iter.store(iter, Ordering::SeqCst);
    if let Ok(mut held) = case.input.lock() {
        held.clear();
        held.extend_from_slice(input);
    }
    CURRENT.with(|c| *c.borrow_mut() = Some(case.clone()));
    set_since(case, Some(Instant::now()));
    IN_CASE.with(|c| c.set(true));
    let base = alloc::start();
    let result = catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    let peak = alloc::peak_above(base);
    let refused = alloc::refused();
    IN_CASE.with(|c| c.set(false));
    set_since(case, None);
    CURRENT.with(|c| *c.borrow_mut() = None);
    match result {
        Err(_) => Err(PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| "panic".into())),
        Ok(_) if refused > 0 => Err(format!(
            "requested {refused} heap bytes at once for an input of {} bytes (refused)",
            input.len()
        )),
        Ok(_) if peak > max_alloc => Err(format!(
            "held {peak} heap bytes at once for an input of {} bytes (limit {max_alloc})",
            input.len()
        )),
        Ok(outcome) => Ok(outcome),
    }
}

fn set_since(case: &Case, since: Option<Instant>) {
    if let Ok(mut s) = case.since.lock() {
        *s = since;
    }
}

// ------------------------------------------------------------------------- watchdog

/// A thread that aborts the process, saving the input, when a case runs past the timeout: a
/// hang cannot be caught any other way.
struct Watchdog {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(case: Arc<Case>, timeout: Duration) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
                let since = case.since.lock().ok().and_then(|s| *s);
                if since.is_some_and(|s| s.elapsed() > timeout) {
                    case.fatal(&format!("no result after {timeout:?} (a hang)"));
                    std::process::abort();
                }
            }
        });
        Watchdog {
            done,
            thread: Some(thread),
        }
    }

    fn stop(mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
