//! shape-lint: a static checker for tensor shape errors and PyTorch training bugs.
//!
//! Data flows one way: `parse` (source text to AST) → `ir` (lowering to a small kernel
//! language) → `engine` (abstract interpretation with symbolic shapes, using the `torch`
//! library models and the `shape` decision procedures) → `diagnostics` (findings, ranked and
//! deduplicated). `rules` is the code registry. `python` holds the PyO3 bindings only.

pub mod diagnostics;
pub mod engine;
pub mod ir;
pub mod parse;
pub mod rules;
pub mod models;
pub mod shape;
pub mod value;

#[cfg(feature = "python")]
mod python;

/// mimalloc for every allocation of the core: the analysis allocates and frees small objects
/// at a high rate (states, branches, polynomials), on a fresh thread per analysis
/// (`guarded`), where glibc's allocator spent a quarter of the time. Built without its
/// `madvise(MADV_HUGEPAGE)` (feature `no_thp`): with transparent huge pages, each fresh
/// region is faulted in and zeroed 2 MB at a time, which was 7% of the CPU time on real
/// repositories (the kernel's `clear_page_erms`), for memory the analysis mostly never touches.
#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

/// mimalloc's plain calls where the alignment asked is at most 8, which every block of
/// mimalloc has (the `mimalloc` crate calls the aligned ones for every allocation: its checks
/// were 2% of a library corpus's run, for 15 million allocations); the aligned ones otherwise.
struct Mimalloc;

/// The alignment of every block mimalloc returns (its sizes are multiples of a word).
const PLAIN_ALIGN: usize = 8;

unsafe impl std::alloc::GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys::{mi_malloc, mi_malloc_aligned};
        // SAFETY: mimalloc's allocation functions, for a non-zero size (`GlobalAlloc`'s contract)
        (unsafe { if layout.align() <= PLAIN_ALIGN { mi_malloc(layout.size()) } else { mi_malloc_aligned(layout.size(), layout.align()) } }) as *mut u8
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys::{mi_zalloc, mi_zalloc_aligned};
        // SAFETY: as `alloc`
        (unsafe { if layout.align() <= PLAIN_ALIGN { mi_zalloc(layout.size()) } else { mi_zalloc_aligned(layout.size(), layout.align()) } }) as *mut u8
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from mimalloc (this allocator), aligned or not
        unsafe { libmimalloc_sys::mi_free(ptr as *mut std::ffi::c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys::{mi_realloc, mi_realloc_aligned};
        let p = ptr as *mut std::ffi::c_void;
        // SAFETY: `ptr` came from this allocator with `layout`'s alignment
        (unsafe { if layout.align() <= PLAIN_ALIGN { mi_realloc(p, new_size) } else { mi_realloc_aligned(p, new_size, layout.align()) } }) as *mut u8
    }
}

use std::panic::{AssertUnwindSafe, catch_unwind};

pub use diagnostics::{Edit, Finding, Fix, Related, SpanShapes, TensorView, Undecided};

