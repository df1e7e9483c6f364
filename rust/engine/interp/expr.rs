//! Expressions: one expression maps one path to zero or more paths with a value (`Vals`);
//! conditions (`truth`, `split`: a symbolic condition forks into branches, an opaque one into
//! tainted paths); comprehensions; and the values of constants, builtins and imports.

use std::rc::Rc;

use super::{Ctx, Interp, UNROLL, Vals, merge_vals};
use crate::ir::*;
use crate::models::torch;
use crate::models;
use crate::shape::{Poly, Rel, Tri};
use crate::value::*;

impl<'a> Interp<'a> {
    /// Evaluate a test and split the paths by its truth: `(opaque, (truth, state))`.
    pub fn truth(&mut self, test: &Expr, st: State, ctx: &Ctx) -> Vec<(bool, (bool, State))> {
        if let ExprKind::BoolOp { is_and, values } = &test.kind {
            if !values.is_empty() {
                return self.bool_truth(*is_and, values, st, ctx);
            }
        }
        let mut out = Vec::new();
        for (st, v) in self.eval(test, st, ctx) {
            out.extend(self.split_test(test, v, st, ctx));
        }
        out
    }

    /// [`Interp::split`] of the value of `test`: an opaque test the path took before, of a
    /// value unchanged since, is decided as it was (`taken`); one it did not is remembered.
    fn split_test(&mut self, test: &Expr, v: Value, st: State, ctx: &Ctx) -> Vec<(bool, (bool, State))> {
        let truth = self.truthiness(&st, &v);
        if matches!(v, Value::Cond(_)) || truth != Tri::Unknown {
            return self.split_as(truth, v, st, test.span);
        }
        let Some(k) = self.test_key(test, &st, ctx) else { return self.split_as(truth, v, st, test.span) };
        if let Some(side) = self.recall(&st, &k) {
            return vec![(true, (side, st))];
        }
        let mut out = self.split_as(truth, v, st, test.span);
        self.forked(&k, test.span);
        for (_, (side, s)) in out.iter_mut() {
            self.remember(s, &k, *side);
        }
        out
    }

    /// The truth of `a and b and ...` (`a or b or ...`) from the truth of each operand: a
    /// falsy (truthy) operand decides it. The operator's value would lose that: an opaque
    /// `a` that is falsy is the value of `a and b`, and still unknown.
    ///
    /// A decided rest short-circuits an undecided `a` (issue 10): in `x.is_cuda and ngpu > 1`
    /// with `ngpu == 1`, the path where `a` is truthy evaluates `b` (its checks and reads
    /// happen there only) and finds it falsy, so the whole is falsy on both sides of `a`: one
    /// path, as before the split of `a`, when evaluating the rest changed nothing.
    fn bool_truth(&mut self, is_and: bool, values: &[Expr], st: State, ctx: &Ctx) -> Vec<(bool, (bool, State))> {
        let Some((first, rest)) = values.split_first() else { return Vec::new() };
        // the splits of `first`, each with the state it was split from, if `first` was
        // evaluated as a value here
        let groups: Vec<(Option<State>, Vec<(bool, (bool, State))>)> = match &first.kind {
            ExprKind::BoolOp { .. } => vec![(None, self.truth(first, st, ctx))],
            _ => self.eval(first, st, ctx).into_iter().map(|(st, v)| (Some(st.clone()), self.split_test(first, v, st, ctx))).collect(),
        };
        let mut out = Vec::new();
        for (pre, sides) in groups {
            let forked = sides.len() > 1;
            let mut group = Vec::new();
            // whether every continuing side decided the whole as a stopping side does, changing
            // nothing but the branch of `first` it took
            let mut decided = forked && !rest.is_empty();
            let mut continued = 0;
            for (opaque, (truth, st)) in sides {
                if rest.is_empty() || truth != is_and {
                    group.push((opaque, (truth, st)));
                } else {
                    for (o2, (t2, st2)) in self.bool_truth(is_and, rest, st.clone(), ctx) {
                        continued += 1;
                        decided &= !o2 && t2 != is_and && left_as_it_was(&st2, &st);
                        group.push((opaque || o2, (t2, st2)));
                    }
                }
            }
            match pre {
                Some(pre) if decided && continued > 0 && group.iter().all(|(_, (t, _))| *t != is_and) => out.push((false, (!is_and, pre))),
                _ => out.extend(group),
            }
        }
        out
    }

    pub fn split(&mut self, v: Value, st: State, span: Span) -> Vec<(bool, (bool, State))> {
        let truth = self.truthiness(&st, &v);
        self.split_as(truth, v, st, span)
    }

