//! The entry points, so that per-file linting needs no configuration:
//! 1. the module's top level run as a script (`__name__ == "__main__"`); a script of its
//!    project that defines no class takes this run from its shared run (`scripts`);
//! 2. every `nn.Module` subclass's `forward`, with the instance built by the script when there
//!    is one, else constructed from its defaults; a missing argument is a fresh positive symbol
//!    where `__init__` proves it an int (`proven_int`), else Unknown; `forward`'s tensor inputs
//!    have unknown shapes refined by their first use.
//!
//! The budgets count work (steps per file, live paths per entry; `Interp::abandon`): an entry
//! that exhausts one reports nothing, and the file gets an analysis-incomplete notice (`SHP002`)
//! naming it and the entries not started.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::interp::{Budget, Ctx, Interp, Vals};
use super::{Stats, report};
use crate::ir::Span;
use crate::value::*;

use crate::{Finding, Settings, Undecided, ir, parse::ParsedFile};

type ShapeLog = BTreeMap<usize, std::collections::BTreeSet<String>>;

pub(super) fn run(m: &ir::Module, f: &ParsedFile, s: &Settings, log: Option<&mut ShapeLog>) -> (Vec<Finding>, Vec<Undecided>, Stats) {
    run_observed(m, f, s, log, None, &[])
}

/// `run`, also recording the tensors each span of the checked file evaluated to into `spans`.
pub(super) fn run_spans(m: &ir::Module, f: &ParsedFile, s: &Settings, spans: &mut super::shapes::SpanLog) -> (Vec<Finding>, Vec<Undecided>, Stats) {
    run_observed(m, f, s, None, Some(spans), &[])
}

/// `run`, with `extra` event subscribers next to the enabled rules' own (tests observe the
/// event stream this way).
pub(super) fn run_observed<'a>(m: &'a ir::Module, f: &'a ParsedFile<'a>, s: &'a Settings, log: Option<&mut ShapeLog>, spans: Option<&mut super::shapes::SpanLog>, extra: &[&'static dyn crate::rules::events::Subscriber]) -> (Vec<Finding>, Vec<Undecided>, Stats) {
    let mut interp = Interp::new(f, s);
    interp.main_module = Some(m);
    if !extra.is_empty() {
        interp.subscribers = crate::engine::events::Subscribers::enabled(s, extra);
    }
    let logging = log.is_some();
    if logging {
        interp.shape_log = Some(BTreeMap::new());
    }
    let spanning = spans.is_some();
    if spanning {
        interp.span_log = Some(Default::default());
    }
    let mut undecided = Vec::new();
    let (findings, mut stats) = run_entries(&mut interp, m, s, &mut undecided, !extra.is_empty());
    stats.memo_hits = interp.memo.hits;
    stats.memo_misses = interp.memo.misses;
    stats.memo_stored = interp.memo.stored;
    stats.loop_skips = interp.loop_items_skipped;
    stats.checks = interp.checks;
    if let Some(sites) = &interp.check_sites {
        stats.check_sites = sites.iter().map(|(&start, &counts)| {
            let (row, col) = interp.file.location(start);
            (row, col, counts)
        }).collect();
    }
    if let (Some(log), Some(got)) = (log, interp.shape_log.take()) {
        *log = got;
    }
    if let (Some(spans), Some(got)) = (spans, interp.span_log.take()) {
        *spans = got;
    }
    report::undecided_to_export(&mut undecided, if s.free_params { &[] } else { &findings });
    (findings, undecided, stats)
}

/// `run`, with the Unknown-cause recorder on (`engine::coverage`).
pub(super) fn run_coverage(m: &ir::Module, f: &ParsedFile, s: &Settings) -> (Vec<Finding>, super::coverage::CoverageReport) {
    let mut interp = Interp::new(f, s);
    interp.main_module = Some(m);
    interp.coverage = Some(Default::default());
    let mut undecided = Vec::new();
    let (findings, stats) = run_entries(&mut interp, m, s, &mut undecided, true);
    let report = interp.coverage.take().unwrap_or_default().report(f, stats.abandoned > 0);
    (findings, report)
}