/// Analysis settings that change what the core does (selection of codes is the front end's job).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Report `SHP9xx` "may fail" diagnostics too.
    pub may_fail: bool,
    /// Past this many live paths the entry is abandoned (paths are joined from half of it).
    pub max_paths: usize,
    /// The work budget of the whole file, in interpreter steps: past it, the entry running is
    /// abandoned and the rest not started (each named by the `SHP002` notice). It counts work,
    /// so the same file is cut at the same place on every machine.
    pub max_steps: u64,
    /// The wall-clock safety net for the whole file, in milliseconds: far above any normal
    /// file's time, for hostile input. When it fires, the `SHP002` notice says so.
    pub timeout_ms: u64,
    /// Merge paths that reach the same program state (switch off only to measure it).
    pub prune: bool,
    /// Keep the undecided checks that would be reported if violated, with their SMT-LIB
    /// queries (`check_source_undecided` sets it).
    pub export_undecided: bool,
    /// The SHP902 run: `argparse` options with an int default become symbols tagged as free
    /// parameters (`shape::Param`), their default one legal value. Its findings are not
    /// reported (a failure for every value fails with the defaults too); its undecided checks
    /// are the may-fail candidates (`python/shape_lint/may_fail.py`).
    pub free_params: bool,
    /// The concrete run of an SHP902 counterexample: free parameters bound to these values by
    /// their user names (`--size`, `heads`) instead of their defaults (an option, a constructor
    /// parameter with an int default) or a symbol (a constructor parameter of a class the file
    /// does not build). Empty in every other run.
    pub param_values: Vec<(String, i128)>,
    /// Reuse summaries of side-effect-free calls (switch off only to measure it).
    pub memo: bool,
    /// Where the checked file's project imports are looked up (`engine::project`): set by
    /// `check_source` from the file's path when it names a file on disk; `None` resolves no
    /// project module (every import of one is Unknown).
    pub project: Option<engine::project::ProjectPaths>,
    /// Keep, for each site of the checked file where a precondition is checked, which
    /// verdicts its checks got (`Stats::check_sites`; the decision statistics of
    /// `bench/decisions.py`). Off by default: it costs a map insert per check.
    pub check_sites: bool,
    /// `argparse` switches (`store_true`, `store_false`) are questions each run answers: both
    /// values, with a condition on each path (`when --cuda is given`). Off: their default, the
    /// run without arguments (the summary, which torch's hooks compare with that run).
    pub switches: bool,
    /// Analyse each of the project's scripts that import the checked file once per process
    /// for every file it loads (`engine::scripts`), rather than once per checked file (switch
    /// off only to compare the two).
    pub share_scripts: bool,
    /// Keep the shared script results in the project's `.shape_lint_cache` too, for other
    /// processes and later runs (`engine::script_cache`), keyed with this salt (the front end's
    /// cache key of the core's build); `None`: in this process only.
    pub script_cache: Option<String>,
}

impl Settings {
    /// Whether the core produces `rule`'s findings: the default rules always (the front end
    /// selects among them), the opt-in `SHP9xx` rules with `may_fail`.
    pub fn is_enabled(&self, rule: &rules::Rule) -> bool {
        rule.default_enabled || (self.may_fail && rule.family == rules::Family::MayFail)
    }

    /// The value `param_values` binds the free parameter `name` to, if any.
    pub fn param_value(&self, name: &str) -> Option<i128> {
        self.param_values.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings { may_fail: false, max_paths: 64, max_steps: 1_000_000, timeout_ms: 30_000, prune: true, export_undecided: false, free_params: false, param_values: Vec::new(), memo: true, project: None, check_sites: false, switches: true, share_scripts: true, script_cache: None }
    }
}

/// Analyse one file. Never panics: an internal failure becomes an `SHP001` finding at line 1.
/// A file with syntax errors yields no findings (flake8's E999 and the CLI report those).
pub fn check_source(source: &str, path: &str, settings: &Settings) -> Vec<Finding> {
    let settings = &with_project(settings, path);
    guarded(|| {
        let findings = check_source_inner(source, path, settings);
        verify_fixes(source, findings, |fixed| check_source_inner(fixed, path, settings))
    })
    .unwrap_or_else(|reason| vec![internal_error(&reason)])
}

