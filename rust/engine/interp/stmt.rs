//! Statements: one statement maps one path to zero or more (`Paths`), and the definitions of
//! functions and classes (`def`, `lambda`, `class`).

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{Ctx, Flow, Interp, Paths, Vals, assigned_names};
use crate::ir::*;
use crate::value::*;

impl<'a> Interp<'a> {
    pub fn stmt(&mut self, s: &Stmt, st: State, ctx: &Ctx) -> Paths {
        if !self.tick() {
            return Vec::new();
        }
        match &s.kind {
            StmtKind::Expr(Expr { kind: ExprKind::Yield(v), .. }) if self.gen_frames.last() == Some(&true) => {
                // the generator's first element: this path ends here with it
                match v {
                    Some(v) => self.eval(v, st, ctx).into_iter().map(|(s, x)| (s, Flow::Yield(x))).collect(),
                    None => vec![(st, Flow::Yield(Value::None))],
                }
            }
            StmtKind::Expr(e) => {
                let outer = self.coverage.as_mut().map(|c| c.discarded.replace(e.span));
                let out = self.eval(e, st, ctx);
                if let (Some(c), Some(outer)) = (self.coverage.as_mut(), outer) {
                    c.discarded = outer;
                }
                Self::normal(out)
            }
            StmtKind::Assign { targets, value } => {
                self.set_label(match targets.first() {
                    // (not a local of the zoo's embedded code: `layers` of torchvision's builders
                    // is no name the user gave nor one torch knows the layer by)
                    Some(Target::Name(n, span)) if !crate::engine::modules::is_embedded(*span) => Some(n.clone()),
                    Some(Target::Attr(_, n, _)) => Some(n.clone()),
                    _ => None,
                });
                let vals = self.eval(value, st, ctx);
                self.set_label(None);
                let split = split_call(value);
                let mut out = Vec::new();
                for (st, v) in vals {
                    if let (Some(op), Value::Tuple(parts)) = (split, &v) {
                        if !self.check_unpack(&st, targets, op, parts) {
                            continue;
                        }
                    }
                    let mut states = vec![st];
                    for t in targets {
                        let mut next = Vec::new();
                        for st in states {
                            next.extend(self.assign(t, v.clone(), st, ctx));
                        }
                        states = next;
                    }
                    out.extend(states.into_iter().map(|s| (s, Flow::Normal)));
                }
                out
            }
            StmtKind::AnnAssign { target, value, .. } => match value {
                Some(value) => {
                    let vals = self.eval(value, st, ctx);
                    let mut out = Vec::new();
                    for (st, v) in vals {
                        out.extend(self.assign(target, v, st, ctx).into_iter().map(|s| (s, Flow::Normal)));
                    }
                    out
                }
                None => vec![(st, Flow::Normal)],
            },
            StmtKind::AugAssign { target, op, value } => {
                let cur = match target {
                    Target::Name(n, span) => Expr { kind: ExprKind::Name(n.clone()), span: *span },
                    _ => {
                        // evaluate the value for its effects and checks, then forget the target
                        let vals = self.eval(value, st, ctx);
                        let mut out = Vec::new();
                        for (mut st, _) in vals {
                            // (`self.pos += 1` may write into a tensor seen elsewhere)
                            st.forget_values();
                            out.extend(self.assign(target, Value::Unknown, st, ctx).into_iter().map(|s| (s, Flow::Normal)));
                        }
                        return out;
                    }
                };
                let mut out = Vec::new();
                for (st, a) in self.eval(&cur, st, ctx) {
                    for (st, b) in self.eval(value, st, ctx) {
                        for (st, r) in self.binop(*op, a.clone(), b, st, s.span, true) {
                            out.extend(self.assign(target, r, st, ctx).into_iter().map(|s| (s, Flow::Normal)));
                        }
                    }
                }
                out
            }
            StmtKind::If { test, body, orelse } => {
                let mut out = Vec::new();
                for (_, truth) in self.truth(test, st, ctx) {
                    match truth {
                        (true, st) => out.extend(self.block(body, st, ctx)),
                        (false, st) => out.extend(self.block(orelse, st, ctx)),
                    }
                }
                out
            }
            StmtKind::While { test, body, orelse } => self.while_loop(test, body, orelse, st, ctx),
            StmtKind::For { target, iter, body, orelse } if orelse.is_empty() && freeze_loop(target, iter, body).is_some() => {
                // `for p in m.parameters(): p.requires_grad = flag` is `m.requires_grad_(flag)`
                let Some((module, flag)) = freeze_loop(target, iter, body) else { return Vec::new() };
                let mut out = Vec::new();
                for (st, m) in self.eval(module, st, ctx) {
                    for (st, f) in self.eval(flag, st, ctx) {
                        // a module the core follows: its layers are marked (`m.requires_grad_`)
                        let done = if matches!(&m, Value::Ref(id) if crate::models::is_module(self, &st, *id)) {
                            let mut done = Vec::new();
                            for (st, method) in self.get_attr(st, m.clone(), &Name::from("requires_grad_"), iter.span) {
                                done.extend(self.call(method, vec![f.clone()], Vec::new(), st, s.span));
                            }
                            done
                        } else {
                            vec![(st, Value::Unknown)]
                        };
                        for (mut st, v) in done {
                            // not followed (no module, or an Unknown result): any parameter may be frozen
                            if v.is_unknown() {
                                st.forget_grads();
                                st.params_frozen = true;
                            }
                            for n in target_names(target) {
                                self.set_var(&mut st, ctx, &n, Value::Unknown);
                            }
                            out.push((st, Flow::Normal));
                        }
                    }
                }
                out
            }
            StmtKind::For { target, iter, body, orelse } => {
                // (an evaluation loop written inline is judged at its end: `eval_loops`)
                let framed = self.loop_frame_wanted();
                let before = framed.then(|| st.clone());
                if framed {
                    self.eval_frames.push(super::call::EvalFrame { def: s.span, flagged: self.flagged, ..Default::default() });
                }
                let mut out = Vec::new();
                for (st, it) in self.eval(iter, st, ctx) {
                    out.extend(self.for_loop(target, it, body, orelse, st, ctx, s.span));
                }
                if let (Some(before), Some(fr)) = (before, framed.then(|| self.eval_frames.pop()).flatten()) {
                    self.end_loop_frame(fr, s.span, target, body, &before, &out);
                }
                out
            }
            StmtKind::FunctionDef(def) => {
                let mut out = Vec::new();
                for (mut st, f) in self.make_function(def, st, ctx) {
                    let name = def.name.clone();
                    self.set_var(&mut st, ctx, &name, f);
                    out.push((st, Flow::Normal));
                }
                out
            }
            StmtKind::ClassDef(def) => self.class_def(def, st, ctx),
            StmtKind::Return(e) => match e {
                Some(e) => self.eval(e, st, ctx).into_iter().map(|(s, v)| (s, Flow::Return(v))).collect(),
                None => vec![(st, Flow::Return(Value::None))],
            },
            // A raised exception ends the path (handlers are entered from the try's start).
            StmtKind::Raise(e) => {
                if let Some(e) = e {
                    let _ = self.eval(e, st, ctx);
                }
                Vec::new()
            }
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                // Reports inside the body are suppressed only when a handler may catch what
                // torch raises; `except KeyboardInterrupt:` lets a shape error through.
                let catches = handlers.iter().any(|h| self.may_catch_torch_error(h, &st, ctx));
                let mut inner = st.clone();
                if catches {
                    inner.in_try += 1;
                }
                let mut after = Vec::new();
                for (mut s2, flow) in self.block(body, inner, ctx) {
                    if catches {
                        s2.in_try -= 1;
                    }
                    if flow == Flow::Normal {
                        after.extend(self.block(orelse, s2, ctx));
                    } else {
                        after.push((s2, flow));
                    }
                }
                // Handlers run from the try's start with everything the body assigns forgotten.
                let mut assigned = Vec::new();
                assigned_names(body, &mut assigned);
                for h in handlers {
                    let mut hs = st.clone();
                    self.tick_opaque(&mut hs, s.span, 1);
                    for n in &assigned {
                        self.set_var(&mut hs, ctx, n, Value::Unknown);
                    }
                    if let Some(n) = &h.name {
                        self.set_var(&mut hs, ctx, n, Value::Unknown);
                    }
                    after.extend(self.block(&h.body, hs, ctx));
                }
                if finalbody.is_empty() {
                    return after;
                }
                let mut out = Vec::new();
                for (s2, flow) in after {
                    for (s3, f3) in self.block(finalbody, s2, ctx) {
                        out.push((s3, if f3 == Flow::Normal { flow.clone() } else { f3 }));
                    }
                }
                out
            }
            StmtKind::With { items, body } => {
                // a grad-mode context (`with torch.no_grad():`) sets the mode of the body, and
                // the mode before the statement comes back after it (`autograd.rs`)
                let mode_before = st.grad_mode;
                let mut sets_mode = false;
                let mut states = vec![st];
                for (e, t) in items {
                    let mut next = Vec::new();
                    for st in states {
                        for (mut st, v) in self.eval(e, st, ctx) {
                            if let Some(enabled) = crate::models::torch::autograd::mode_of(&v) {
                                st.grad_mode = crate::models::torch::autograd::mode(enabled, e.span);
                                sets_mode = true;
                            }
                            let entered = match &v {
                                Value::Lib(_) | Value::LibMethod(..) => Value::Unknown,
                                _ => v.clone(),
                            };
                            match t {
                                Some(t) => next.extend(self.assign(t, entered, st, ctx)),
                                None => next.push(st),
                            }
                        }
                    }
                    states = next;
                }
                let mut out = Vec::new();
                for st in states {
                    out.extend(self.block(body, st, ctx));
                }
                if sets_mode {
                    for (st, _) in out.iter_mut() {
                        st.grad_mode = mode_before;
                    }
                }
                out
            }
            StmtKind::Assert { test, .. } => {
                // An assert refines: only the paths where it holds go on.
                let mut out = Vec::new();
                for (_, (truth, st)) in self.truth(test, st, ctx) {
                    if truth {
                        out.push((st, Flow::Normal));
                    }
                }
                out
            }
            StmtKind::Import(names) => self.import_stmt(names, st, ctx, s.span),
            StmtKind::ImportFrom { module, level, names } => self.import_from_stmt(module.as_ref(), *level, names, st, ctx, s.span),
            StmtKind::Global(_) | StmtKind::Nonlocal(_) | StmtKind::Pass => vec![(st, Flow::Normal)],
            StmtKind::Delete(ts) => {
                let mut states = vec![st];
                for t in ts {
                    let mut next = Vec::new();
                    for mut st in states {
                        match t {
                            Target::Name(n, _) => {
                                self.set_var(&mut st, ctx, n, Value::Unknown);
                                next.push(st);
                            }
                            // `del model.classifier[6]`, `del cache[key]`
                            Target::Subscript(obj, idx, _) => {
                                for (st, o) in self.eval(obj, st, ctx) {
                                    for (mut st, i) in self.eval(idx, st, ctx) {
                                        crate::models::delete_item(&mut st, &o, &i);
                                        next.push(st);
                                    }
                                }
                            }
                            // `del model.fc`: the attribute is gone (Unknown)
                            Target::Attr(obj, name, _) => {
                                for (mut st, o) in self.eval(obj, st, ctx) {
                                    self.set_attr(&mut st, &o, name, Value::Unknown);
                                    next.push(st);
                                }
                            }
                            _ => next.push(st),
                        }
                    }
                    states = next;
                }
                states.into_iter().map(|st| (st, Flow::Normal)).collect()
            }
            StmtKind::Break => vec![(st, Flow::Break)],
            StmtKind::Continue => vec![(st, Flow::Continue)],
            StmtKind::Unknown { binds } => {
                let mut st = st;
                for n in binds {
                    self.set_var(&mut st, ctx, n, Value::Unknown);
                }
                vec![(st, Flow::Normal)]
            }
        }
    }

    pub(super) fn make_function(&mut self, def: &Rc<FuncDef>, st: State, ctx: &Ctx) -> Vals {
        // defaults are evaluated at definition time
        let mut states: Vec<(State, Vec<Value>)> = vec![(st, Vec::new())];
        for p in def.params.iter().filter_map(|p| p.default.as_ref()) {
            let mut next = Vec::new();
            for (st, acc) in states {
                for (st, v) in self.eval(p, st, ctx) {
                    let mut acc = acc.clone();
                    acc.push(v);
                    next.push((st, acc));
                }
            }
            states = next;
        }
        let mut out = Vec::new();
        for (mut st, defaults) in states {
            let mut kw_defaults = Vec::new();
            for p in &def.kwonly {
                match &p.default {
                    Some(e) => {
                        let vals = self.eval(e, st.clone(), ctx);
                        match vals.into_iter().next() {
                            Some((s2, v)) => {
                                st = s2;
                                kw_defaults.push(Some(v));
                            }
                            None => kw_defaults.push(Some(Value::Unknown)),
                        }
                    }
                    None => kw_defaults.push(None),
                }
            }
            let mut kind = FuncKind::Plain;
            for d in &def.decorators {
                let name = match &d.kind {
                    ExprKind::Name(n) => n.to_string(),
                    ExprKind::Attr(_, n) => n.to_string(),
                    _ => String::new(),
                };
                kind = match name.as_str() {
                    "staticmethod" => FuncKind::Static,
                    "classmethod" => FuncKind::ClassMethod,
                    "property" | "cached_property" => FuncKind::Property,
                    _ => kind,
                };
            }
            // runtime type checkers return the function itself, checking its annotations at
            // each call (`annotations::runtime_checked`, SHP113)
            let unknown_decorator = def.decorators.iter().any(|d| {
                !crate::engine::annotations::is_type_checker(d)
                    && !matches!(&d.kind, ExprKind::Name(n) if matches!(&**n, "staticmethod" | "classmethod" | "property" | "cached_property" | "torch.no_grad"))
                    && !matches!(&d.kind, ExprKind::Attr(_, n) if matches!(&**n, "cached_property" | "no_grad" | "inference_mode" | "wraps" | "jit" | "script"))
                    && !matches!(&d.kind, ExprKind::Call { func, .. } if matches!(&func.kind, ExprKind::Attr(_, n) if matches!(&**n, "no_grad" | "inference_mode" | "wraps")))
            });
            let scope = match ctx.class_body {
                Some(_) => match st.get(ctx.scope) {
                    Obj::Scope { parent, .. } => parent.unwrap_or(ctx.scope),
                    _ => ctx.scope,
                },
                None => ctx.scope,
            };
            let clo = Closure {
                def: def.clone(),
                scope,
                defaults,
                kw_defaults,
                class: ctx.class_body,
                kind,
            };
            let v = if unknown_decorator || def.is_async { Value::Unknown } else { Value::Func(Rc::new(clo)) };
            out.push((st, v));
        }
        out
    }

    fn class_def(&mut self, def: &Rc<ClassDef>, st: State, ctx: &Ctx) -> Paths {
        let mut out = Vec::new();
        for (mut st, bases) in self.eval_list(&def.bases, st, ctx) {
            let class = st.alloc(Obj::Class { name: def.name.clone(), def: Some(def.clone()), bases, attrs: BTreeMap::new() });
            let scope = st.alloc(Obj::Scope { vars: Vars::new(), parent: Some(ctx.scope) });
            let cctx = Ctx {
                scope,
                module_scope: ctx.module_scope,
                class_body: Some(class),
                method_class: None,
                self_val: None,
                globals: Rc::new(Vec::new()),
            };
            for (mut s2, _) in self.block(&def.body, st, &cctx) {
                let vars = match s2.get(scope) {
                    Obj::Scope { vars, .. } => vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    _ => BTreeMap::new(),
                };
                if let Obj::Class { attrs, .. } = s2.get_mut(class) {
                    *attrs = vars;
                }
                let mut v = Value::Ref(class);
                for d in &def.decorators {
                    let known = matches!(&d.kind, ExprKind::Name(n) if &**n == "dataclass")
                        || matches!(&d.kind, ExprKind::Attr(_, n) if &**n == "dataclass")
                        || matches!(&d.kind, ExprKind::Call { func, .. } if matches!(&func.kind, ExprKind::Name(n) | ExprKind::Attr(_, n) if &**n == "dataclass"));
                    if known {
                        if let Obj::Class { attrs, .. } = s2.get_mut(class) {
                            attrs.insert(Rc::from("__dataclass__"), Value::Bool(true));
                        }
                    } else {
                        v = Value::Unknown;
                    }
                }
                self.set_var(&mut s2, ctx, &def.name, v);
                out.push((s2, Flow::Normal));
            }
        }
        out
    }
}