fn run_entries(interp: &mut Interp, m: &ir::Module, s: &Settings, undecided: &mut Vec<Undecided>, observed: bool) -> (Vec<Finding>, Stats) {
    let mut stats = Stats::default();
    let mut findings: Vec<Finding> = Vec::new();
    // the forward entries' findings go after those of the runs with the program's own values
    // (the script, the scripts that import it): at a site both report, the concrete one is
    // kept (`one_per_site`), which is the error torch raises for the program as run
    let mut forward_findings: Vec<Finding> = Vec::new();

    crate::models::torch::device::set_defaults(interp.file.source);
    crate::models::torch::optim::begin_program();
    crate::rules::training::begin_program();
    // 1. the script
    let mut st = State::new();
    let module_scope = st.alloc(Obj::Scope { vars: Vars::new(), parent: None });
    interp.begin_sys_modules(&mut st);
    let ctx = Ctx {
        scope: module_scope,
        module_scope,
        class_body: None,
        method_class: None,
        self_val: None,
        globals: Rc::new(Vec::new()),
    };
    let mut cuts = Cuts::default();
    // no class, no `forward` entry (step 2): nothing needs the script's final state
    let classes = defines_class(&m.body);
    // so a script of its project that defines none takes its run from the shared run that the
    // files it imports take (`scripts`), made once per process for all of them
    let mut shared = None;
    if !classes && s.project.as_ref().is_some_and(crate::engine::project::is_script) {
        shared = super::scripts::Shared::new(interp, s, observed);
        if let Some(taken) = shared.as_mut().and_then(|sh| sh.take_own(interp)) {
            stats.entries += usize::from(taken.entry);
            stats.script_runs += taken.ran;
            interp.steps += taken.steps;
            if let Some(spent) = taken.spent {
                stats.abandoned += 1;
                cuts.cut.push(("the module's top level".into(), spent, taken.spent_at));
            }
            findings.extend(taken.findings);
            undecided.extend(taken.undecided);
            return finish(interp, s, undecided, observed, Gathered { findings, forward_findings, stats, cuts, shared });
        }
    }
    interp.called_modules = Some(BTreeMap::new());
    let finals = interp.block(&m.body, st.clone(), &ctx);
    stats.entries += 1;
    let script_abandoned = interp.abandoned;
    cuts.after(interp, "the module's top level");
    // the modules the script called: kept for the forward entries only when the script ran to
    // its end, on the same heap as the final state's classes
    let called = interp.called_modules.take().filter(|_| !script_abandoned).unwrap_or_default();
    if script_abandoned {
        stats.abandoned += 1;
    } else {
        if !finals.is_empty() {
            never_stepped(interp, &m.body, |_| true);
        }
        report::settle(interp);
        findings.extend(report::findings_from(&interp, &interp.outcomes));
        undecided.extend(report::undecided_from(&interp, &interp.outcomes, &interp.undecided));
    }
    interp.undecided.clear();
    let script_final: Option<State> = finals.into_iter().map(|(s, _)| s).next();
    if let Some(c) = interp.coverage.as_mut() {
        c.forward = true;
    }
    if !classes {
        return finish(interp, s, undecided, observed, Gathered { findings, forward_findings, stats, cuts, shared });
    }

    // 2. every nn.Module subclass's forward. Its classes come from the script's final state,
    // or, when the script was abandoned, from running only the definitions.
    let base_state = match script_final {
        Some(s) if !script_abandoned => s,
        _ => {
            if std::time::Instant::now() > interp.deadline {
                cuts.skipped.push("the module's classes".into());
                findings.extend(cuts.notice(interp));
                stats.steps = interp.steps;
                stats.max_paths = interp.paths_high_water;
                return (findings, stats);
            }
            interp.abandoned = false;
            interp.clear_outcomes();
            interp.undecided.clear();
            let defs: Vec<&ir::Stmt> = m
                .body
                .iter()
                .filter(|s| matches!(s.kind, ir::StmtKind::ClassDef(_) | ir::StmtKind::FunctionDef(_) | ir::StmtKind::Import(_) | ir::StmtKind::ImportFrom { .. } | ir::StmtKind::Assign { .. }))
                .collect();
            let mut cur = vec![st.clone()];
            for d in defs {
                let mut next = Vec::new();
                for s in cur.clone() {
                    next.extend(interp.stmt(d, s, &ctx).into_iter().map(|(s, _)| s));
                }
                // a statement that fails on every path (the script's own bug, reported by the
                // script's run) is passed over: the classes after it are still analysed
                if !next.is_empty() {
                    cur = next.into_iter().take(1).collect();
                }
            }
            interp.clear_outcomes();
            interp.undecided.clear();
            cuts.after(interp, "the run of the module's definitions that the `forward` entries start from");
            match cur.into_iter().next() {
                Some(s) if !interp.abandoned => s,
                _ => {
                    findings.extend(cuts.notice(interp));
                    stats.steps = interp.steps;
                    stats.max_paths = interp.paths_high_water;
                    return (findings, stats);
                }
            }
        }
    };
    let classes = module_classes(&interp, &base_state, module_scope);
    // The budgets (steps, time) are per file: once spent, the remaining entries are skipped.
    for class in classes {
        let entry = || match base_state.get(class) {
            Obj::Class { name, .. } => format!("`{name}.forward`"),
            _ => "a `forward`".to_string(),
        };
        if interp.steps > s.max_steps || std::time::Instant::now() > interp.deadline {
            stats.abandoned += 1;
            cuts.skipped.push(entry());
            continue;
        }
        interp.abandoned = false;
        interp.clear_outcomes();
        interp.undecided.clear();
        stats.entries += 1;
        match called.get(&class) {
            Some((st, id)) if !instance_of(&base_state, class) => analyze_forward_on(interp, st, class, *id),
            _ => analyze_forward(interp, &base_state, class, &ctx),
        }
        cuts.after(interp, &entry());
        if interp.abandoned {
            stats.abandoned += 1;
            continue;
        }
        report::settle(interp);
        forward_findings.extend(report::findings_from(&interp, &interp.outcomes));
        undecided.extend(report::undecided_from(&interp, &interp.outcomes, &interp.undecided));
    }
    finish(interp, s, undecided, observed, Gathered { findings, forward_findings, stats, cuts, shared })
}

/// What steps 1 and 2 of `run_entries` gathered, for step 3 (`finish`).
struct Gathered {
    findings: Vec<Finding>,
    /// The `forward` entries' findings (they go after the others: `run_entries`).
    forward_findings: Vec<Finding>,
    stats: Stats,
    cuts: Cuts,
    /// The shared runs' state, when step 1 made it.
    shared: Option<super::scripts::Shared>,
}