/// Keep each finding's suggested fix only when the file with that fix applied analyses (by
/// `analyse`) without that finding and without any finding the original did not have (same
/// code and row): a fix that only moves the error elsewhere is dropped. A kept fix is named
/// in the message: `...: last dim 120 != 80; use nn.Linear(120, 84)`.
fn verify_fixes(source: &str, mut findings: Vec<Finding>, analyse: impl Fn(&str) -> Vec<Finding>) -> Vec<Finding> {
    let keys: Vec<(&'static str, usize)> = findings.iter().map(|f| (f.rule.code, f.row)).collect();
    for i in 0..findings.len() {
        let Some(fix) = findings[i].fix.take() else { continue };
        let mut fixed = source.to_owned();
        let mut edits = fix.edits.clone();
        edits.sort_by_key(|e| std::cmp::Reverse(e.start));
        for e in &edits {
            fixed.replace_range(e.start..e.end, &e.content);
        }
        let mut rest: Vec<(&'static str, usize)> = keys.clone();
        rest.remove(i);
        let after = analyse(&fixed);
        let clean = after.iter().all(|f| match rest.iter().position(|k| *k == (f.rule.code, f.row)) {
            Some(j) => {
                rest.remove(j);
                true
            }
            None => false,
        });
        if clean {
            findings[i].message = format!("{}; {}", findings[i].message, fix.message);
            findings[i].fix = Some(fix);
        }
    }
    findings
}

/// Like [`check_source`], and also the checks the core could not decide that would be
/// reported if they failed on every execution of their path, each with its SMT-LIB query for
/// the Z3 bridge. Sites already reported are not among them. An internal failure gives the
/// `SHP001` finding and no undecided checks.
pub fn check_source_undecided(source: &str, path: &str, settings: &Settings) -> (Vec<Finding>, Vec<Undecided>) {
    let (findings, undecided, _) = check_source_parsed(source, path, settings);
    (findings, undecided)
}

/// A syntax error: `(message, row, col, end_row, end_col)`, rows and code-point columns 1-based.
pub type SyntaxError = (String, usize, usize, usize, usize);

/// [`check_source_undecided`], and the parser's syntax errors (as [`syntax_errors`] gives them)
/// from the same parse: the CLI reports them for a file that does not parse (whose findings
/// and undecided checks are empty) without parsing every file a second time.
pub fn check_source_parsed(source: &str, path: &str, settings: &Settings) -> (Vec<Finding>, Vec<Undecided>, Vec<SyntaxError>) {
    let settings = Settings { export_undecided: true, ..with_project(settings, path) };
    guarded(|| {
        let parsed = parse::parse(source);
        let module = ir::lower::lower_module(&parsed);
        let out = if parsed.has_syntax_errors() {
            (Vec::new(), Vec::new(), syntax_error_list(&parsed))
        } else {
            let (findings, undecided, _) = engine::analyze_full(&module, &parsed, &settings);
            let plain = Settings { export_undecided: false, ..settings.clone() };
            (verify_fixes(source, findings, |fixed| check_source_inner(fixed, path, &plain)), undecided, Vec::new())
        };
        if module.max_depth > ir::lower::MAX_DEPTH {
            std::mem::forget(parsed);
        }
        out
    })
    .unwrap_or_else(|reason| (vec![internal_error(&reason)], Vec::new(), Vec::new()))
}

/// [`check_source_undecided`] with the analysis statistics (`engine::Stats`), among them how
/// the core's precondition checks were decided (`Stats::checks`, and with
/// `Settings::check_sites` each site's verdicts). An internal failure gives the `SHP001` finding
/// and default statistics.
pub fn check_source_stats(source: &str, path: &str, settings: &Settings) -> (Vec<Finding>, Vec<Undecided>, engine::Stats) {
    let settings = Settings { export_undecided: true, ..with_project(settings, path) };
    guarded(|| {
        let parsed = parse::parse(source);
        let module = ir::lower::lower_module(&parsed);
        let out = if parsed.has_syntax_errors() { Default::default() } else { engine::analyze_full(&module, &parsed, &settings) };
        if module.max_depth > ir::lower::MAX_DEPTH {
            std::mem::forget(parsed);
        }
        out
    })
    .unwrap_or_else(|reason| (vec![internal_error(&reason)], Vec::new(), Default::default()))
}

/// The Unknown-cause report of one file (`engine::coverage`), with the findings of the same
/// run. `Err` with the reason when the analysis failed; an empty report for a file with syntax
/// errors.
pub fn coverage_source(source: &str, path: &str, settings: &Settings) -> Result<(Vec<Finding>, engine::coverage::CoverageReport), String> {
    let settings = with_project(settings, path);
    guarded(|| {
        let parsed = parse::parse(source);
        let module = ir::lower::lower_module(&parsed);
        let out = if parsed.has_syntax_errors() { Default::default() } else { engine::coverage_of(&module, &parsed, &settings) };
        if module.max_depth > ir::lower::MAX_DEPTH {
            std::mem::forget(parsed);
        }
        out
    })
}

/// [`check_source_undecided`] and the tensors each span of the file evaluated to, from one
/// analysis run (the language server's diagnostics, hover and inlay hints after an edit).
/// Empty shapes for a file with syntax errors; an internal failure gives the `SHP001` finding.
pub fn analyze_source(source: &str, path: &str, settings: &Settings) -> (Vec<Finding>, Vec<Undecided>, Vec<SpanShapes>) {
    let settings = Settings { export_undecided: true, ..with_project(settings, path) };
    guarded(|| {
        let parsed = parse::parse(source);
        let module = ir::lower::lower_module(&parsed);
        let out = if parsed.has_syntax_errors() {
            (Vec::new(), Vec::new(), Vec::new())
        } else {
            let (findings, undecided, shapes) = engine::analyze_with_shapes(&module, &parsed, &settings);
            // the fixes as `check_source_undecided` verifies them (each re-analysis: findings only)
            let plain = Settings { export_undecided: false, ..settings.clone() };
            (verify_fixes(source, findings, |fixed| check_source_inner(fixed, path, &plain)), undecided, shapes)
        };
        if module.max_depth > ir::lower::MAX_DEPTH {
            std::mem::forget(parsed);
        }
        out
    })
    .unwrap_or_else(|reason| (vec![internal_error(&reason)], Vec::new(), Vec::new()))
}

/// The `--show-shapes` debug view: `(line, "name: [shape] dtype")` for each line that assigns
/// tensors. Empty for files with syntax errors or when the analysis fails.
pub fn show_shapes(source: &str, path: &str, settings: &Settings) -> Vec<(usize, String)> {
    let settings = &with_project(settings, path);
    guarded(|| {
        let parsed = parse::parse(source);
        let module = ir::lower::lower_module(&parsed);
        let out = if parsed.has_syntax_errors() { Vec::new() } else { engine::shapes_by_line(&module, &parsed, settings) };
        if module.max_depth > ir::lower::MAX_DEPTH {
            std::mem::forget(parsed);
        }
        out
    })
    .unwrap_or_default()
}

/// The parser's syntax errors of a file: `(message, row, col, end_row, end_col)` each, rows
/// and code-point columns 1-based; empty when it parses (`check_source` gives no findings for
/// a file with syntax errors: the CLI reports these instead, flake8 its own E999).
pub fn syntax_errors(source: &str) -> Vec<SyntaxError> {
    guarded(|| {
        let parsed = parse::parse(source);
        let out = syntax_error_list(&parsed);
        let module = ir::lower::lower_module(&parsed);
        if module.max_depth > ir::lower::MAX_DEPTH {
            std::mem::forget(parsed);
        }
        out
    })
    .unwrap_or_default()
}

/// `shape-lint summary`: the model calls of the script (or of `model`'s `forward`), each with
/// the leaf layers it runs (`engine::summary`). Empty for a file with syntax errors or when the
/// analysis fails.
pub fn model_summary(source: &str, path: &str, settings: &Settings, model: Option<&str>, input_size: Option<&[Vec<i128>]>) -> Vec<engine::summary::ModelCall> {
    let settings = &with_project(settings, path);
    guarded(|| {
        let parsed = parse::parse(source);
        let module = ir::lower::lower_module(&parsed);
        let out = if parsed.has_syntax_errors() { Vec::new() } else { engine::model_summary(&module, &parsed, settings, model, input_size) };
        if module.max_depth > ir::lower::MAX_DEPTH {
            std::mem::forget(parsed);
        }
        out
    })
    .unwrap_or_default()
}

fn syntax_error_list(parsed: &parse::ParsedFile<'_>) -> Vec<SyntaxError> {
    parsed
        .syntax_errors()
        .into_iter()
        .map(|(m, s, e)| {
            let ((row, col), (end_row, end_col)) = (parsed.location(s), parsed.location(e));
            (m, row, col, end_row, end_col)
        })
        .collect()
}

/// Run `f` on the calling thread's analysis thread, which has a large stack: deeply nested
/// input cannot overflow the caller's (flake8's main thread) stack, and a panic stays on that
/// thread and comes back as its message.
///
/// The analysis thread is made on the first call of each calling thread and kept
/// (`analysis_thread`): a thread made and joined per file, its stack mapped, faulted in and
/// unmapped each time and its allocator's heap made afresh, was 13% of the CPU time of the
/// library corpus (599 files) and a third of a small file's. Each job starts from the state a
/// new thread has: `engine::reset_thread_state` resets every thread-local that holds the
/// state of an analysis (a structure test lists them all).
fn guarded<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    let mut slot: Option<std::thread::Result<T>> = None;
    {
        let out = &mut slot;
        let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            *out = Some(catch_unwind(AssertUnwindSafe(|| {
                engine::reset_thread_state();
                f()
            })))
        });
        // SAFETY: the job borrows `slot` and what `f` borrows. It runs on the analysis thread,
        // and this block ends only after that thread said the job is done, or after the
        // channel to it broke: the thread is gone, and the job with it (sent back in the error,
        // or dropped unrun by the thread's end), so nothing borrowed is used after this block.
        let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
        ANALYSIS_THREAD.with(|t| {
            let mut t = t.borrow_mut();
            if t.is_none() {
                *t = analysis_thread();
            }
            let sent = t.as_ref().map(|a| a.jobs.send(job).is_ok() && a.done.recv().is_ok());
            if sent != Some(true) {
                // (no thread could be started, or it is gone: made again at the next call)
                *t = None;
            }
        });
    }
    let result = slot.unwrap_or_else(|| Err(Box::new("could not start the analysis thread")));
    result.map_err(|payload| {
        if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "panic".to_string()
        }
    })
}

