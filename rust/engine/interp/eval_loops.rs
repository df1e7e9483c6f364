//! Evaluation loops written inline (SHP306, SHP307): a `for` loop that runs a model and keeps
//! nothing autograd could use, in a script or in a function that trains too.
//!
//! A helper function that is an evaluation pass is judged at its return (`call::EvalFrame`).
//! A loop is judged the same way, with what a loop has instead of a return value: the loop gets
//! a frame of its own, and when it ends it is an evaluation loop if nothing in it used a graph
//! (no `backward()`, no step, no autograd call, no graph handed to code the core does not
//! follow), and it leaves no tensor with a graph where the code after it can read it:
//! - no name it assigns that holds such a tensor is read after the loop before it is assigned
//!   again ([`exposed`]: the rest of each enclosing block, and the whole body of each enclosing
//!   loop, which runs again);
//! - no object that existed before it (a list of predictions, an attribute) holds one that it
//!   did not hold before.
//!
//! Its model calls are then judged as an evaluation pass's: with gradients on at every run
//! (SHP306); with a dropout or batch norm in training mode at every run (SHP307), where the
//! model has trained in this program and no `.train()` ran since its training
//! (`torch::mode::TRAINED`: a model put in training mode on purpose for MC dropout is not
//! reported). A loop inside a function that has not used a graph yet hands its model calls to
//! the function's frame instead, which judges them as today at its return.

use std::collections::BTreeSet;

use super::{Interp, Paths};
use crate::engine::entry::{all_exprs, all_exprs_of_stmt};
use crate::ir::*;
use crate::models::torch;
use crate::value::*;

/// One statement list being run (`Interp::block`): where it is, how far it got, and whether it
/// is a loop's body (which runs again after its end).
#[derive(Debug, Clone, Copy)]
pub struct BlockFrame {
    stmts: *const Stmt,
    len: usize,
    pub at: usize,
    loop_body: bool,
}

impl BlockFrame {
    pub fn new(stmts: &[Stmt], loop_body: bool) -> BlockFrame {
        BlockFrame { stmts: stmts.as_ptr(), len: stmts.len(), at: 0, loop_body }
    }

    /// The statements. Sound while the frame is on `Interp::blocks`: `block` pushes it on entry
    /// and pops it before it returns, and the IR it points into outlives that call.
    fn stmts(&self) -> &[Stmt] {
        // SAFETY: see above; the slice was a live `&[Stmt]` for as long as the frame exists.
        unsafe { std::slice::from_raw_parts(self.stmts, self.len) }
    }

    /// The span of the statement the frame is running.
    pub fn span(&self) -> Option<crate::ir::Span> {
        self.stmts().get(self.at).map(|s| s.span)
    }
}

/// The names read by `stmts` before they assign them (a name read in a nested function or
/// class body counts as read), added to `out`; `killed`: names certainly assigned before.
pub fn exposed(stmts: &[Stmt], killed: &mut BTreeSet<Name>, out: &mut BTreeSet<Name>) {
    let reads = |e: &Expr, killed: &BTreeSet<Name>, out: &mut BTreeSet<Name>| {
        expr_names(e, &mut |n| {
            if !killed.contains(n) {
                out.insert(n.clone());
            }
        })
    };
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                reads(value, killed, out);
                targets.iter().for_each(|t| target_reads(t, killed, out));
                targets.iter().for_each(|t| kill(t, killed));
            }
            StmtKind::AnnAssign { target, value: Some(value), .. } => {
                reads(value, killed, out);
                target_reads(target, killed, out);
                kill(target, killed);
            }
            StmtKind::AugAssign { target, value, .. } => {
                reads(value, killed, out);
                match target {
                    Target::Name(n, _) if !killed.contains(n) => {
                        out.insert(n.clone());
                    }
                    t => target_reads(t, killed, out),
                }
            }
            StmtKind::For { target, iter, body, orelse } => {
                reads(iter, killed, out);
                let mut inner = killed.clone();
                kill(target, &mut inner);
                exposed(body, &mut inner, out);
                exposed(orelse, &mut killed.clone(), out);
            }
            StmtKind::While { test, body, orelse } => {
                reads(test, killed, out);
                exposed(body, &mut killed.clone(), out);
                exposed(orelse, &mut killed.clone(), out);
            }
            StmtKind::If { test, body, orelse } => {
                reads(test, killed, out);
                exposed(body, &mut killed.clone(), out);
                exposed(orelse, &mut killed.clone(), out);
            }
            StmtKind::With { items, body } => {
                for (e, t) in items {
                    reads(e, killed, out);
                    if let Some(t) = t {
                        kill(t, killed);
                    }
                }
                exposed(body, killed, out);
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                exposed(body, &mut killed.clone(), out);
                for h in handlers {
                    exposed(&h.body, &mut killed.clone(), out);
                }
                exposed(orelse, &mut killed.clone(), out);
                exposed(finalbody, &mut killed.clone(), out);
            }
            // anything else: every name it mentions (nested bodies included)
            _ => all_exprs_of_stmt(s, &mut |e| {
                if let ExprKind::Name(n) = &e.kind
                    && !killed.contains(n)
                {
                    out.insert(n.clone());
                }
                if let ExprKind::Lambda(d) = &e.kind {
                    exposed(&d.body, &mut BTreeSet::new(), out);
                }
            }),
        }
        if let StmtKind::FunctionDef(d) = &s.kind {
            exposed(&d.body, &mut BTreeSet::new(), out);
        }
        if let StmtKind::ClassDef(c) = &s.kind {
            exposed(&c.body, &mut BTreeSet::new(), out);
        }
    }
}