/// Step 3 of `run_entries`, then the findings put together.
fn finish(interp: &mut Interp, s: &Settings, undecided: &mut Vec<Undecided>, observed: bool, g: Gathered) -> (Vec<Finding>, Stats) {
    let Gathered { mut findings, forward_findings, mut stats, mut cuts, mut shared } = g;
    // 3. the project's scripts that import the checked file: its bugs that only their concrete
    // sizes show are reported here, where torch raises
    let scripts = s.project.as_ref().map(crate::engine::project::importer_scripts).unwrap_or_default();
    // each analysed once per process for all the files it loads, when this file's text is on disk
    if shared.is_none() && !scripts.is_empty() {
        shared = super::scripts::Shared::new(interp, s, observed);
    }
    for script in scripts {
        let entry = || format!("`{}`, which imports this file", script.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        if interp.steps > s.max_steps || std::time::Instant::now() > interp.deadline {
            stats.abandoned += 1;
            cuts.skipped.push(entry());
            continue;
        }
        if let Some(taken) = shared.as_mut().and_then(|sh| sh.take(interp, &script)) {
            stats.entries += usize::from(taken.entry);
            if let Some(spent) = taken.spent {
                stats.abandoned += 1;
                cuts.cut.push((entry(), spent, None));
            }
            stats.script_runs += taken.ran;
            findings.extend(taken.findings);
            undecided.extend(taken.undecided);
            continue;
        }
        let Some(i) = interp.project.load(&script, "__main__") else { continue };
        // a script's imports resolve from its own folder first, as Python puts it first on
        // `sys.path` (then the checked file's and the project's); restored after it ran
        let saved_paths = interp.project.paths.clone();
        if let (Some(p), Some(d)) = (interp.project.paths.as_mut(), script.parent()) {
            p.dirs.retain(|x| x != d);
            p.dirs.insert(0, d.to_path_buf());
        }
        let (module, display) = (interp.project.loaded[i].module.clone(), interp.project.loaded[i].display.clone());
        interp.abandoned = false;
        interp.clear_outcomes();
        interp.undecided.clear();
        stats.entries += 1;
        let mut st = State::new();
        let package = crate::engine::project::package_of(&script).unwrap_or_default();
        let scope = super::interp::module_scope(&mut st, None, &package, Some(&script));
        interp.begin_sys_modules(&mut st);
        let sctx = Ctx { scope, module_scope: scope, class_body: None, method_class: None, self_val: None, globals: Rc::new(Vec::new()) };
        let _ = interp.block(&module.body, st, &sctx);
        interp.project.paths = saved_paths;
        cuts.after(interp, &entry());
        if interp.abandoned {
            stats.abandoned += 1;
            continue;
        }
        report::settle(interp);
        for mut f in report::findings_from(&interp, &interp.outcomes) {
            f.trace.push(format!("found running {display}, which imports this file"));
            findings.push(f);
        }
        undecided.extend(report::undecided_from(&interp, &interp.outcomes, &interp.undecided));
    }
    stats.steps = interp.steps;
    stats.max_paths = interp.paths_high_water;
    findings.extend(forward_findings);
    report::one_per_site(&mut findings);
    findings.extend(cuts.notice(interp));
    (findings, stats)
}

/// Whether `body` defines a class anywhere (in a block or a function too).
fn defines_class(body: &[ir::Stmt]) -> bool {
    use ir::StmtKind as K;
    body.iter().any(|st| match &st.kind {
        K::ClassDef(_) => true,
        K::FunctionDef(d) => defines_class(&d.body),
        K::If { body, orelse, .. } | K::While { body, orelse, .. } | K::For { body, orelse, .. } => defines_class(body) || defines_class(orelse),
        K::Try { body, handlers, orelse, finalbody } => defines_class(body) || handlers.iter().any(|h| defines_class(&h.body)) || defines_class(orelse) || defines_class(finalbody),
        K::With { body, .. } => defines_class(body),
        _ => false,
    })
}

/// SHP302, a question about the whole run, asked after a script ran to its end: only when no
/// call was cut short. Its `.step` and `.grad` sites are those of `main` (the checked file's
/// body) and of every file the run loaded; it reports at the `backward()` sites `keep` takes.
pub(super) fn never_stepped(interp: &mut Interp, main: &[ir::Stmt], keep: impl Fn(Span) -> bool) {
    if interp.cuts != 0 || !crate::models::torch::optim::may_be_unstepped() {
        return;
    }
    let (mut steps, mut grads) = (Vec::new(), Vec::new());
    for body in std::iter::once(main).chain(interp.project.loaded.iter().map(|l| &l.module.body[..])) {
        attr_sites(body, "step", &mut steps);
        attr_sites(body, "grad", &mut grads);
    }
    let mut unstepped = crate::models::torch::optim::unstepped(&steps);
    unstepped.retain(|u| keep(u.1));
    crate::rules::training::never_stepped::check(interp, &unstepped, !grads.is_empty());
}

/// The entries a budget cut (with the budget and the checked file's statement running then)
/// and those not started because the file's budget was spent: the `SHP002` notice.
#[derive(Default)]
struct Cuts {
    cut: Vec<(String, Budget, Option<Span>)>,
    skipped: Vec<String>,
}

impl Cuts {
    /// After an entry ran: when a budget abandoned it, record it (and forget the budget).
    fn after(&mut self, interp: &mut Interp, entry: &str) {
        if let Some((budget, span)) = interp.spent.take() {
            if interp.abandoned {
                self.cut.push((entry.to_string(), budget, span));
            }
        }
    }

    /// The notice, when something was not analysed: the first cut entry's budget and place,
    /// then the rest by name.
    fn notice(&self, interp: &Interp) -> Option<Finding> {
        use crate::rules::meta::analysis_incomplete::{AnalysisIncomplete, RULE};
        let s = interp.settings;
        let budget = |b: Budget| match b {
            Budget::Steps => format!("the step budget ({} interpreter steps per file) ran out", s.max_steps),
            Budget::Paths => format!("more than {} {} live at once (the path budget)", s.max_paths, if s.max_paths == 1 { "path was" } else { "paths were" }),
            Budget::Clock => format!("the safety time limit ({} ms per file) was reached", s.timeout_ms),
        };
        let also = if self.cut.is_empty() { "" } else { "also " };
        let (reason, rest): (String, Vec<&String>) = match self.cut.first() {
            Some((entry, b, span)) => {
                let at = span.map(|sp| format!(" at line {},", interp.file.location(sp.start).0)).unwrap_or_default();
                (format!("{}{at} in {entry}", budget(*b)), self.cut[1..].iter().map(|c| &c.0).chain(&self.skipped).collect())
            }
            None if !self.skipped.is_empty() => {
                let b = if interp.steps > s.max_steps { Budget::Steps } else { Budget::Clock };
                (budget(b), self.skipped.iter().collect())
            }
            None => return None,
        };
        let rest = if rest.is_empty() {
            String::new()
        } else {
            const SHOWN: usize = 5;
            let names: Vec<&str> = rest.iter().take(SHOWN).map(|n| n.as_str()).collect();
            let more = if rest.len() > SHOWN { format!(" and {} more", rest.len() - SHOWN) } else { String::new() };
            format!("; {also}not analysed: {}{more}", names.join(", "))
        };
        // the clock is the one budget whose cut may differ between machines: said
        let clock = self.cut.iter().any(|c| c.1 == Budget::Clock) || (self.cut.is_empty() && interp.steps <= s.max_steps);
        let rest = if clock { format!("{rest} (a wall-clock limit: another machine may get further)") } else { rest };
        let v = AnalysisIncomplete::Cut { reason, rest };
        Some(Finding { rule: &RULE, message: crate::rules::violation::Violation::message(&v), row: 1, col: 1, end_row: 1, end_col: 1, trace: Vec::new(), origins: Vec::new(), condition: None, related: Vec::new(), fix: None })
    }
}

/// `shape-lint summary` (`engine::summary`): the model calls the script makes, or with `model`,
/// the call of that module class's `forward` (the instance the script built, else one from
/// defaults) with inputs of unknown shapes, or of the sizes `input_size` gives (torchinfo's
/// `input_size`: one size per `forward` input, the batch included). Call summaries are off: a
/// replayed call would not record the layers it runs.
pub(super) fn summarise(m: &ir::Module, f: &ParsedFile, s: &Settings, model: Option<&str>, input_size: Option<&[Vec<i128>]>) -> Vec<super::summary::ModelCall> {
    // (undecided checks exported: a path goes on assuming what they need, `model`'s contract)
    let s = &Settings { memo: false, switches: false, export_undecided: model.is_some() || s.export_undecided, ..s.clone() };
    let mut interp = Interp::new(f, s);
    interp.main_module = Some(m);
    crate::models::torch::device::set_defaults(interp.file.source);
    crate::models::torch::optim::begin_program();
    crate::rules::training::begin_program();
    let mut st = State::new();
    let module_scope = st.alloc(Obj::Scope { vars: Vars::new(), parent: None });
    interp.begin_sys_modules(&mut st);
    let ctx = Ctx { scope: module_scope, module_scope, class_body: None, method_class: None, self_val: None, globals: Rc::new(Vec::new()) };
    let Some(name) = model else {
        interp.summary = Some(Default::default());
        let _ = interp.block(&m.body, st, &ctx);
        return recorded_calls(&mut interp);
    };
    let finals = interp.block(&m.body, st.clone(), &ctx);
    let base = match finals.into_iter().next() {
        Some((base, _)) => base,
        None => {
            // the script fails on every path (the shape error its check reports): the model
            // is read from the file's imports, functions and classes alone
            use ir::StmtKind as K;
            interp.abandoned = false;
            let mut st = st;
            for s in m.body.iter().filter(|s| matches!(s.kind, K::Import(_) | K::ImportFrom { .. } | K::FunctionDef(_) | K::ClassDef(_))) {
                let Some((next, _)) = interp.block(std::slice::from_ref(s), st, &ctx).into_iter().next() else { return Vec::new() };
                st = next;
            }
            st
        }
    };
    let classes = module_classes(&interp, &base, module_scope);
    let Some(class) = classes.into_iter().find(|c| matches!(base.get(*c), Obj::Class { name: n, .. } if &**n == name)) else { return Vec::new() };
    if let Some(sizes) = input_size {
        let inputs: Vec<Option<Vec<Dim>>> = sizes.iter().map(|s| Some(s.iter().map(|&c| Dim::konst(c)).collect())).collect();
        let ranks: Vec<Option<usize>> = sizes.iter().map(|s| Some(s.len())).collect();
        interp.abandoned = false;
        interp.summary = Some(Default::default());
        let _ = forward_call(&mut interp, &base, class, &ctx, Some(&inputs));
        return recorded_calls(&mut interp).into_iter().map(|c| super::summary::ModelCall { input_ranks: Some(ranks.clone()), ..c }).collect();
    }
    // the first reading: inputs of unknown rank. Where the forward takes them at several ranks
    // (a Conv2d takes [C, H, W] and [N, C, H, W]) the outcomes say which: one reading per
    // rank, each a record of its own, labelled with the input ranks (what torch's hooks see
    // for an input of that rank)
    interp.abandoned = false;
    interp.summary = Some(Default::default());
    let before = base.assumed.borrow().len();
    let names: Vec<String> = match interp.class_lookup(&base, class, "forward") {
        Some((_, Value::Func(f))) => f.def.params.iter().skip(1).map(|p| p.name.to_string()).collect(),
        _ => Vec::new(),
    };
    let runs = forward_call(&mut interp, &base, class, &ctx, None);
    let calls = interp.summary.take().map(|l| l.calls).unwrap_or_default();
    // each completed path's contract, with the ranks of its inputs
    let mut contracts: Vec<(Vec<Option<usize>>, super::contract::Contract)> = Vec::new();
    for (inputs, out) in &runs {
        for (st, _) in out {
            let ranks: Vec<Option<usize>> = inputs.iter().map(|v| match v {
                Value::Tensor(t) => st.resolve(&t.shape).rank(),
                _ => None,
            }).collect();
            if let Some(c) = interp.contract(st, inputs, before, &names)
                && !contracts.iter().any(|(r, k)| *r == ranks && k.inputs == c.inputs && k.clauses == c.clauses)
            {
                contracts.push((ranks, c));
            }
        }
    }
    let of = |r: Option<&Vec<Option<usize>>>| -> Vec<super::contract::Contract> {
        contracts.iter().filter(|(k, _)| r.is_none_or(|r| r == k)).map(|(_, c)| c.clone()).collect()
    };
    let mut readings: Vec<Vec<Option<Vec<Dim>>>> = Vec::new();
    for (inputs, out) in &runs {
        for (st, _) in out {
            let shapes: Vec<Option<Vec<Dim>>> = inputs
                .iter()
                .map(|v| match v {
                    Value::Tensor(t) => Some(st.resolve(&t.shape)).filter(|s| s.prefix.is_none()).map(|s| s.dims),
                    _ => None,
                })
                .collect();
            if !readings.contains(&shapes) {
                readings.push(shapes);
            }
        }
    }
    let ranks = |r: &[Option<Vec<Dim>>]| r.iter().map(|s| s.as_ref().map(Vec::len)).collect::<Vec<_>>();
    let mut distinct: Vec<Vec<Option<usize>>> = readings.iter().map(|r| ranks(r)).collect();
    distinct.sort();
    distinct.dedup();
    if runs.len() != 1 || readings.len() < 2 || distinct.len() != readings.len() || readings.len() > 4 {
        // one reading (or readings that are not told apart by rank alone)
        let only = (readings.len() == 1).then(|| ranks(&readings[0]));
        let accepts = of(only.as_ref());
        return calls.into_iter().map(|c| super::summary::ModelCall { input_ranks: only.clone(), accepts: accepts.clone(), ..c }).collect();
    }
    let mut out = Vec::new();
    for r in &readings {
        interp.summary = Some(Default::default());
        let _ = forward_call(&mut interp, &base, class, &ctx, Some(r));
        for c in interp.summary.take().map(|l| l.calls).unwrap_or_default() {
            out.push(super::summary::ModelCall { input_ranks: Some(ranks(r)), accepts: of(Some(&ranks(r))), ..c });
        }
    }
    out
}

/// The model calls a run recorded (`Interp::summary`, taken), settled as a whole script's are:
/// the paths that agree merged, the sizes not known and a budget cut marked.
fn recorded_calls(interp: &mut Interp) -> Vec<super::summary::ModelCall> {
    let mut calls = interp.summary.take().map(|l| l.calls).unwrap_or_default();
    super::summary::paths_agree(&mut calls);
    super::summary::sizes_known(&mut calls);
    if interp.abandoned {
        for c in &mut calls {
            c.incomplete.push("the analysis ran out of budget".into());
        }
    }
    calls
}

/// The user classes bound at module level that derive from `torch.nn.Module`, or from a
/// modelled layer (`class Model(nn.Transformer)`, whose own `forward` is an entry too).
fn module_classes(interp: &Interp, st: &State, module_scope: ObjId) -> Vec<ObjId> {
    let Obj::Scope { vars, .. } = st.get(module_scope) else { return Vec::new() };
    let mut out: Vec<ObjId> = vars
        .values()
        .filter_map(|v| match v {
            Value::Ref(id) => match st.get(*id) {
                // classes the checked file defines (not those it imports from the project)
                Obj::Class { def: Some(d), .. }
                    if d.span.file == ir::FileId::MAIN
                        && (interp.lib_base(st, *id).as_deref() == Some("torch.nn.Module") || interp.layer_base(st, *id).is_some())
                        && !interp.has_unknown_base(st, *id) =>
                {
                    Some(*id)
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Entry point 2: analyse `forward` of a user `nn.Module` subclass.
pub fn analyze_forward(interp: &mut Interp, base: &State, class: ObjId, ctx: &Ctx) {
    let _ = forward_call(interp, base, class, ctx, None);
}

/// Call `forward` of a user `nn.Module` subclass with inputs of unknown shapes (or, `inputs`,
/// tensors of these shapes where known); each call's inputs and outcomes.
fn forward_call(interp: &mut Interp, base: &State, class: ObjId, ctx: &Ctx, inputs: Option<&[Option<Vec<Dim>>]>) -> Vec<(Vec<Value>, Vals)> {
    let mut calls = Vec::new();
    let span = match base.get(class) {
        Obj::Class { def: Some(d), .. } => d.span,
        _ => Span::default(),
    };
    let Some((_, Value::Func(fwd))) = interp.class_lookup(base, class, "forward") else { return calls };
    // the instance: one built by the script, else a fresh one from defaults and symbols
    let existing = first_instance(base, class);
    let instances: Vals = match existing {
        Some(i) => vec![(base.clone(), Value::Ref(i))],
        None => {
            let mut args = Vec::new();
            if let Some((_, Value::Func(init))) = interp.class_lookup(base, class, "__init__") {
                let n_required = init.def.params.len().saturating_sub(init.defaults.len());
                let module_vars = match base.get(ctx.module_scope) {
                    Obj::Scope { vars, .. } => vars.clone(),
                    _ => Vars::new(),
                };
                for p in init.def.params.iter().take(n_required).skip(1) {
                    // an int only where `__init__` proves it; else a value of unknown type (it
                    // may be a shape tuple, a config, a module, ...)
                    if proven_int(&init.def, p, &module_vars) {
                        // (the concrete run of a counterexample: its value)
                        if let Some(v) = interp.settings.param_value(&p.name) {
                            args.push(Value::int(v.max(1)));
                            continue;
                        }
                        let sym = interp.syms.fresh(&p.name, 1);
                        interp.syms.set_param(&sym, crate::shape::Param { name: p.name.to_string(), kind: crate::shape::ParamKind::Ctor, default: None });
                        args.push(Value::Int(sym));
                    } else {
                        args.push(Value::Unknown);
                    }
                }
            }
            interp.call(Value::Ref(class), args, Vec::new(), base.clone(), span)
        }
    };
    let _ = ctx;
    for (st, inst) in instances.into_iter().take(4) {
        if matches!(inst, Value::Ref(_)) {
            calls.extend(forward_on(interp, &fwd, st, inst, span, inputs));
        }
    }
    calls
}

/// Whether the state holds an instance of `class` (one `analyze_forward` runs on).
fn instance_of(st: &State, class: ObjId) -> bool {
    first_instance(st, class).is_some()
}

thread_local! {
    /// The first instance of each class on a heap (`first_instance`), and that heap.
    static INSTANCES: std::cell::RefCell<Option<(crate::value::Heap, BTreeMap<ObjId, ObjId>)>> = const { std::cell::RefCell::new(None) };
}

/// Forget the heap `first_instance` indexed (a new analysis on this thread).
pub fn reset_instances() {
    INSTANCES.with(|c| *c.borrow_mut() = None);
}

/// The first object of the state's heap that is an instance of `class`. The forward entries
/// ask it of one state for each class of the file: the heap is scanned once for all of them
/// (a scan per class made a file of many models quadratic).
fn first_instance(st: &State, class: ObjId) -> Option<ObjId> {
    INSTANCES.with(|c| {
        let mut c = c.borrow_mut();
        if !c.as_ref().is_some_and(|(h, _)| crate::value::Heap::ptr_eq(h, &st.heap)) {
            let mut index = BTreeMap::new();
            for (i, o) in st.heap.iter().enumerate() {
                if let Obj::Instance { class: k, .. } = &**o {
                    index.entry(*k).or_insert(i);
                }
            }
            *c = Some((st.heap.clone(), index));
        }
        c.as_ref().and_then(|(_, index)| index.get(&class).copied())
    })
}

/// Entry point 2 on the instance the script called (`Interp::called_modules`), in the state of
/// that call: a module built and called inside `main()` is gone from the final state.
fn analyze_forward_on(interp: &mut Interp, st: &State, class: ObjId, id: ObjId) {
    let span = match st.get(class) {
        Obj::Class { def: Some(d), .. } => d.span,
        _ => Span::default(),
    };
    let Some((_, Value::Func(fwd))) = interp.class_lookup(st, class, "forward") else { return };
    let _ = forward_on(interp, &fwd, st.clone(), Value::Ref(id), span, None);
}

/// Call `forward` on `inst` with inputs of unknown shapes (or their annotations' shapes, or
/// the shapes `inputs` gives): the call's inputs and outcomes.
fn forward_on(interp: &mut Interp, fwd: &Rc<crate::value::Closure>, st: State, inst: Value, span: Span, inputs: Option<&[Option<Vec<Dim>>]>) -> Vec<(Vec<Value>, Vals)> {
    // forward's parameters: tensors of the shape their annotation gives (`annotations.rs`),
    // else of the shapes `inputs` gives, else of unknown shape, or their defaults
    let n_required = fwd.def.params.len().saturating_sub(fwd.defaults.len());
    let mut args = vec![inst.clone()];
    let mut named = super::annotations::Named::default();
    for p in fwd.def.params.iter().take(n_required).skip(1) {
        let given = inputs.and_then(|i| i.get(args.len() - 1)).cloned().flatten();
        if given.is_none()
            && let Some(v) = p.annotation.as_ref().and_then(|a| super::annotations::input_of(interp, a, &p.name, &mut named))
        {
            args.push(v);
            continue;
        }
        let shape = match given {
            Some(dims) => Shape::known(dims),
            None => Shape { prefix: Some(interp.fresh_shape_var()), dims: Vec::new() },
        };
        args.push(crate::models::torch::tensor::tensor_value(shape, None));
    }
    // a call of forward from anywhere: the module may have been moved to any device first
    let was = crate::models::torch::device::modules_anywhere(true);
    // (`shape-lint summary --model`: this call is the model call recorded)
    let begun = if interp.summary.is_some() { interp.summary_begin(&st, &inst, &[], &[], span) } else { None };
    let call_inputs = args[1..].to_vec();
    let out = interp.call_closure(fwd, args, Vec::new(), st, span);
    if let Some(b) = begun {
        interp.summary_end(b, &out);
    }
    crate::models::torch::device::modules_anywhere(was);
    vec![(call_inputs, out)]
}

/// The parameters of the library constructors that only an int fits, by position and name:
/// a correct program passes an int there (anything else raises when the layer is built or
/// first called). `LayerNorm(normalized_shape)`, kernel sizes, strides, paddings and sizes
/// (`torch.zeros(n)`) also take tuples, so they prove nothing.
const INT_ONLY: &[(&str, &[&str])] = &[
    ("torch.nn.Linear", &["in_features", "out_features"]),
    ("torch.nn.Bilinear", &["in1_features", "in2_features", "out_features"]),
    ("torch.nn.Embedding", &["num_embeddings", "embedding_dim"]),
    ("torch.nn.EmbeddingBag", &["num_embeddings", "embedding_dim"]),
    ("torch.nn.Conv1d", &["in_channels", "out_channels"]),
    ("torch.nn.Conv2d", &["in_channels", "out_channels"]),
    ("torch.nn.Conv3d", &["in_channels", "out_channels"]),
    ("torch.nn.ConvTranspose1d", &["in_channels", "out_channels"]),
    ("torch.nn.ConvTranspose2d", &["in_channels", "out_channels"]),
    ("torch.nn.ConvTranspose3d", &["in_channels", "out_channels"]),
    ("torch.nn.BatchNorm1d", &["num_features"]),
    ("torch.nn.BatchNorm2d", &["num_features"]),
    ("torch.nn.BatchNorm3d", &["num_features"]),
    ("torch.nn.GroupNorm", &["num_groups", "num_channels"]),
    ("torch.nn.MultiheadAttention", &["embed_dim", "num_heads"]),
    ("torch.nn.LSTM", &["input_size", "hidden_size", "num_layers"]),
    ("torch.nn.GRU", &["input_size", "hidden_size", "num_layers"]),
    ("torch.nn.RNN", &["input_size", "hidden_size", "num_layers"]),
    ("torch.nn.LSTMCell", &["input_size", "hidden_size"]),
    ("torch.nn.GRUCell", &["input_size", "hidden_size"]),
    ("torch.nn.RNNCell", &["input_size", "hidden_size"]),
    ("torch.nn.TransformerEncoderLayer", &["d_model", "nhead", "dim_feedforward"]),
    ("torch.nn.TransformerDecoderLayer", &["d_model", "nhead", "dim_feedforward"]),
    ("torch.nn.PixelShuffle", &["upscale_factor"]),
    ("torch.nn.PixelUnshuffle", &["downscale_factor"]),
];

/// Whether `__init__` proves its parameter `p` an int: annotated `int`, or passed as it is
/// (never reassigned) to `range(...)` or to an int-only parameter of a library constructor
/// (`INT_ONLY`) in a statement that runs whenever `__init__` does (not under an `if`, a
/// `while`, a `try` or a comprehension's element, whose code may not run).
fn proven_int(init: &ir::FuncDef, p: &ir::Param, module_vars: &Vars) -> bool {
    if matches!(&p.annotation, Some(ir::Expr { kind: ir::ExprKind::Name(n), .. }) if &**n == "int") {
        return true;
    }
    let mut assigned = std::collections::BTreeSet::new();
    for s in &init.body {
        assigned_names(s, &mut assigned);
    }
    if assigned.contains(&p.name) || init.params.iter().filter(|q| q.name == p.name).count() != 1 {
        return false;
    }
    let mut found = false;
    let mut visit = |e: &ir::Expr| {
        if let ir::ExprKind::Call { func, args, kwargs } = &e.kind {
            let is_p = |e: &ir::Expr| matches!(&e.kind, ir::ExprKind::Name(n) if *n == p.name);
            match callee_path(func, module_vars, &assigned).as_deref() {
                Some("builtins.range") => found |= args.iter().any(|a| !a.star && is_p(&a.value)),
                Some(path) => {
                    if let Some((_, names)) = INT_ONLY.iter().find(|(q, _)| *q == path) {
                        // positional arguments up to the first `*args` bind in order
                        for (i, a) in args.iter().take_while(|a| !a.star).enumerate() {
                            found |= i < names.len() && is_p(&a.value);
                        }
                        found |= kwargs.iter().any(|k| k.name.as_deref().is_some_and(|n| names.contains(&n)) && is_p(&k.value));
                    }
                }
                None => {}
            }
        }
    };
    for s in &init.body {
        always_run_exprs(s, &mut visit);
    }
    found
}

/// The library object `func` names, from the module's bindings (`nn.Linear` with `nn` bound
/// to `torch.nn`); `range` when no binding shadows the builtin.
fn callee_path(func: &ir::Expr, module_vars: &Vars, local: &std::collections::BTreeSet<ir::Name>) -> Option<String> {
    match &func.kind {
        ir::ExprKind::Name(n) if local.contains(n) => None,
        ir::ExprKind::Name(n) => match module_vars.get(n) {
            Some(Value::Lib(path)) => Some(path.to_string()),
            None if &**n == "range" => Some("builtins.range".into()),
            _ => None,
        },
        ir::ExprKind::Attr(inner, name) => {
            let base = callee_path(inner, module_vars, local)?;
            match crate::models::lib_attr(&base, name) {
                Value::Lib(path) => Some(path.to_string()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Every name a statement may bind, in any of its branches (nested functions and classes
/// bind their own name only).
fn assigned_names(s: &ir::Stmt, out: &mut std::collections::BTreeSet<ir::Name>) {
    fn target(t: &ir::Target, out: &mut std::collections::BTreeSet<ir::Name>) {
        match t {
            ir::Target::Name(n, _) => {
                out.insert(n.clone());
            }
            ir::Target::Tuple(ts, _, _) => ts.iter().for_each(|t| target(t, out)),
            _ => {}
        }
    }
    use ir::StmtKind as K;
    match &s.kind {
        K::Assign { targets, .. } => targets.iter().for_each(|t| target(t, out)),
        K::AugAssign { target: t, .. } | K::AnnAssign { target: t, .. } => target(t, out),
        K::For { target: t, body, orelse, .. } => {
            target(t, out);
            body.iter().chain(orelse).for_each(|s| assigned_names(s, out));
        }
        K::If { body, orelse, .. } | K::While { body, orelse, .. } => body.iter().chain(orelse).for_each(|s| assigned_names(s, out)),
        K::Try { body, handlers, orelse, finalbody } => {
            for h in handlers {
                if let Some(n) = &h.name {
                    out.insert(n.clone());
                }
                h.body.iter().for_each(|s| assigned_names(s, out));
            }
            body.iter().chain(orelse).chain(finalbody).for_each(|s| assigned_names(s, out));
        }
        K::With { items, body } => {
            items.iter().filter_map(|(_, t)| t.as_ref()).for_each(|t| target(t, out));
            body.iter().for_each(|s| assigned_names(s, out));
        }
        K::FunctionDef(f) => {
            out.insert(f.name.clone());
        }
        K::ClassDef(c) => {
            out.insert(c.name.clone());
        }
        K::Import(names) => {
            for (dotted, alias) in names {
                out.insert(alias.clone().unwrap_or_else(|| std::rc::Rc::from(dotted.split('.').next().unwrap_or(dotted))));
            }
        }
        K::ImportFrom { names, .. } => names.iter().for_each(|(n, a)| {
            out.insert(a.clone().unwrap_or_else(|| n.clone()));
        }),
        K::Global(ns) | K::Nonlocal(ns) => ns.iter().for_each(|n| {
            out.insert(n.clone());
        }),
        K::Delete(ts) => ts.iter().for_each(|t| target(t, out)),
        K::Unknown { binds } => binds.iter().for_each(|n| {
            out.insert(n.clone());
        }),
        K::Expr(_) | K::Return(_) | K::Raise(_) | K::Assert { .. } | K::Break | K::Continue | K::Pass => {}
    }
    // a walrus binds too
    let mut walrus = |e: &ir::Expr| {
        if let ir::ExprKind::Named(n, _) = &e.kind {
            out.insert(n.clone());
        }
    };
    all_exprs_of_stmt(s, &mut walrus);
}

/// The expressions a statement evaluates whenever it runs (and, for a `for` or `with`, those
/// of its body, which is taken to run): not those under an `if`, `while`, `try`, a
/// conditional expression, a short-circuit operand, a comprehension's element or a lambda.
fn always_run_exprs(s: &ir::Stmt, f: &mut dyn FnMut(&ir::Expr)) {
    use ir::StmtKind as K;
    match &s.kind {
        K::Expr(e) | K::Assign { value: e, .. } | K::AugAssign { value: e, .. } => sure_expr(e, f),
        K::AnnAssign { value: Some(e), .. } => sure_expr(e, f),
        K::For { iter, body, .. } => {
            sure_expr(iter, f);
            body.iter().for_each(|s| always_run_exprs(s, f));
        }
        K::With { items, body } => {
            items.iter().for_each(|(e, _)| sure_expr(e, f));
            body.iter().for_each(|s| always_run_exprs(s, f));
        }
        K::If { test, .. } | K::While { test, .. } => sure_expr(test, f),
        _ => {}
    }
}

fn sure_expr(e: &ir::Expr, f: &mut dyn FnMut(&ir::Expr)) {
    use ir::ExprKind as E;
    f(e);
    match &e.kind {
        E::Attr(a, _) | E::UnaryOp(_, a) | E::Starred(a) | E::Named(_, a) => sure_expr(a, f),
        E::Subscript(a, b) | E::BinOp(_, a, b) => {
            sure_expr(a, f);
            sure_expr(b, f);
        }
        E::Call { func, args, kwargs } => {
            sure_expr(func, f);
            args.iter().for_each(|a| sure_expr(&a.value, f));
            kwargs.iter().for_each(|k| sure_expr(&k.value, f));
        }
        E::Tuple(xs) | E::List(xs) | E::Set(xs) => xs.iter().for_each(|x| sure_expr(x, f)),
        E::Dict(kv) => kv.iter().for_each(|(k, v)| {
            if let Some(k) = k {
                sure_expr(k, f);
            }
            sure_expr(v, f);
        }),
        E::BoolOp { values, .. } => {
            if let Some(v) = values.first() {
                sure_expr(v, f);
            }
        }
        E::Compare(a, rest) => {
            sure_expr(a, f);
            if let Some((_, b)) = rest.first() {
                sure_expr(b, f);
            }
        }
        E::IfExp { test, .. } => sure_expr(test, f),
        E::Comp { generators, .. } => {
            if let Some(g) = generators.first() {
                sure_expr(&g.iter, f);
            }
        }
        E::Slice(a, b, c) => [a, b, c].into_iter().flatten().for_each(|x| sure_expr(x, f)),
        E::FString(xs, _) => xs.iter().for_each(|x| sure_expr(x, f)),
        E::Yield(Some(a)) => sure_expr(a, f),
        E::Name(_) | E::Const(_) | E::Lambda(_) | E::Yield(None) | E::Unknown => {}
    }
}

/// The places of every attribute `name` (`x.step`) in `body`, function and class bodies and
/// lambdas included.
fn attr_sites(body: &[ir::Stmt], name: &str, out: &mut Vec<crate::ir::Span>) {
    fn def(d: &ir::FuncDef, name: &str, out: &mut Vec<crate::ir::Span>) {
        attr_sites(&d.body, name, out);
    }
    for s in body {
        match &s.kind {
            ir::StmtKind::FunctionDef(d) => def(d, name, out),
            ir::StmtKind::ClassDef(c) => attr_sites(&c.body, name, out),
            _ => all_exprs_of_stmt(s, &mut |e| match &e.kind {
                ir::ExprKind::Attr(_, n) if &**n == name => out.push(e.span),
                ir::ExprKind::Lambda(d) => def(d, name, out),
                _ => {}
            }),
        }
    }
}

/// Every expression of an expression's tree, itself first.
pub(crate) fn all_exprs(e: &ir::Expr, f: &mut dyn FnMut(&ir::Expr)) {
    use ir::ExprKind as E;
    f(e);
    match &e.kind {
        E::Attr(a, _) | E::UnaryOp(_, a) | E::Starred(a) | E::Named(_, a) => all_exprs(a, f),
        E::Subscript(a, b) | E::BinOp(_, a, b) => {
            all_exprs(a, f);
            all_exprs(b, f);
        }
        E::Call { func, args, kwargs } => {
            all_exprs(func, f);
            args.iter().for_each(|a| all_exprs(&a.value, f));
            kwargs.iter().for_each(|k| all_exprs(&k.value, f));
        }
        E::Tuple(xs) | E::List(xs) | E::Set(xs) | E::FString(xs, _) => xs.iter().for_each(|x| all_exprs(x, f)),
        E::BoolOp { values, .. } => values.iter().for_each(|x| all_exprs(x, f)),
        E::Dict(kv) => kv.iter().for_each(|(k, v)| {
            if let Some(k) = k {
                all_exprs(k, f);
            }
            all_exprs(v, f);
        }),
        E::Compare(a, rest) => {
            all_exprs(a, f);
            rest.iter().for_each(|(_, b)| all_exprs(b, f));
        }
        E::IfExp { test, body, orelse } => [test, body, orelse].into_iter().for_each(|x| all_exprs(x, f)),
        E::Comp { elt, value, generators, .. } => {
            all_exprs(elt, f);
            if let Some(v) = value {
                all_exprs(v, f);
            }
            for g in generators {
                all_exprs(&g.iter, f);
                g.ifs.iter().for_each(|x| all_exprs(x, f));
            }
        }
        E::Slice(a, b, c) => [a, b, c].into_iter().flatten().for_each(|x| all_exprs(x, f)),
        E::Yield(Some(a)) => all_exprs(a, f),
        E::Name(_) | E::Const(_) | E::Lambda(_) | E::Yield(None) | E::Unknown => {}
    }
}

/// Every expression of a statement and of the statements inside it (for the names a walrus
/// binds).
pub(crate) fn all_exprs_of_stmt(s: &ir::Stmt, f: &mut dyn FnMut(&ir::Expr)) {
    let all = all_exprs;
    use ir::StmtKind as K;
    match &s.kind {
        K::Expr(e) | K::Assign { value: e, .. } | K::AugAssign { value: e, .. } => all(e, f),
        K::AnnAssign { value: Some(e), .. } => all(e, f),
        K::If { test, body, orelse } | K::While { test, body, orelse } => {
            all(test, f);
            body.iter().chain(orelse).for_each(|s| all_exprs_of_stmt(s, f));
        }
        K::For { iter, body, orelse, .. } => {
            all(iter, f);
            body.iter().chain(orelse).for_each(|s| all_exprs_of_stmt(s, f));
        }
        K::With { items, body } => {
            items.iter().for_each(|(e, _)| all(e, f));
            body.iter().for_each(|s| all_exprs_of_stmt(s, f));
        }
        K::Try { body, handlers, orelse, finalbody } => {
            body.iter().chain(orelse).chain(finalbody).for_each(|s| all_exprs_of_stmt(s, f));
            handlers.iter().for_each(|h| h.body.iter().for_each(|s| all_exprs_of_stmt(s, f)));
        }
        K::Return(Some(e)) | K::Raise(Some(e)) => all(e, f),
        K::Assert { test, msg } => {
            all(test, f);
            if let Some(m) = msg {
                all(m, f);
            }
        }
        _ => {}
    }
}
