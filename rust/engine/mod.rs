//! The abstract interpreter and its entry points.
//!
//! Rooms:
//! - `interp/`: the abstract interpreter, which executes IR statements over a set of paths
//!   (its doc lists its own rooms);
//! - `check.rs`: `Interp::check`, through which every model's precondition goes;
//! - `ctx.rs`: the interpreter as the models see it (`models::ctx::ModelCtx`);
//! - `events.rs`: delivering engine events to the enabled rules' subscribers;
//! - `modules.rs`: the module table (embedded source roots, lowered once);
//! - `project.rs`: project imports (the user's other files: where they are, loading them);
//! - `encoding.rs`: those files' bytes as text, decoded as Python decodes source;
//! - `memo.rs`: call summaries of side-effect-free user calls;
//! - `entry.rs`: the entry points (the script, every `nn.Module` subclass's `forward`) and
//!   the per-file budgets;
//! - `coverage.rs`: the Unknown-cause report (what the analysis followed, what made values
//!   Unknown);
//! - `shapes.rs`: the tensors each span evaluated to (hover, inlay hints) and the places a
//!   trace names (related information);
//! - `scripts.rs`: the project's scripts that import the checked file, each analysed once per
//!   process for every file it loads (`script_cache.rs`: and kept across processes);
//! - `report.rs`: the report rule: which recorded outcomes become findings, and which
//!   undecided checks are exported for the Z3 bridge.
//!
//! This file is the engine's public API.

mod annotations;
pub mod check;
pub mod contract;
pub mod coverage;
pub mod ctx;
pub mod encoding;
pub mod events;
pub mod interp;
pub mod memo;
pub mod modules;
pub mod project;
mod entry;
mod report;
pub mod script_cache;
pub mod scripts;
pub mod shapes;
pub mod summary;

use std::collections::BTreeMap;

use entry::run;

use crate::{Finding, Settings, Undecided, ir, parse::ParsedFile};

/// Debug statistics of one analysis.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub entries: usize,
    pub abandoned: usize,
    pub steps: u64,
    pub max_paths: usize,
    /// Calls answered from a summary (`memo`), calls looked up without one, summaries stored.
    pub memo_hits: u64,
    pub memo_misses: u64,
    pub memo_stored: u64,
    /// Items of unrolled loops skipped at a fixpoint (`interp::loops`).
    pub loop_skips: u64,
    /// How the precondition checks (`Interp::check`, one per path and site) were decided.
    pub checks: CheckCounts,
    /// With `Settings::check_sites`: each checked site of the checked file, as (row, column,
    /// its checks' counts), in source order.
    pub check_sites: Vec<(usize, usize, CheckCounts)>,
    /// The project's scripts importing the checked file that this analysis ran as their own
    /// analysis (`scripts`): the others were answered by a result of this process or its cache.
    pub script_runs: usize,
}

/// Precondition checks by verdict: the core decided them (`holds`: torch does not raise,
/// `violated`: it does), or left them `undecided`; `exported` of these went to the Z3 bridge
/// as a query (`Settings::export_undecided`), and `witnessed` did not, as values of the symbols
/// showed that the check passes on some execution of its path (`shape::smt::Query::witness`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CheckCounts {
    pub holds: u64,
    pub violated: u64,
    pub undecided: u64,
    pub exported: u64,
    pub witnessed: u64,
}

/// What `Interp::check` counts (`CheckCounts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckVerdict {
    Holds,
    Violated,
    Undecided,
    Exported,
    Witnessed,
}

impl CheckCounts {
    pub fn add(&mut self, v: CheckVerdict) {
        match v {
            CheckVerdict::Holds => self.holds += 1,
            CheckVerdict::Violated => self.violated += 1,
            CheckVerdict::Undecided => self.undecided += 1,
            CheckVerdict::Exported => self.exported += 1,
            CheckVerdict::Witnessed => self.witnessed += 1,
        }
    }
}

pub fn analyze(m: &ir::Module, f: &ParsedFile, _path: &str, s: &Settings) -> Vec<Finding> {
    analyze_with_stats(m, f, s).0
}

/// The `--show-shapes` view: for each line, the shapes of the tensors it assigns (over all
/// paths and entry points; several shapes for a name mean several paths).
pub fn shapes_by_line(m: &ir::Module, f: &ParsedFile, s: &Settings) -> Vec<(usize, String)> {
    let mut log = BTreeMap::new();
    let _ = run(m, f, s, Some(&mut log));
    log.into_iter().map(|(line, texts)| (line, texts.into_iter().collect::<Vec<_>>().join(" | "))).collect()
}

/// Findings, the undecided checks (as `analyze_full`) and the tensors each span of the
/// checked file evaluated to, from one analysis: what a language server shows after an edit.
pub fn analyze_with_shapes(m: &ir::Module, f: &ParsedFile, s: &Settings) -> (Vec<Finding>, Vec<Undecided>, Vec<crate::SpanShapes>) {
    let mut log = shapes::SpanLog::default();
    let (findings, undecided, _) = entry::run_spans(m, f, s, &mut log);
    (findings, undecided, shapes::spans_of(f, log))
}

/// Findings and the Unknown-cause report (`coverage`) of one analysis.
pub fn coverage_of(m: &ir::Module, f: &ParsedFile, s: &Settings) -> (Vec<Finding>, coverage::CoverageReport) {
    entry::run_coverage(m, f, s)
}

/// `shape-lint summary`: the model calls of the script's run, or (`model`) of the `forward`
/// of the module class of that name, with inputs of unknown shapes.
pub fn model_summary(m: &ir::Module, f: &ParsedFile, s: &Settings, model: Option<&str>, input_size: Option<&[Vec<i128>]>) -> Vec<summary::ModelCall> {
    entry::summarise(m, f, s, model, input_size)
}

pub fn analyze_with_stats(m: &ir::Module, f: &ParsedFile, s: &Settings) -> (Vec<Finding>, Stats) {
    let (findings, _, stats) = run(m, f, s, None);
    (findings, stats)
}

/// Findings and statistics, with `extra` event subscribers delivered the engine's events
/// next to the enabled rules' own (how tests observe the event stream).
pub fn analyze_observed(m: &ir::Module, f: &ParsedFile, s: &Settings, extra: &[&'static dyn crate::rules::events::Subscriber]) -> (Vec<Finding>, Stats) {
    let (findings, _, stats) = entry::run_observed(m, f, s, None, None, extra);
    (findings, stats)
}

/// Findings, the undecided checks exported for the Z3 bridge (with
/// `Settings::export_undecided`; not at reported sites), and statistics.
pub fn analyze_full(m: &ir::Module, f: &ParsedFile, s: &Settings) -> (Vec<Finding>, Vec<Undecided>, Stats) {
    run(m, f, s, None)
}

/// Reset every thread-local that holds the state of an analysis, as a new thread has it: each
/// job of an analysis thread starts with this (`guarded` in `lib.rs`). The thread-locals left
/// are caches of what does not change (the lowered zoo, small constants, spare vectors, names);
/// `tests/structure.rs` lists each thread-local as reset here or kept.
pub fn reset_thread_state() {
    entry::reset_instances();
    project::reset_probes();
    crate::models::torch::device::reset_thread();
    crate::models::torch::optim::begin_program();
    crate::models::torch::optim::reset_made();
    crate::rules::training::begin_program();
    crate::value::join::reset_lineages();
    crate::value::reset_values_tracking();
    crate::value::reset_layout_blind();
    crate::value::reads::reset_reads();
    crate::value::walks::reset_clean();
    crate::value::taken::reset_taken();
}