    /// [`Interp::split`] of `v`, whose truthiness on `st` is `truth`.
    fn split_as(&mut self, truth: Tri, v: Value, st: State, span: Span) -> Vec<(bool, (bool, State))> {
        match truth {
            Tri::True => vec![(false, (true, st))],
            Tri::False => vec![(false, (false, st))],
            Tri::Unknown => {
                if let Value::Cond(c) = &v {
                    // the same test taken earlier on this path (`if n > h * d:` twice: the facts
                    // do not hold a product's range)
                    match st.branch_decides(c) {
                        Tri::True => return vec![(false, (true, st))],
                        Tri::False => return vec![(false, (false, st))],
                        Tri::Unknown => {}
                    }
                    let mut out = Vec::new();
                    for (c, side) in [(Some(c.clone()), true), (c.negate(), false)] {
                        let Some(c) = c else { continue };
                        let mut s = st.clone();
                        if s.facts.assume(&self.syms, &c) {
                            s.branches.push(Branch::Sym(c));
                            out.push((false, (side, s)));
                        }
                    }
                    return out;
                }
                let mut a = st.clone();
                let mut b = st;
                self.tick_opaque(&mut a, span, 1);
                self.tick_opaque(&mut b, span, 0);
                vec![(true, (true, a)), (true, (false, b))]
            }
        }
    }

    /// (coverage) A name read: its value flows in; a name bound nowhere is an origin.
    fn cover_name(&mut self, st: &State, span: Span, v: Option<&Value>) {
        let Some(c) = self.coverage.as_mut() else { return };
        match v {
            Some(v) => c.read(crate::engine::coverage::flags(st, v)),
            None => c.origin(crate::engine::coverage::UNKNOWN, "a name bound nowhere the analysis saw".into(), span),
        }
    }

    /// (coverage) An attribute or item of an object, a tuple or `super()` is a stored value:
    /// what was stored was made elsewhere.
    fn cover_stored(&mut self, o: &Value) {
        if let Some(c) = self.coverage.as_mut()
            && matches!(o, Value::Ref(_) | Value::Tuple(_) | Value::Super(..))
        {
            c.stored();
        }
    }

    pub fn truthiness(&self, st: &State, v: &Value) -> Tri {
        match v {
            Value::None => Tri::False,
            Value::Bool(b) => Tri::from_bool(*b),
            Value::Int(p) => match p.as_const() {
                Some(c) => Tri::from_bool(c != 0),
                None => st.facts.compare(&self.syms, p, Rel::Ne, &Poly::constant(0)),
            },
            Value::Float(Some(f)) => Tri::from_bool(*f != 0.0),
            Value::Str(Some(s)) => Tri::from_bool(!s.is_empty()),
            Value::Tuple(t) => Tri::from_bool(!t.is_empty()),
            Value::Cond(c) => st.facts.decide(&self.syms, c),
            Value::Ref(id) => match st.get(*id) {
                Obj::List(l) => Tri::from_bool(!l.is_empty()),
                Obj::Dict(d) => {
                    if d.iter().any(|(k, _)| k.is_unknown()) { Tri::Unknown } else { Tri::from_bool(!d.is_empty()) }
                }
                Obj::Container { items, .. } => Tri::from_bool(!items.is_empty()),
                // what `torch.load` gave back: maybe an empty dict, a zero, None
                Obj::Namespace { kind, .. } if &**kind == crate::models::torch::checkpoint::CHECKPOINT => Tri::Unknown,
                // a NumPy array (or scalar): its values decide (and one of several raises)
                Obj::Namespace { kind, .. } if &**kind == crate::models::numpy::ARRAY => Tri::Unknown,
                _ => Tri::True,
            },
            Value::Func(_) | Value::Bound(..) | Value::Lib(_) | Value::Builtin(_) | Value::DType(_) => Tri::True,
            Value::Range(a, b, _) => match (a.as_const(), b.as_const()) {
                (Some(a), Some(b)) => Tri::from_bool(b > a),
                _ => Tri::Unknown,
            },
            _ => Tri::Unknown,
        }
    }

    pub fn eval_list(&mut self, es: &[Expr], st: State, ctx: &Ctx) -> Vec<(State, Vec<Value>)> {
        let mut acc: Vec<(State, Vec<Value>)> = vec![(st, Vec::with_capacity(es.len()))];
        for e in es {
            let mut next = Vec::new();
            for (st, mut vs) in acc {
                let results = self.eval(e, st, ctx);
                let n = results.len();
                for (i, (st, v)) in results.into_iter().enumerate() {
                    // the items so far: moved into the last outcome (as a rule the only one),
                    // copied for the others (a copy per item made a long literal quadratic)
                    let mut vs2 = if i + 1 == n { std::mem::take(&mut vs) } else { vs.clone() };
                    if let ExprKind::Starred(_) = e.kind {
                        // splice *iterable
                        let mut st = st;
                        match self.iterate(&mut st, &v, e.span) {
                            Some(items) => vs2.extend(items),
                            None => {
                                next.push((st, vec![Value::Unknown; 0]).clone());
                                // unknown splice: mark the whole list unknown
                                if let Some(last) = next.last_mut() {
                                    last.1 = vec![Value::Unknown];
                                    last.1.insert(0, Value::Str(Some(Rc::from("<unknown splice>"))));
                                }
                                continue;
                            }
                        }
                        next.push((st, vs2));
                    } else {
                        vs2.push(v);
                        next.push((st, vs2));
                    }
                }
            }
            // the outcomes of the items multiply (`f"{g.a} {g.b} ..."` with properties of a
            // few outcomes each): past half the path budget they are joined
            let Some(joined) = self.bound_items(next.into_iter().map(|(st, vs)| (st, Some(vs))).collect(), e.span) else {
                return Vec::new();
            };
            acc = joined.into_iter().map(|(st, vs)| (st, vs.unwrap_or_else(|| vec![Value::Str(Some(Rc::from("<unknown splice>"))), Value::Unknown]))).collect();
        }
        acc
    }