pub(super) fn collect_globals(body: &[Stmt], out: &mut Vec<Name>) {
    for s in body {
        match &s.kind {
            StmtKind::Global(names) => out.extend(names.iter().cloned()),
            StmtKind::If { body, orelse, .. } | StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                collect_globals(body, out);
                collect_globals(orelse, out);
            }
            StmtKind::With { body, .. } => collect_globals(body, out),
            StmtKind::Try { body, handlers, orelse, finalbody } => {
                collect_globals(body, out);
                handlers.iter().for_each(|h| collect_globals(&h.body, out));
                collect_globals(orelse, out);
                collect_globals(finalbody, out);
            }
            _ => {}
        }
    }
}

/// The method of a call that splits a tensor into a tuple of pieces (`x.chunk(2)`,
/// `torch.split(x, 1)`), whose count the model knows exactly when it returns a tuple of tensors.
fn split_call(e: &Expr) -> Option<&str> {
    let ExprKind::Call { func, .. } = &e.kind else { return None };
    let ExprKind::Attr(_, name) = &func.kind else { return None };
    const SPLITS: &[&str] = &["chunk", "split", "tensor_split", "unbind", "split_with_sizes", "hsplit", "vsplit", "dsplit", "unsafe_chunk", "unsafe_split"];
    SPLITS.iter().copied().find(|s| **s == **name)
}