/// A job for the analysis thread (`guarded`).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The analysis thread of a calling thread: where its jobs go, and its word that one is done.
struct AnalysisThread {
    jobs: std::sync::mpsc::Sender<Job>,
    done: std::sync::mpsc::Receiver<()>,
}

thread_local! {
    /// The calling thread's analysis thread (it ends when the caller ends: its channel closes).
    static ANALYSIS_THREAD: std::cell::RefCell<Option<AnalysisThread>> = const { std::cell::RefCell::new(None) };
}

/// A new analysis thread, running jobs one at a time until its caller is gone.
fn analysis_thread() -> Option<AnalysisThread> {
    let (jobs, inbox) = std::sync::mpsc::channel::<Job>();
    let (finished, done) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("shape-lint".into())
        .stack_size(STACK_SIZE)
        .spawn(move || {
            while let Ok(job) = inbox.recv() {
                job();
                if finished.send(()).is_err() {
                    break;
                }
            }
        })
        .ok()?;
    Some(AnalysisThread { jobs, done })
}

/// Stack of the analysis thread (reserved, not committed, until used).
pub(crate) const STACK_SIZE: usize = 512 * 1024 * 1024;

/// What `check_source` returns when the analysis panics with `reason`: the same guard and
/// `SHP001` finding. No program makes the core panic; the snapshot tests need the rendering.
#[doc(hidden)]
pub fn internal_error_for_panic(reason: &str) -> Vec<Finding> {
    guarded(|| -> Vec<Finding> { std::panic::panic_any(reason.to_string()) }).unwrap_or_else(|reason| vec![internal_error(&reason)])
}

