//! Loops: a `for` over known items, or a `while` whose test the facts decide, is unrolled up
//! to `UNROLL` iterations; other loops run one generalised iteration, after which every name
//! the body assigns is unknown.
//! Also what a loop assigns (`assigned_names`) and whether it can leave early
//! (`leaves_early`, with its helper `returns_or_raises`, which serves it alone and so lives
//! here rather than with the statements).

use std::rc::Rc;

use super::{Ctx, Flow, Interp, Paths, merge};
use crate::ir::*;
use crate::models::torch;
use crate::models;
use crate::rules::events::{Event, EventKind};
use crate::value::*;

pub const UNROLL: usize = 512;

impl<'a> Interp<'a> {
    pub(super) fn while_loop(&mut self, test: &Expr, body: &[Stmt], orelse: &[Stmt], st: State, ctx: &Ctx) -> Paths {
        let mut out = Vec::new();
        let mut live = vec![st];
        for _ in 0..UNROLL {
            let mut next = Vec::new();
            for st in live {
                for (opaque, (truth, st)) in self.truth(test, st, ctx) {
                    if !truth {
                        out.extend(self.block(orelse, st, ctx));
                        continue;
                    }
                    if opaque {
                        // unknown trip count: one generalised iteration
                        out.extend(self.generalised_iteration(body, st, ctx, &[]));
                        continue;
                    }
                    self.iteration(body, st, ctx, &mut next, &mut out);
                }
            }
            live = merge(next, self.settings.prune);
            self.note_paths(live.len() + out.len());
            if live.is_empty() || self.abandoned {
                return out;
            }
        }
        // budget: the remaining iterations run generalised
        for st in live {
            out.extend(self.generalised_iteration(body, st, ctx, &[]));
        }
        out
    }

    /// One unrolled iteration: paths that go on looping go to `next`, the others to `out`.
    fn iteration(&mut self, body: &[Stmt], st: State, ctx: &Ctx, next: &mut Vec<State>, out: &mut Paths) {
        for (s2, flow) in self.block(body, st, ctx) {
            match flow {
                Flow::Normal | Flow::Continue => {
                    if self.wants(EventKind::LoopBackEdge) {
                        let span = body.first().map(|s| s.span).unwrap_or_default();
                        self.emit(&Event::LoopBackEdge { span }, &s2, span);
                    }
                    next.push(s2)
                }
                Flow::Break => out.push((s2, Flow::Normal)),
                f @ (Flow::Return(_) | Flow::Yield(_)) => out.push((s2, f)),
            }
        }
    }