impl Interp<'_> {
    /// Unpacking the pieces of a split into a tuple target without a star: Python raises
    /// `ValueError` when the number of names differs from the number of pieces (SHP110).
    /// False when the path ends here.
    fn check_unpack(&mut self, st: &State, targets: &[Target], op: &str, parts: &[Value]) -> bool {
        if !parts.iter().all(|p| matches!(p, Value::Tensor(_))) {
            return true;
        }
        for t in targets {
            if let Target::Tuple(items, None, span) = t {
                if items.len() != parts.len() {
                    let (count, names) = (parts.len(), items.len());
                    let rule = <crate::rules::shape::IndexOutOfRange as crate::rules::violation::Violation>::RULE;
                    self.check(st, *span, crate::shape::Tri::True, rule, |_| {
                        let v = crate::rules::shape::IndexOutOfRange::Unpack { op: op.into(), count: count.to_string(), names: names.to_string() };
                        (crate::rules::violation::Violation::message(&v), Vec::new())
                    });
                    return false;
                }
            }
        }
        true
    }
}

/// Builtin exceptions that are neither raised by torch for a shape error nor a base of one it
/// raises (`RuntimeError`, `ValueError`, `IndexError`, `TypeError`, `AssertionError`,
/// `NotImplementedError`, and their bases `LookupError`, `Exception`, `BaseException`).
/// A handler that catches only these lets every report of its `try` body through.
const NOT_TORCH_ERRORS: &[&str] = &[
    "KeyboardInterrupt", "SystemExit", "GeneratorExit", "StopIteration", "StopAsyncIteration",
    "OSError", "IOError", "EnvironmentError", "FileNotFoundError", "FileExistsError", "PermissionError",
    "IsADirectoryError", "NotADirectoryError", "InterruptedError", "ChildProcessError", "BlockingIOError",
    "ConnectionError", "BrokenPipeError", "ConnectionAbortedError", "ConnectionRefusedError",
    "ConnectionResetError", "TimeoutError", "ProcessLookupError", "ImportError", "ModuleNotFoundError",
    "KeyError", "AttributeError", "NameError", "UnboundLocalError", "ZeroDivisionError", "ArithmeticError",
    "OverflowError", "FloatingPointError", "MemoryError", "EOFError",
];