/// The names `t` binds are assigned from here on.
fn kill(t: &Target, killed: &mut BTreeSet<Name>) {
    let mut bound = Vec::new();
    t.bound_names(&mut bound);
    killed.extend(bound);
}

fn expr_names(e: &Expr, f: &mut dyn FnMut(&Name)) {
    all_exprs(e, &mut |e| match &e.kind {
        ExprKind::Name(n) => f(n),
        ExprKind::Lambda(d) => {
            let mut inner = BTreeSet::new();
            exposed(&d.body, &mut BTreeSet::new(), &mut inner);
            inner.iter().for_each(&mut *f);
        }
        _ => {}
    });
}

/// The expressions a target reads (`a[i] = ...` reads `a` and `i`; `self.x = ...` reads `self`).
fn target_reads(t: &Target, killed: &BTreeSet<Name>, out: &mut BTreeSet<Name>) {
    let mut add = |e: &Expr| {
        expr_names(e, &mut |n| {
            if !killed.contains(n) {
                out.insert(n.clone());
            }
        })
    };
    match t {
        Target::Attr(e, _, _) => add(e),
        Target::Subscript(a, b, _) => {
            add(a);
            add(b);
        }
        Target::Tuple(ts, _, _) => ts.iter().for_each(|t| target_reads(t, killed, out)),
        Target::Name(..) | Target::Unknown(_) => {}
    }
}