    /// `e` evaluated on `st` when it is a name or a constant, which take one step as `eval`
    /// counts them and never fork (no list of outcomes to build): `Some(None)` when the step
    /// budget is spent (`eval` then gives no outcome); `None` for any other expression.
    pub(super) fn eval_leaf(&mut self, e: &Expr, st: &State, ctx: &Ctx) -> Option<Option<Value>> {
        let v = match &e.kind {
            ExprKind::Name(n) => {
                if !self.tick() {
                    return Some(None);
                }
                let v = self.lookup_named(st, ctx, n);
                self.cover_name(st, e.span, v.as_ref());
                v.unwrap_or(Value::Unknown)
            }
            ExprKind::Const(c) => {
                if !self.tick() {
                    return Some(None);
                }
                const_value(c)
            }
            _ => return None,
        };
        Some(Some(v))
    }

    /// The outcomes of `e` on `st`: a name or a constant without a list (`eval_leaf`).
    pub(super) fn eval_one_or_many(&mut self, e: &Expr, st: State, ctx: &Ctx) -> Result<Option<(State, Value)>, Vals> {
        match self.eval_leaf(e, &st, ctx) {
            Some(v) => {
                if let (Some(v), true) = (&v, self.span_log.is_some()) {
                    self.log_span(&st, e.span, None, v);
                }
                Ok(v.map(|v| (st, v)))
            }
            None => Err(self.eval(e, st, ctx)),
        }
    }

    /// `eval_one_or_many` as an iterator over the outcomes.
    pub(super) fn eval_outs(&mut self, e: &Expr, st: State, ctx: &Ctx) -> Outs {
        match self.eval_one_or_many(e, st, ctx) {
            Ok(one) => OneOrMany::One(one),
            Err(many) => OneOrMany::Many(many.into_iter()),
        }
    }

    pub fn eval(&mut self, e: &Expr, st: State, ctx: &Ctx) -> Vals {
        if let Some(c) = self.coverage.as_mut() {
            c.enter();
        }
        let out = self.eval_kind(e, st, ctx);
        if let Some(c) = self.coverage.as_mut() {
            c.leave(e, &out);
        }
        if self.span_log.is_some() && !matches!(e.kind, ExprKind::Const(_)) {
            for (st, v) in &out {
                self.log_span(st, e.span, None, v);
            }
        }
        out
    }