fn internal_error(reason: &str) -> Finding {
    let short: String = reason.lines().next().unwrap_or("").chars().take(120).collect();
    Finding {
        rule: &rules::meta::internal_error::RULE,
        message: rules::violation::Violation::message(&rules::meta::internal_error::InternalError::Panic { reason: short }),
        row: 1,
        col: 1,
        end_row: 1,
        end_col: 1,
        trace: Vec::new(),
        origins: Vec::new(),
        condition: None,
        related: Vec::new(),
        fix: None,
    }
}

fn check_source_inner(source: &str, path: &str, settings: &Settings) -> Vec<Finding> {
    let parsed = parse::parse(source);
    let module = ir::lower::lower_module(&parsed);
    let findings = if parsed.has_syntax_errors() {
        Vec::new()
    } else {
        engine::analyze(&module, &parsed, path, settings)
    };
    if module.max_depth > ir::lower::MAX_DEPTH {
        // Dropping a pathologically deep AST recurses as deep as it is nested: leak it instead
        // (bounded by the file's size).
        std::mem::forget(parsed);
    }
    findings
}

/// `settings` with the project search path of the file at `path` (unless one is set).
fn with_project(settings: &Settings, path: &str) -> Settings {
    let mut s = settings.clone();
    if s.project.is_none() {
        s.project = engine::project::ProjectPaths::for_file(path);
    }
    s
}

/// The package version (from Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