impl Interp<'_> {
    /// The names that may be read after the statement being run in the innermost block, before
    /// they are assigned again: the rest of each enclosing block, and every enclosing loop's
    /// whole body.
    fn live_after(&self) -> BTreeSet<Name> {
        let mut out = BTreeSet::new();
        for fr in self.blocks.iter() {
            let stmts = fr.stmts();
            exposed(&stmts[(fr.at + 1).min(stmts.len())..], &mut BTreeSet::new(), &mut out);
            if fr.loop_body {
                exposed(stmts, &mut BTreeSet::new(), &mut out);
            }
        }
        out
    }

    /// Whether no block running is a loop's body (nor a call's made from one).
    pub(super) fn outside_loops(&self) -> bool {
        !self.blocks.iter().any(|fr| fr.loop_body)
    }

    /// Whether a `for` loop starting here gets an evaluation frame of its own.
    pub(super) fn loop_frame_wanted(&self) -> bool {
        torch::device::follows_autograd() && !self.eval_frames.last().is_some_and(|f| f.in_model)
    }

    /// The loop of `span` with `body` ended with `out`, from `before`: judge its frame, or hand
    /// its model calls to the enclosing function's frame.
    pub(super) fn end_loop_frame(&mut self, mut fr: super::call::EvalFrame, span: Span, target: &Target, body: &[Stmt], before: &State, out: &Paths) {
        fr.graph_used |= fr.flagged != self.flagged;
        if super::debug_enabled() {
            eprintln!("[shape-lint debug] loop at line {}: {fr:?}", self.line(span));
        }
        let parent_judges = self.eval_frames.last().is_some_and(|p| !p.graph_used && !p.lost);
        if parent_judges || fr.graph_used || fr.lost || fr.set_train || fr.sites.is_empty() || out.is_empty() {
            if parent_judges && let Some(p) = self.eval_frames.last_mut() {
                for s in fr.sites {
                    if !p.sites.iter().any(|q| q.span == s.span) {
                        p.sites.push(s);
                    }
                }
            }
            return;
        }
        // what the loop leaves behind: a graph the code after it may use
        let mut assigned = Vec::new();
        target.bound_names(&mut assigned);
        super::loops::assigned_names(body, &mut assigned);
        let live = self.live_after();
        // (a generalised loop inside forgot where it kept a graph)
        if fr.forgot_obj || fr.forgot.iter().any(|n| live.contains(n)) {
            return;
        }
        let tracked = |t: &Tensor| matches!(t.grad, Grad::Tracked);
        for (st, _) in out {
            let ctx_vars = self.visible_vars(st);
            if assigned.iter().filter(|n| live.contains(*n)).any(|n| ctx_vars.iter().any(|(m, v)| m == n && torch::mode::holds(st, v, &tracked))) {
                return;
            }
            let n = before.heap.len().min(st.heap.len());
            for i in 0..n {
                if std::rc::Rc::ptr_eq(&before.heap[i], &st.heap[i]) || before.heap[i] == st.heap[i] || matches!(*st.heap[i], Obj::Scope { .. }) {
                    continue;
                }
                if torch::mode::holds(st, &Value::Ref(i), &tracked) && !torch::mode::holds(before, &Value::Ref(i), &tracked) {
                    return;
                }
            }
        }
        let Some((st, _)) = out.first() else { return };
        use crate::rules::violation::Violation;
        for s in &fr.sites {
            if s.grad {
                let v = crate::rules::training::eval_with_grad::EvalWithGrad::Loop { place: crate::models::ctx::ModelCtx::place(self, span) };
                self.warn(st, s.span, &crate::rules::training::eval_with_grad::RULE, v.message());
            }
            if let (Some(layer), true) = (&s.training, s.trained) {
                let v = crate::rules::training::train_eval_mode::TrainEvalMode::EvalLoopInTraining { place: crate::models::ctx::ModelCtx::place(self, span), layer: layer.clone() };
                self.warn(st, s.span, &crate::rules::training::train_eval_mode::RULE, v.message());
            }
        }
    }

    /// The names of the innermost scope and the module scope on `st` with their values.
    fn visible_vars(&self, st: &State) -> Vec<(Name, Value)> {
        let mut out = Vec::new();
        crate::value::reads::note_walk();
        for id in 0..st.heap.len() {
            if let Obj::Scope { vars, .. } = st.get(id) {
                out.extend(vars.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        out
    }
}

impl Interp<'_> {
    /// A call of a module object in the body of the innermost running function, on inputs
    /// without a graph: whether it runs with gradients on, and a dropout or batch norm of it
    /// in training mode.
    pub(super) fn eval_probe(&self, f: &Value, st: &State, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Option<(bool, Option<String>, bool)> {
        let Value::Ref(id) = f else { return None };
        // (a module applied to a graph already built, a loss or a head on the model's outputs,
        // is not where the evaluation starts)
        if args.iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| torch::mode::holds(st, v, &|t: &Tensor| matches!(t.grad, Grad::Tracked))) {
            return None;
        }
        let fr = self.eval_frames.last()?;
        let def = fr.def;
        if fr.active == Some(span) || span.file != def.file || span.start < def.start || span.end > def.end {
            return None;
        }
        crate::models::is_module(self, st, *id).then(|| (st.grad_mode == GradMode::On, torch::mode::training_layer(st, *id), torch::mode::trained(st, *id)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    fn exposed_of(src: &str) -> Vec<String> {
        let parsed = crate::parse::parse(src);
        let module = crate::ir::lower::lower_module(&parsed);
        let mut out = BTreeSet::new();
        super::exposed(&module.body, &mut BTreeSet::new(), &mut out);
        out.into_iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_name_assigned_before_it_is_read_is_not_live() {
        // `out` is assigned before its read; `total` is read by `+=`; the loop's target kills
        // `x` inside the body only; `y` is read in a branch
        let live = exposed_of("out = model(a)\nprint(out)\ntotal += 1\nfor x in xs:\n    use(x)\nif c:\n    use(y)\nuse(x)\n");
        assert_eq!(live, ["a", "c", "model", "print", "total", "use", "x", "xs", "y"]);
    }

    #[test]
    fn a_name_read_in_a_nested_function_is_live() {
        let live = exposed_of("def f():\n    return out\nout = 1\n");
        assert_eq!(live, ["out"]);
    }
}
