//! The entry points, so that per-file linting needs no configuration:
//! 1. the module's top level run as a script (`__name__ == "__main__"`);
//! 2. every `nn.Module` subclass's `forward`, with the instance built by the script when there
//!    is one, else constructed from its defaults (missing arguments become fresh positive
//!    symbols); `forward`'s tensor inputs have unknown shapes refined by their first use.
//!
//! The budgets (steps, time) cover the whole file; an entry that exhausts one reports nothing.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::interp::{Ctx, Interp, Vals};
use super::{Stats, report};
use crate::ir::Span;
use crate::value::*;

use crate::{Finding, Settings, Undecided, ir, parse::ParsedFile};

type ShapeLog = BTreeMap<usize, std::collections::BTreeSet<String>>;

pub(super) fn run(m: &ir::Module, f: &ParsedFile, s: &Settings, log: Option<&mut ShapeLog>) -> (Vec<Finding>, Vec<Undecided>, Stats) {
    run_observed(m, f, s, log, &[])
}

/// `run`, with `extra` event subscribers next to the enabled rules' own (tests observe the
/// event stream this way).
pub(super) fn run_observed(m: &ir::Module, f: &ParsedFile, s: &Settings, log: Option<&mut ShapeLog>, extra: &[&'static dyn crate::rules::events::Subscriber]) -> (Vec<Finding>, Vec<Undecided>, Stats) {
    let mut interp = Interp::new(f, s);
    if !extra.is_empty() {
        interp.subscribers = crate::engine::events::Subscribers::enabled(s, extra);
    }
    let logging = log.is_some();
    if logging {
        interp.shape_log = Some(BTreeMap::new());
    }
    let mut undecided = Vec::new();
    let (findings, mut stats) = run_entries(&mut interp, m, s, &mut undecided);
    stats.memo_hits = interp.memo.hits;
    stats.memo_misses = interp.memo.misses;
    stats.memo_stored = interp.memo.stored;
    if let (Some(log), Some(got)) = (log, interp.shape_log.take()) {
        *log = got;
    }
    report::undecided_to_export(&mut undecided, &findings);
    (findings, undecided, stats)
}

fn run_entries(interp: &mut Interp, m: &ir::Module, s: &Settings, undecided: &mut Vec<Undecided>) -> (Vec<Finding>, Stats) {
    let mut stats = Stats::default();
    let mut findings: Vec<Finding> = Vec::new();

    // 1. the script
    let mut st = State::new();
    let module_scope = st.alloc(Obj::Scope { vars: BTreeMap::new(), parent: None });
    let ctx = Ctx {
        scope: module_scope,
        module_scope,
        class_body: None,
        method_class: None,
        self_val: None,
        globals: Rc::new(Vec::new()),
    };
    let finals = interp.block(&m.body, st.clone(), &ctx);
    stats.entries += 1;
    let script_abandoned = interp.abandoned;
    if script_abandoned {
        stats.abandoned += 1;
    } else {
        findings.extend(report::findings_from(&interp, &interp.outcomes));
        undecided.extend(report::undecided_from(&interp, &interp.outcomes, &interp.undecided));
    }
    interp.undecided.clear();
    let script_final: Option<State> = finals.into_iter().map(|(s, _)| s).next();

    // 2. every nn.Module subclass's forward. Its classes come from the script's final state,
    // or, when the script was abandoned, from running only the definitions.
    let base_state = match script_final {
        Some(s) if !script_abandoned => s,
        _ => {
            if std::time::Instant::now() > interp.deadline {
                stats.steps = interp.steps;
                stats.max_paths = interp.paths_high_water;
                return (findings, stats);
            }
            interp.abandoned = false;
            interp.outcomes.clear();
            interp.undecided.clear();
            let defs: Vec<&ir::Stmt> = m
                .body
                .iter()
                .filter(|s| matches!(s.kind, ir::StmtKind::ClassDef(_) | ir::StmtKind::FunctionDef(_) | ir::StmtKind::Import(_) | ir::StmtKind::ImportFrom { .. } | ir::StmtKind::Assign { .. }))
                .collect();
            let mut cur = vec![st.clone()];
            for d in defs {
                let mut next = Vec::new();
                for s in cur {
                    next.extend(interp.stmt(d, s, &ctx).into_iter().map(|(s, _)| s));
                }
                cur = next.into_iter().take(1).collect();
            }
            interp.outcomes.clear();
            interp.undecided.clear();
            match cur.into_iter().next() {
                Some(s) if !interp.abandoned => s,
                _ => {
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
        if interp.steps > s.max_steps || std::time::Instant::now() > interp.deadline {
            stats.abandoned += 1;
            continue;
        }
        interp.abandoned = false;
        interp.outcomes.clear();
        interp.undecided.clear();
        stats.entries += 1;
        analyze_forward(interp, &base_state, class, &ctx);
        if interp.abandoned {
            stats.abandoned += 1;
            continue;
        }
        findings.extend(report::findings_from(&interp, &interp.outcomes));
        undecided.extend(report::undecided_from(&interp, &interp.outcomes, &interp.undecided));
    }
    stats.steps = interp.steps;
    stats.max_paths = interp.paths_high_water;
    report::one_per_site(&mut findings);
    (findings, stats)
}

/// The user classes bound at module level that derive from `torch.nn.Module`.
fn module_classes(interp: &Interp, st: &State, module_scope: ObjId) -> Vec<ObjId> {
    let Obj::Scope { vars, .. } = st.get(module_scope) else { return Vec::new() };
    let mut out: Vec<ObjId> = vars
        .values()
        .filter_map(|v| match v {
            Value::Ref(id) => match st.get(*id) {
                Obj::Class { .. } if interp.lib_base(st, *id).as_deref() == Some("torch.nn.Module") && !interp.has_unknown_base(st, *id) => Some(*id),
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
    let span = match base.get(class) {
        Obj::Class { def: Some(d), .. } => d.span,
        _ => Span::default(),
    };
    let Some((_, Value::Func(fwd))) = interp.class_lookup(base, class, "forward") else { return };
    // the instance: one built by the script, else a fresh one from defaults and symbols
    let existing = base.heap.iter().enumerate().find_map(|(i, o)| match &**o {
        Obj::Instance { class: c, .. } if *c == class => Some(i),
        _ => None,
    });
    let instances: Vals = match existing {
        Some(i) => vec![(base.clone(), Value::Ref(i))],
        None => {
            let mut args = Vec::new();
            if let Some((_, Value::Func(init))) = interp.class_lookup(base, class, "__init__") {
                let n_required = init.def.params.len().saturating_sub(init.defaults.len());
                for p in init.def.params.iter().take(n_required).skip(1) {
                    args.push(Value::Int(interp.syms.fresh(&p.name, 1)));
                }
            }
            interp.call(Value::Ref(class), args, Vec::new(), base.clone(), span)
        }
    };
    let _ = ctx;
    for (st, inst) in instances.into_iter().take(4) {
        if !matches!(inst, Value::Ref(_)) {
            continue;
        }
        // forward's parameters: tensors of unknown shape, or their defaults
        let n_required = fwd.def.params.len().saturating_sub(fwd.defaults.len());
        let mut args = vec![inst.clone()];
        for p in fwd.def.params.iter().take(n_required).skip(1) {
            let _ = p;
            let var = interp.fresh_shape_var();
            args.push(crate::models::torch::tensor::tensor_value(Shape { prefix: Some(var), dims: Vec::new() }, None));
        }
        let _ = interp.call_closure(&fwd, args, Vec::new(), st, span);
    }
}