impl Interp<'_> {
    /// May the handler catch an error torch raises for a shape bug? True for a bare `except:`,
    /// for any name outside `NOT_TORCH_ERRORS` (the errors torch raises, their bases, a name the
    /// script binds itself, an attribute such as `torch.cuda.OutOfMemoryError`, anything not
    /// resolved), and for a tuple with one such item.
    pub(super) fn may_catch_torch_error(&self, h: &Handler, st: &State, ctx: &Ctx) -> bool {
        let Some(t) = &h.type_ else { return true };
        let names: Vec<&Expr> = match &t.kind {
            ExprKind::Tuple(items) => items.iter().collect(),
            _ => vec![t],
        };
        names.iter().any(|e| match &e.kind {
            ExprKind::Name(n) => !NOT_TORCH_ERRORS.contains(&&**n) || self.lookup_bound(st, ctx, n).is_some(),
            _ => true,
        })
    }
}

/// `for p in m.parameters(): p.requires_grad = flag` (or `p.requires_grad_(flag)`): the module
/// expression `m` and the flag.
fn freeze_loop<'e>(target: &Target, iter: &'e Expr, body: &'e [Stmt]) -> Option<(&'e Expr, &'e Expr)> {
    let Target::Name(p, _) = target else { return None };
    let ExprKind::Call { func, args, kwargs } = &iter.kind else { return None };
    let ExprKind::Attr(module, method) = &func.kind else { return None };
    if &**method != "parameters" || !args.is_empty() || !kwargs.is_empty() {
        return None;
    }
    let is_p = |e: &Expr| matches!(&e.kind, ExprKind::Name(n) if n == p);
    let flag = match &body {
        [Stmt { kind: StmtKind::Assign { targets, value }, .. }] => match &targets[..] {
            [Target::Attr(obj, name, _)] if &**name == "requires_grad" && is_p(obj) => value,
            _ => return None,
        },
        [Stmt { kind: StmtKind::Expr(Expr { kind: ExprKind::Call { func, args, kwargs }, .. }), .. }] => match (&func.kind, &args[..]) {
            (ExprKind::Attr(obj, name), [a]) if &**name == "requires_grad_" && is_p(obj) && kwargs.is_empty() && !a.star => &a.value,
            _ => return None,
        },
        _ => return None,
    };
    Some((module, flag))
}

fn target_names(t: &Target) -> Vec<Name> {
    let mut out = Vec::new();
    t.bound_names(&mut out);
    out
}