    fn eval_kind(&mut self, e: &Expr, st: State, ctx: &Ctx) -> Vals {
        if !self.tick() {
            return Vec::new();
        }
        match &e.kind {
            ExprKind::Name(n) => {
                let v = self.lookup_named(&st, ctx, n);
                self.cover_name(&st, e.span, v.as_ref());
                vec![(st, v.unwrap_or(Value::Unknown))]
            }
            ExprKind::Const(c) => vec![(st, const_value(c))],
            ExprKind::Attr(obj, name) => match self.eval_one_or_many(obj, st, ctx) {
                Ok(Some((st, o))) => {
                    self.cover_stored(&o);
                    self.get_attr(st, o, name, e.span)
                }
                Ok(None) => Vec::new(),
                Err(objs) => {
                    let mut out = Vec::new();
                    for (st, o) in objs {
                        self.cover_stored(&o);
                        out.extend(self.get_attr(st, o, name, e.span));
                    }
                    out
                }
            },
            // `globals()[name]` (a class looked up by the name a config gives): the module's
            // variable, when the name is known (`globals()` itself stays not known)
            ExprKind::Subscript(obj, idx)
                if matches!(&obj.kind, ExprKind::Call { func, args, kwargs } if args.is_empty() && kwargs.is_empty() && matches!(&func.kind, ExprKind::Name(n) if &**n == "globals"))
                    && self.lookup_bound(&st, ctx, "globals").is_none() =>
            {
                self.eval(idx, st, ctx)
                    .into_iter()
                    .map(|(st, k)| {
                        let v = match (&k, st.get_var(ctx.module_scope, k.as_str().unwrap_or(""))) {
                            (Value::Str(Some(k)), Obj::Scope { vars, .. }) => vars.get(&**k).cloned().unwrap_or(Value::Unknown),
                            _ => Value::Unknown,
                        };
                        (st, v)
                    })
                    .collect()
            }
            ExprKind::Subscript(obj, idx) => {
                let mut out = Vec::new();
                for (st, o) in self.eval(obj, st, ctx) {
                    self.cover_stored(&o);
                    for (st, i) in self.eval(idx, st, ctx) {
                        out.extend(self.subscript(st, o.clone(), i, e.span));
                    }
                }
                out
            }
            ExprKind::Slice(a, b, c) => {
                // bounds left out are None
                let mut results: Vec<(State, Vec<Value>)> = vec![(st, Vec::new())];
                for part in [a, b, c] {
                    let mut next = Vec::new();
                    for (st, vs) in results {
                        let vals = match part {
                            Some(p) => self.eval(p, st, ctx),
                            None => vec![(st, Value::None)],
                        };
                        for (st, v) in vals {
                            let mut vs = vs.clone();
                            vs.push(v);
                            next.push((st, vs));
                        }
                    }
                    results = next;
                }
                results.into_iter().map(|(s, vs)| (s, Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from("<slice>"))), vs[0].clone(), vs[1].clone(), vs[2].clone()])))).collect()
            }
            ExprKind::Call { func, args, kwargs } => self.eval_call(func, args, kwargs, st, ctx, e.span),
            ExprKind::BinOp(op, a, b) => {
                let mut out = Vec::new();
                // a name or a constant on either side: no list of outcomes for it
                let xs = match self.eval_one_or_many(a, st, ctx) {
                    Ok(Some((st, x))) => {
                        match self.eval_one_or_many(b, st, ctx) {
                            Ok(Some((st, y))) => return self.binop(*op, x, y, st, e.span, false),
                            Ok(None) => {}
                            Err(ys) => {
                                for (st, y) in ys {
                                    out.extend(self.binop(*op, x.clone(), y, st, e.span, false));
                                }
                            }
                        }
                        return out;
                    }
                    Ok(None) => return out,
                    Err(xs) => xs,
                };
                for (st, x) in xs {
                    for (st, y) in self.eval(b, st, ctx) {
                        out.extend(self.binop(*op, x.clone(), y, st, e.span, false));
                    }
                }
                out
            }
            ExprKind::UnaryOp(op, a) => {
                let mut out = Vec::new();
                for (st, x) in self.eval(a, st, ctx) {
                    let v = match op {
                        UnaryOp::Not => match self.truthiness(&st, &x) {
                            Tri::True => Value::Bool(false),
                            Tri::False => Value::Bool(true),
                            Tri::Unknown => match &x {
                                Value::Cond(c) => c.negate().map(Value::Cond).unwrap_or(Value::Unknown),
                                _ => Value::Unknown,
                            },
                        },
                        UnaryOp::Neg => match &x {
                            Value::Int(p) => p.neg().map(Value::Int).unwrap_or(Value::Unknown),
                            Value::Bool(b) => Value::int(-(*b as i128)),
                            Value::Float(f) => Value::Float(f.map(|f| -f)),
                            // torch does not negate bool tensors (SHP202)
                            Value::Tensor(_) => {
                                if !crate::models::torch::dtype::check_not_bool_subtraction(self, &st, "unary `-`", &[&x], e.span) {
                                    continue;
                                }
                                x.clone()
                            }
                            _ => Value::Unknown,
                        },
                        UnaryOp::Pos => x.clone(),
                        UnaryOp::Invert => match &x {
                            Value::Int(p) => p.neg().and_then(|p| p.add_const(-1)).map(Value::Int).unwrap_or(Value::Unknown),
                            // torch inverts integer and bool tensors only (SHP202)
                            Value::Tensor(t) => {
                                if !crate::models::torch::dtype::check_integral(self, &st, "`~`", t, e.span) {
                                    continue;
                                }
                                x.clone()
                            }
                            _ => Value::Unknown,
                        },
                    };
                    out.push((st, v));
                }
                out
            }
            ExprKind::BoolOp { is_and, values } => self.bool_op(*is_and, values, st, ctx),
            ExprKind::Compare(first, rest) => self.compare(first, rest, st, ctx),
            ExprKind::IfExp { test, body, orelse } => {
                let mut out = Vec::new();
                for (_, (truth, st)) in self.truth(test, st, ctx) {
                    out.extend(self.eval(if truth { body } else { orelse }, st, ctx));
                }
                merge_vals(out, self.settings.prune)
            }
            ExprKind::Tuple(items) => {
                self.eval_list(items, st, ctx).into_iter().map(|(s, vs)| (s, tuple_or_unknown(vs))).collect()
            }
            ExprKind::List(items) | ExprKind::Set(items) => {
                let is_list = matches!(e.kind, ExprKind::List(_));
                self.eval_list(items, st, ctx)
                    .into_iter()
                    .map(|(mut s, vs)| {
                        if is_splice_unknown(&vs) {
                            return (s, Value::Unknown);
                        }
                        // a set literal of known strings or ints: its distinct members
                        let vs = if is_list { Some(vs) } else { models::builtins::distinct(vs) };
                        let Some(vs) = vs else { return (s, Value::Unknown) };
                        let id = s.alloc(Obj::List(vs));
                        (s, Value::Ref(id))
                    })
                    .collect()
            }
            ExprKind::Dict(items) => {
                // the pairs so far, flat (`k1, v1, k2, v2, ...`) so that paths past half the
                // budget join item by item; `None`: not known pair by pair (an unknown `**d`,
                // or joined paths that disagreed on the keys)
                let mut acc: Vec<(State, Option<Vec<Value>>)> = vec![(st, Some(Vec::new()))];
                for (k, v) in items {
                    let mut next = Vec::new();
                    for (st, kv) in acc {
                        match k {
                            Some(k) => {
                                for (st, kk) in self.eval(k, st, ctx) {
                                    for (st, vv) in self.eval(v, st, ctx) {
                                        let kv = kv.clone().map(|mut kv| {
                                            put_pair(&mut kv, kk.clone(), vv);
                                            kv
                                        });
                                        next.push((st, kv));
                                    }
                                }
                            }
                            None => {
                                for (st, d) in self.eval(v, st, ctx) {
                                    let kv = match (kv.clone(), &d) {
                                        (Some(mut kv), Value::Ref(id)) => match st.get(*id) {
                                            Obj::Dict(items) => {
                                                for (k2, v2) in items {
                                                    put_pair(&mut kv, k2.clone(), v2.clone());
                                                }
                                                Some(kv)
                                            }
                                            _ => None,
                                        },
                                        _ => None,
                                    };
                                    next.push((st, kv));
                                }
                            }
                        }
                    }
                    let Some(joined) = self.bound_items(next, v.span) else {
                        return Vec::new();
                    };
                    acc = joined;
                }
                acc.into_iter()
                    .map(|(mut s, kv)| match kv {
                        Some(kv) => {
                            let pairs = kv.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
                            let id = s.alloc(Obj::Dict(pairs));
                            (s, Value::Ref(id))
                        }
                        None => (s, Value::Unknown),
                    })
                    .collect()
            }
            ExprKind::Comp { kind, elt, value, generators } => self.comprehension(*kind, elt, value.as_deref(), generators, st, ctx),
            ExprKind::Lambda(def) => self.make_function(def, st, ctx),
            ExprKind::Starred(inner) => self.eval(inner, st, ctx),
            ExprKind::Named(n, v) => {
                let mut out = Vec::new();
                for (mut st, x) in self.eval(v, st, ctx) {
                    self.set_var(&mut st, ctx, n, x.clone());
                    out.push((st, x));
                }
                out
            }
            ExprKind::FString(parts, pieces) => {
                let mut out = Vec::new();
                for (st, vs) in self.eval_list(parts, st, ctx) {
                    let mut values = vs.iter();
                    let text = crate::models::text::fstring(pieces, &mut values);
                    out.push((st, Value::Str(text.map(Rc::from))));
                }
                out
            }
            ExprKind::Yield(v) => {
                // a `yield` inside an expression: evaluate the value for its checks
                let mut out = Vec::new();
                match v {
                    Some(v) => out.extend(self.eval(v, st, ctx).into_iter().map(|(s, _)| (s, Value::Unknown))),
                    None => out.push((st, Value::Unknown)),
                }
                out
            }
            ExprKind::Unknown => vec![(st, Value::Unknown)],
        }
    }

    fn bool_op(&mut self, is_and: bool, values: &[Expr], st: State, ctx: &Ctx) -> Vals {
        let Some((first, rest)) = values.split_first() else { return vec![(st, Value::Unknown)] };
        let mut out = Vec::new();
        for (st, v) in self.eval(first, st, ctx) {
            if rest.is_empty() {
                out.push((st, v));
                continue;
            }
            let pre = st.clone();
            let sides = self.split(v.clone(), st, first.span);
            let forked = sides.len() > 1;
            let mut group: Vals = Vec::new();
            // as in `bool_truth`: whether every continuing side gave the stopping side's value
            // without changing anything, so that the whole has that value on both sides
            let (mut decided, mut continued) = (forked, 0);
            for (_, (truth, st)) in sides {
                // `a and b`: a falsy a is the result; `a or b`: a truthy a is the result
                if truth != is_and {
                    let r = match &v {
                        Value::Cond(_) => Value::Bool(truth),
                        Value::Unknown if yields_bool(first) => Value::Bool(truth),
                        _ => v.clone(),
                    };
                    group.push((st, r));
                } else {
                    for (st2, r) in self.bool_op(is_and, rest, st.clone(), ctx) {
                        continued += 1;
                        decided &= r == Value::Bool(!is_and) && left_as_it_was(&st2, &st);
                        group.push((st2, r));
                    }
                }
            }
            if decided && continued > 0 && group.iter().all(|(_, r)| *r == Value::Bool(!is_and)) {
                out.push((pre, Value::Bool(!is_and)));
            } else {
                out.extend(group);
            }
        }
        merge_vals(out, self.settings.prune)
    }

    fn compare(&mut self, first: &Expr, rest: &[(CmpOp, Expr)], st: State, ctx: &Ctx) -> Vals {
        let firsts = match self.eval_one_or_many(first, st, ctx) {
            Ok(Some((st, a))) => return self.compare_chain(a, rest, st, ctx),
            Ok(None) => return Vec::new(),
            Err(firsts) => firsts,
        };
        let mut out = Vec::new();
        for (st, a) in firsts {
            out.extend(self.compare_chain(a, rest, st, ctx));
        }
        out
    }

    fn compare_chain(&mut self, a: Value, rest: &[(CmpOp, Expr)], st: State, ctx: &Ctx) -> Vals {
        let Some(((op, e), tail)) = rest.split_first() else { return vec![(st, Value::Bool(true))] };
        let mut out = Vec::new();
        match self.eval_one_or_many(e, st, ctx) {
            Ok(Some((st, b))) => self.compare_one(&a, *op, e, tail, st, b, ctx, &mut out),
            Ok(None) => {}
            Err(bs) => {
                for (st, b) in bs {
                    self.compare_one(&a, *op, e, tail, st, b, ctx, &mut out);
                }
            }
        }
        out
    }

    /// One link `a op b` of a comparison chain, `b` the value of `e` on `st`, then the
    /// rest of the chain (`tail`) where it holds: the outcomes go to `out`.
    #[allow(clippy::too_many_arguments)]
    fn compare_one(&mut self, a: &Value, op: CmpOp, e: &Expr, tail: &[(CmpOp, Expr)], st: State, b: Value, ctx: &Ctx, out: &mut Vals) {
        let is_tensor = |v: &Value| matches!(v, Value::Tensor(_));
        if tail.is_empty() && (is_tensor(a) || is_tensor(&b)) && matches!(op, CmpOp::Eq | CmpOp::NotEq | CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE) {
            // elementwise comparison: a broadcast bool tensor
            out.extend(torch::tensor_compare(self, st, op.symbol(), a.clone(), b, e.span));
            return;
        }
        if tail.is_empty() && matches!(op, CmpOp::Eq | CmpOp::NotEq | CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE) && crate::models::numpy::involves_array(&st, a, &b) {
            // elementwise comparison with a NumPy array: a bool array
            out.extend(crate::models::numpy::compare(self, st, a, &b));
            return;
        }
        let r = self.cmp(&st, op, a, &b);
        if tail.is_empty() {
            out.push((st, r));
            return;
        }
        for (_, (truth, st)) in self.split(r.clone(), st, e.span) {
            if truth {
                out.extend(self.compare_chain(b.clone(), tail, st, ctx));
            } else {
                out.push((st, Value::Bool(false)));
            }
        }
    }

    fn comprehension(&mut self, kind: CompKind, elt: &Expr, value: Option<&Expr>, gens: &[Comprehension], st: State, ctx: &Ctx) -> Vals {
        // comprehensions run in their own scope
        let mut st = st;
        let scope = st.alloc(Obj::Scope { vars: Vars::new(), parent: Some(ctx.scope) });
        let cctx = Ctx { scope, class_body: None, ..ctx.clone() };
        let results = self.comp_level(kind, elt, value, gens, st, &cctx);
        let mut out = Vec::new();
        for (mut st, items) in results {
            let v = match (kind, items) {
                // of an unknown number of items: as many alike items, when each is a plain
                // number or string (its value not kept: each differs)
                (CompKind::List | CompKind::Generator, Some(items)) if items.len() == 1 && alike_of(&items[0]).is_some() => crate::models::builtins::repeat(alike_of(&items[0]).unwrap_or(Value::Unknown)),
                // a dict of an unknown number of keys to alike values (a vocabulary of text not
                // known): its keys not known, so it has no known length nor keys
                (CompKind::Dict, Some(items)) if items.len() == 1 && let Some(Value::Tuple(kv)) = alike_of(&items[0]) && kv.len() == 2 => {
                    Value::Ref(st.alloc(Obj::Dict(vec![(Value::Unknown, kv[1].clone())])))
                }
                (_, Some(items)) if items.iter().any(|i| alike_of(i).is_some()) => Value::Unknown,
                (CompKind::List, Some(items)) => Value::Ref(st.alloc(Obj::List(items))),
                (CompKind::Set, Some(items)) => match models::builtins::distinct(items) {
                    Some(items) => Value::Ref(st.alloc(Obj::List(items))),
                    None => Value::Unknown,
                },
                (CompKind::Dict, Some(items)) => {
                    let pairs = items
                        .into_iter()
                        .map(|kv| match kv {
                            Value::Tuple(t) if t.len() == 2 => (t[0].clone(), t[1].clone()),
                            _ => (Value::Unknown, Value::Unknown),
                        })
                        .collect();
                    Value::Ref(st.alloc(Obj::Dict(pairs)))
                }
                (CompKind::Generator, Some(items)) => Value::Tuple(Rc::new(items)),
                _ => Value::Unknown,
            };
            out.push((st, v));
        }
        out
    }

    /// Items produced by nested generators, or `None` when their number is unknown.
    fn comp_level(&mut self, kind: CompKind, elt: &Expr, value: Option<&Expr>, gens: &[Comprehension], st: State, ctx: &Ctx) -> Vec<(State, Option<Vec<Value>>)> {
        let Some((g, rest)) = gens.split_first() else {
            let mut out = Vec::new();
            for (st, k) in self.eval(elt, st, ctx) {
                match value {
                    Some(v) => {
                        for (st, vv) in self.eval(v, st, ctx) {
                            out.push((st, Some(vec![Value::Tuple(Rc::new(vec![k.clone(), vv]))])));
                        }
                    }
                    None => out.push((st, Some(vec![k.clone()]))),
                }
            }
            return out;
        };
        let mut out = Vec::new();
        for (mut st, it) in self.eval(&g.iter, st, ctx) {
            let items = self.iterate(&mut st, &it, g.iter.span);
            match items {
                Some(items) if items.len() <= UNROLL => {
                    let mut acc: Vec<(State, Option<Vec<Value>>)> = vec![(st, Some(Vec::new()))];
                    // the common comprehension (`[f(x) for x in xs]`: a name, no filter, one
                    // level) binds the name in place and takes each element as it comes, with
                    // no lists of states and of one element in between (the general steps below
                    // come to the same)
                    let simple = match &g.target {
                        Target::Name(n, span) if g.ifs.is_empty() && rest.is_empty() && value.is_none() => Some((n, *span)),
                        _ => None,
                    };
                    let (start, total) = (self.work, items.len());
                    let mut tried = false;
                    for (done, item) in items.into_iter().enumerate() {
                        // a long comprehension of plain data: the remaining items generalised
                        // (`long_comprehension`)
                        if let (Some((n, span)), [(st, Some(got))]) = (simple, acc.as_slice())
                            && !tried
                            && self.work - start > super::long_comprehension::COMP_STEPS
                        {
                            tried = true;
                            if let Some((st, all)) = self.generalise_comprehension(n, span, elt, &it, st, got, total - done, ctx) {
                                acc = vec![(st, Some(all))];
                                break;
                            }
                        }
                        let mut next = Vec::new();
                        for (st, mut got) in acc {
                            if let Some((n, span)) = simple {
                                let mut st = st;
                                self.assign_name(n, span, item.clone(), &mut st, ctx);
                                let elems = self.eval(elt, st, ctx);
                                let n_elems = elems.len();
                                for (k, (st, v)) in elems.into_iter().enumerate() {
                                    // the items so far: moved into the last outcome, copied for the others
                                    let merged = got.as_mut().map(|a| {
                                        let mut a = if k + 1 == n_elems { std::mem::take(a) } else { a.clone() };
                                        a.push(v);
                                        a
                                    });
                                    next.push((st, merged));
                                }
                                continue;
                            }
                            let assigned = self.assign(&g.target, item.clone(), st, ctx);
                            let n_assigned = assigned.len();
                            for (i, st) in assigned.into_iter().enumerate() {
                                // filters
                                let mut passing: Vec<(State, bool)> = vec![(st, false)];
                                for cond in &g.ifs {
                                    let mut n2 = Vec::new();
                                    for (st, opaque) in passing {
                                        for (op, (truth, st)) in self.truth(cond, st, ctx) {
                                            if truth {
                                                n2.push((st, opaque || op));
                                            }
                                        }
                                    }
                                    passing = n2;
                                }
                                let n_passing = passing.len();
                                for (j, (st, opaque)) in passing.into_iter().enumerate() {
                                    let subs = self.comp_level(kind, elt, value, rest, st, ctx);
                                    let n_subs = subs.len();
                                    for (k, (st, sub)) in subs.into_iter().enumerate() {
                                        // the items so far: moved into the last outcome (an
                                        // item's one outcome, as a rule), copied for the others
                                        let last = i + 1 == n_assigned && j + 1 == n_passing && k + 1 == n_subs;
                                        let merged = match (&mut got, sub) {
                                            (Some(a), Some(b)) if !opaque => {
                                                let mut a = if last { std::mem::take(a) } else { a.clone() };
                                                a.extend(b);
                                                Some(a)
                                            }
                                            _ => None,
                                        };
                                        next.push((st, merged));
                                    }
                                }
                            }
                        }
                        // an item's outcomes multiply the paths (each `Block(...)` forking on
                        // its arguments): past half the path budget they are joined
                        let Some(joined) = self.bound_items(next, elt.span) else {
                            return Vec::new();
                        };
                        acc = joined;
                    }
                    out.extend(acc);
                }
                _ => {
                    // unknown length: evaluate the element once for its checks; a plain
                    // element of a single generator stands for them all (`comprehension`)
                    let elem = self.element_of(&mut st, &it);
                    for st in self.assign(&g.target, elem, st, ctx) {
                        for (st, sub) in self.comp_level(kind, elt, value, rest, st, ctx) {
                            let alike = match sub {
                                Some(v) if rest.is_empty() && v.len() == 1 && (plain(&v[0]) || value.is_some()) => Some(vec![Value::LibMethod(Box::new(v[0].clone()), Rc::from(ALIKE))]),
                                _ => None,
                            };
                            out.push((st, alike));
                        }
                    }
                }
            }
        }
        out
    }
}