    /// Run `body` once from `st`, then forget everything it assigns (and `also`).
    fn generalised_iteration(&mut self, body: &[Stmt], st: State, ctx: &Ctx, also: &[Name]) -> Paths {
        let mut assigned = also.to_vec();
        assigned_names(body, &mut assigned);
        let mut out = Vec::new();
        for (mut s2, flow) in self.block(body, st, ctx) {
            if let Flow::Return(_) | Flow::Yield(_) = flow {
                out.push((s2, flow));
                continue;
            }
            if matches!(flow, Flow::Normal | Flow::Continue) && self.wants(EventKind::LoopBackEdge) {
                let span = body.first().map(|s| s.span).unwrap_or_default();
                self.emit(&Event::LoopBackEdge { span }, &s2, span);
            }
            for n in &assigned {
                self.set_var(&mut s2, ctx, n, Value::Unknown);
            }
            out.push((s2, Flow::Normal));
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn for_loop(&mut self, target: &Target, it: Value, body: &[Stmt], orelse: &[Stmt], st: State, ctx: &Ctx, span: Span) -> Paths {
        let mut st = st;
        let items = self.iterate(&mut st, &it, span);
        match items {
            Some(items) if items.len() <= UNROLL => {
                let mut out = Vec::new();
                let mut live = vec![st];
                for item in items {
                    let mut next = Vec::new();
                    for st in live {
                        for st in self.assign(target, item.clone(), st, ctx) {
                            self.iteration(body, st, ctx, &mut next, &mut out);
                        }
                    }
                    live = merge(next, self.settings.prune);
                    self.note_paths(live.len() + out.len());
                    if live.is_empty() || self.abandoned {
                        return out;
                    }
                }
                for st in live {
                    out.extend(self.block(orelse, st, ctx));
                }
                out
            }
            _ => {
                // A loop that cannot leave early sees every batch of a DataLoader, the last,
                // smaller one included: that batch is a second path.
                let full_run = !leaves_early(body);
                let elems = match torch::data::batches_of(self, &st, &it, full_run) {
                    Some(elems) => elems,
                    None => {
                        let elem = self.element_of(&mut st, &it);
                        vec![(st, elem)]
                    }
                };
                let mut target_names = Vec::new();
                target.bound_names(&mut target_names);
                let mut out = Vec::new();
                for (st, elem) in elems {
                    for st in self.assign(target, elem, st, ctx) {
                        out.extend(self.generalised_iteration(body, st, ctx, &target_names));
                    }
                }
                out
            }
        }
    }

    /// The items of an iterable when they are known.
    pub fn iterate(&mut self, st: &mut State, it: &Value, _span: Span) -> Option<Vec<Value>> {
        match it {
            Value::Tuple(items) => Some(items.as_ref().clone()),
            Value::Ref(id) => match st.get(*id) {
                Obj::List(items) => Some(items.clone()),
                Obj::Dict(items) => Some(items.iter().map(|(k, _)| k.clone()).collect()),
                Obj::Container { kind: ContainerKind::ModuleDict, items, .. } => {
                    Some(items.iter().map(|(k, _)| k.clone().map(|k| Value::Str(Some(k))).unwrap_or(Value::Unknown)).collect())
                }
                Obj::Container { items, .. } => Some(items.iter().map(|(_, v)| v.clone()).collect()),
                _ => None,
            },
            Value::Range(a, b, step) => {
                let (a, b, s) = (a.as_const()?, b.as_const()?, step.as_const()?);
                if s == 0 {
                    return None;
                }
                let n = if s > 0 { (b - a + s - 1).div_euclid(s) } else { (a - b - s - 1).div_euclid(-s) };
                if n > UNROLL as i128 {
                    return None;
                }
                Some((0..n.max(0)).map(|i| Value::int(a + i * s)).collect())
            }
            Value::Str(Some(s)) if s.chars().count() <= UNROLL => {
                Some(s.chars().map(|c| Value::Str(Some(Rc::from(c.to_string())))).collect())
            }
            _ => None,
        }
    }

    /// A sound abstraction of one element of an iterable of unknown length.
    pub(super) fn element_of(&mut self, st: &mut State, it: &Value) -> Value {
        match it {
            Value::Gen(..) => self.first_yield(st, it, Span::default()).unwrap_or(Value::Unknown),
            _ => models::element_of(self, st, it),
        }
    }
}

/// Names assigned anywhere in a block (not in nested functions or classes).
pub fn assigned_names(body: &[Stmt], out: &mut Vec<Name>) {
    for s in body {
        match &s.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| t.bound_names(out)),
            StmtKind::AugAssign { target, .. } | StmtKind::AnnAssign { target, .. } => target.bound_names(out),
            StmtKind::For { target, body, orelse, .. } => {
                target.bound_names(out);
                assigned_names(body, out);
                assigned_names(orelse, out);
            }
            StmtKind::While { body, orelse, .. } | StmtKind::If { body, orelse, .. } => {
                assigned_names(body, out);
                assigned_names(orelse, out);
            }
            StmtKind::With { items, body } => {
                items.iter().filter_map(|(_, t)| t.as_ref()).for_each(|t| t.bound_names(out));
                assigned_names(body, out);
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                assigned_names(body, out);
                handlers.iter().for_each(|h| assigned_names(&h.body, out));
                assigned_names(orelse, out);
                assigned_names(finalbody, out);
            }
            StmtKind::FunctionDef(f) => out.push(f.name.clone()),
            StmtKind::ClassDef(c) => out.push(c.name.clone()),
            StmtKind::Unknown { binds } => out.extend(binds.iter().cloned()),
            StmtKind::Import(names) => {
                for (d, a) in names {
                    out.push(a.clone().unwrap_or_else(|| Rc::from(d.split('.').next().unwrap_or(d))));
                }
            }
            StmtKind::ImportFrom { names, .. } => {
                for (n, a) in names {
                    out.push(a.clone().unwrap_or_else(|| n.clone()));
                }
            }
            _ => {}
        }
        // walrus targets inside expressions are rare in loops; not tracked
    }
}

/// Can the loop body leave the loop before the iterable is exhausted (`break`, `return`,
/// `raise`, or a call that may exit)? Nested loops' own `break`s do not count.
fn leaves_early(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Break | StmtKind::Return(_) | StmtKind::Raise(_) => true,
        StmtKind::If { body, orelse, .. } => leaves_early(body) || leaves_early(orelse),
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            leaves_early(body) || handlers.iter().any(|h| leaves_early(&h.body)) || leaves_early(orelse) || leaves_early(finalbody)
        }
        StmtKind::With { body, .. } => leaves_early(body),
        StmtKind::For { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
            // a `return`/`raise` inside a nested loop leaves ours too
            returns_or_raises(body) || leaves_early(orelse)
        }
        StmtKind::Expr(Expr { kind: ExprKind::Call { func, .. }, .. }) => {
            matches!(&func.kind, ExprKind::Name(n) if matches!(&**n, "exit" | "quit"))
                || matches!(&func.kind, ExprKind::Attr(_, n) if &**n == "exit")
        }
        _ => false,
    })
}

fn returns_or_raises(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Return(_) | StmtKind::Raise(_) => true,
        StmtKind::If { body, orelse, .. } | StmtKind::For { body, orelse, .. } | StmtKind::While { body, orelse, .. } => {
            returns_or_raises(body) || returns_or_raises(orelse)
        }
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            returns_or_raises(body) || handlers.iter().any(|h| returns_or_raises(&h.body)) || returns_or_raises(orelse) || returns_or_raises(finalbody)
        }
        StmtKind::With { body, .. } => returns_or_raises(body),
        _ => false,
    })
}