/// The mark of the items of a comprehension over an unknown number of items: alike items,
/// as many (`Interp::comprehension` makes a `<repeat>` of them).
const ALIKE: &str = "<alike items>";

fn alike_of(v: &Value) -> Option<Value> {
    match v {
        Value::LibMethod(elem, name) if &**name == ALIKE => Some((**elem).clone()),
        _ => None,
    }
}

/// A number, a string, a bool, or alike items of them: an element a `<repeat>` may stand for.
fn plain(v: &Value) -> bool {
    match v {
        Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::Bool(_) => true,
        Value::LibMethod(elem, name) if &**name == "<repeat>" => plain(elem),
        _ => false,
    }
}

fn is_splice_unknown(vs: &[Value]) -> bool {
    vs.first().and_then(|v| v.as_str()) == Some("<unknown splice>")
}

/// The outcomes of an evaluation (`Interp::eval_outs`): at most one without a list, or a list.
pub(super) type Outs = OneOrMany<(State, Value)>;

/// Items of a step that as a rule has one: at most one without a list, or a list.
pub(super) enum OneOrMany<T> {
    One(Option<T>),
    Many(std::vec::IntoIter<T>),
}

impl<T> Iterator for OneOrMany<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        match self {
            OneOrMany::One(one) => one.take(),
            OneOrMany::Many(many) => many.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            OneOrMany::One(one) => one.is_some() as usize,
            OneOrMany::Many(many) => many.len(),
        };
        (n, Some(n))
    }
}

impl<T> ExactSizeIterator for OneOrMany<T> {}

/// Gathers items in order, in a list only from the second on (`OneOrMany`).
pub(super) struct Gather<T> {
    first: Option<T>,
    rest: Vec<T>,
}

impl<T> Gather<T> {
    pub(super) fn new() -> Gather<T> {
        Gather { first: None, rest: Vec::new() }
    }

    pub(super) fn push(&mut self, t: T) {
        match self.first.take() {
            None if self.rest.is_empty() => self.first = Some(t),
            first => {
                self.rest.extend(first);
                self.rest.push(t);
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        self.first.is_some() as usize + self.rest.len()
    }

    pub(super) fn into_items(self) -> OneOrMany<T> {
        if self.rest.is_empty() { OneOrMany::One(self.first) } else { OneOrMany::Many(self.rest.into_iter()) }
    }
}

fn tuple_or_unknown(vs: Vec<Value>) -> Value {
    if is_splice_unknown(&vs) { Value::Unknown } else { Value::Tuple(Rc::new(vs)) }
}

pub fn const_value(c: &Const) -> Value {
    match c {
        Const::Int(i) => Value::int(*i as i128),
        Const::BigInt | Const::Complex | Const::Bytes => Value::Unknown,
        Const::Float(f) => Value::Float(Some(*f)),
        Const::Str(s) => Value::Str(Some(s.clone())),
        Const::Bool(b) => Value::Bool(*b),
        Const::None => Value::None,
        Const::Ellipsis => Value::Str(Some(Rc::from("<ellipsis>"))),
    }
}

/// The value an `import` binds.
pub fn module_value(dotted: &str) -> Value {
    models::import(dotted)
}

pub(super) fn builtin(name: &str) -> Option<Value> {
    models::builtins::lookup(name)
}

/// Whether evaluating the rest of `a and b` took `before` to `after` changing nothing: the
/// same heap, branches, facts and taint (`bool_truth`, `bool_op`).
fn left_as_it_was(after: &State, before: &State) -> bool {
    after.same_state(before) && after.branches == before.branches && after.facts == before.facts && after.tainted == before.tainted
}

/// Whether the expression always gives a `bool` in Python, whatever the value the model has for
/// it: `not e`, a tensor's `is_cuda`, `torch.cuda.is_available()` (`mps` too). The value of
/// `x.is_cuda and ngpu > 1` is then `False` on both sides of an unknown `x.is_cuda`.
fn yields_bool(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::UnaryOp(UnaryOp::Not, _) => true,
        ExprKind::Attr(_, n) => &**n == "is_cuda",
        ExprKind::Call { func, args, kwargs } if args.is_empty() && kwargs.is_empty() => match &func.kind {
            ExprKind::Attr(m, n) if &**n == "is_available" => matches!(&m.kind, ExprKind::Attr(_, d) if matches!(&**d, "cuda" | "mps")),
            _ => false,
        },
        _ => false,
    }
}

/// `k: v` put into the flat pairs of a dict display: an equal key already there keeps its
/// place and takes the new value, as in Python.
fn put_pair(kv: &mut Vec<Value>, k: Value, v: Value) {
    match kv.chunks(2).position(|p| p[0] == k) {
        Some(i) => kv[2 * i + 1] = v,
        None => {
            kv.push(k);
            kv.push(v);
        }
    }
}
