//! Reshaping: `view`/`reshape`, `flatten`, `transpose`, `permute`, `unsqueeze`/`squeeze`,
//! `repeat`/`expand`.

use std::rc::Rc;

use crate::models::bind;
use super::tensor::{check_dim, sizes, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape::{self as r, BroadcastShapeMismatch, DimOutOfRange, InvalidShapeArgument, ReshapeSizeMismatch, ViewNonContiguous};
use super::layout;
use crate::shape::{Formula, Poly, Tri};

/// Tensor methods modelled here; `Err(st)` gives the state back when `name` is not one of them.
#[allow(clippy::too_many_arguments)]
pub fn method(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    Ok(match name {
        "view" | "reshape" => {
            if let Some(Value::Str(_) | Value::DType(_)) = args.first() {
                return Ok(vec![(st, Value::Unknown)]); // view(dtype)
            }
            reshape(cx, st, t, args, span, name)
        }
        "flatten" => {
            let b = bind(&["start_dim", "end_dim"], args, kwargs);
            let sd = b.get("start_dim").and_then(|v| v.as_const_int()).unwrap_or(0);
            let ed = b.get("end_dim").and_then(|v| v.as_const_int()).unwrap_or(-1);
            flatten(cx, st, t, sd, ed, span, "flatten")
        }
        "unsqueeze" => unsqueeze(cx, st, t, s, args, kwargs, span),
        "squeeze" => squeeze(cx, st, t, s, args, kwargs, span),
        "transpose" | "swapaxes" | "swapdims" => {
            let (Some(a), Some(b)) = (args.first().and_then(|v| v.as_const_int()), args.get(1).and_then(|v| v.as_const_int())) else { return Ok(vec![(st, Value::Unknown)]) };
            transpose(cx, st, t, a, b, span)
        }
        "permute" => {
            // `torch.permute(x, dims=...)`
            let args = match (args, kwargs.iter().find(|(k, _)| &**k == "dims")) {
                ([], Some((_, v))) => std::slice::from_ref(v),
                _ => args,
            };
            permute(cx, st, t, s, args, span)
        }
        "repeat" | "expand" => repeat_expand(cx, st, t, s, name, args, span),
        _ => return Err(st),
    })
}

pub fn numel(dims: &[Dim]) -> Option<Poly> {
    let mut acc = Poly::constant(1);
    for d in dims {
        acc = acc.mul(d.v.as_ref()?)?;
    }
    Some(acc)
}

/// `view` / `reshape`.
fn reshape(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, args: &[Value], span: Span, name: &str) -> Vals {
    let mut st = st;
    let Some(target) = sizes(cx, &mut st, args) else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    let minus: Vec<usize> = target.iter().enumerate().filter(|(_, d)| d.as_const() == Some(-1)).map(|(i, _)| i).collect();
    if minus.len() > 1 {
        cx.check(&st, span, Tri::True, |_| (ReshapeSizeMismatch::InferTwice { op: name.into() }, Vec::new()));
        return Vec::new();
    }
    let total = if s.prefix.is_none() { numel(&s.dims) } else { None };
    let known: Vec<&Dim> = target.iter().filter(|d| d.as_const() != Some(-1)).collect();
    let prod_known = known.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(d.v.as_ref()?));
    let mut out = target.clone();
    if let (Some(total), Some(pk)) = (&total, &prod_known) {
        // (shown only in a message: built when one is)
        let shown = |cx: &dyn ModelCtx| cx.show_shape(&st, &s);
        // (the sizes asked for are the message's numbers, not what it is about: the input's
        // element count is, with where its factors came from)
        let tshow = |cx: &dyn ModelCtx| format!("[{}]", target.iter().map(|d| cx.dim_text(None, d)).collect::<Vec<_>>().join(", "));
        let cite_total = |cx: &dyn ModelCtx| cx.cite(&Dim { v: Some(total.clone()), why: Origin::merged("", span, 0, &s.dims) }, true);
        if minus.is_empty() {
            // a fix: the one size that makes the element counts agree (`engine::report::fix_of`
            // keeps it where that size is the only literal candidate)
            if let (Some(tc), Some(pc)) = (total.as_const(), pk.as_const()) {
                let alts = target
                    .iter()
                    .enumerate()
                    .filter_map(|(i, d)| {
                        let c = d.as_const().filter(|c| *c > 0)?;
                        let rest = pc / c;
                        (rest > 0 && tc % rest == 0 && tc != pc).then(|| FixAlt { pos: i, kw: "", want: tc / rest })
                    })
                    .collect();
                cx.suggest_fix(FixHint { at: span, alts });
            }
            let eq = Formula::cmp(total, crate::shape::Rel::Eq, pk);
            if !cx.check(&st, span, eq.not(), |cx| {
                let (tt, pp) = (total.display(cx.syms()), pk.display(cx.syms()));
                cite_total(cx);
                (ReshapeSizeMismatch::Numel { op: name.into(), target: tshow(cx), input: shown(cx), numel: tt, new: pp }, Vec::new())
            }) {
                return Vec::new();
            }
        } else {
            // -1: the known part must divide the total
            let rem = total.modulo(pk);
            let violated = match (&rem, rem.as_ref().and_then(|r| r.as_const())) {
                (_, Some(0)) => Formula::Const(false),
                (_, Some(_)) => Formula::Const(true),
                (Some(r), None) => Formula::cmp(r, crate::shape::Rel::Ne, &Poly::constant(0)),
                (None, None) => Formula::Opaque,
            };
            let violated = if pk.as_const() == Some(0) { Formula::Const(true) } else { violated };
            if !cx.check(&st, span, violated, |cx| {
                let (tt, pp) = (total.display(cx.syms()), pk.display(cx.syms()));
                cite_total(cx);
                (ReshapeSizeMismatch::NotDivisible { op: name.into(), target: tshow(cx), input: shown(cx), numel: tt, known: pp }, Vec::new())
            }) {
                return Vec::new();
            }
            let m = minus[0];
            let why = merged_by_view(&s, &target, m, span, name);
            out[m] = Dim { v: total.floordiv(pk), why };
        }
    } else if let Some(&i) = minus.first() {
        out[i] = Dim::unknown();
    }
    let lay = match &t.layout {
        Some(l) if l.is_contiguous() => Some(Layout::contiguous(out.len())),
        // a permuted input: `view` raises when the strides cannot give the new shape (SHP112),
        // `reshape` then copies into a contiguous tensor
        Some(l) if s.prefix.is_none() => match layout::view_fails(cx, &st, &s.dims, l, &out) {
            None => None,
            Some(fails) if name == "view" => {
                let ok = cx.check(&st, span, fails, |cx| {
                    let target = format!("[{}]", out.iter().map(|d| cx.show_dim(d)).collect::<Vec<_>>().join(", "));
                    let origin = match l.origin {
                        Some((op, at)) => format!("{op} at {}", cx.place(at)),
                        None => "a transpose or permute".into(),
                    };
                    (ViewNonContiguous::Strides { target, input: cx.show_shape(&st, &s), origin }, Vec::new())
                });
                if !ok {
                    return Vec::new();
                }
                None
            }
            Some(fails) => (fails.decide(&st.facts, cx.syms()) == Tri::True).then(|| Layout::contiguous(out.len())),
        },
        _ => None,
    };
    // a slice with gaps: a `view` the permutation lets pass may still meet a gap, unless it
    // keeps the dims (adding or dropping ones of size 1); `reshape` copies when it must
    if t.layout.as_ref().is_some_and(|l| l.gaps) {
        let big = |ds: &[Dim]| -> Option<Vec<Poly>> { ds.iter().filter(|d| d.as_const() != Some(1)).map(|d| d.v.clone()).collect() };
        let same_dims = matches!((big(&s.dims), big(&out)), (Some(a), Some(b)) if a == b);
        if name == "view" && !same_dims {
            return vec![(st, Value::Unknown)];
        }
        return vec![(st, tensor_value(Shape::known(out), t.dtype))];
    }
    layout::set(vec![(st, tensor_value(Shape::known(out), t.dtype))], |_| lay.clone())
}

fn unsqueeze(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let Some(d) = args.first().or(kwargs.first().map(|(_, v)| v)).and_then(|v| v.as_const_int()) else { return vec![(st, Value::Unknown)] };
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    let Some(i) = check_dim(cx, &st, &Shape::known(vec![Dim::unknown(); rank + 1]), d, span, "unsqueeze") else { return vec![(st, Value::Unknown)] };
    if i == usize::MAX {
        return Vec::new();
    }
    let mut dims = s.dims.clone();
    dims.insert(i, Dim::konst(1));
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

fn squeeze(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let same = |st: State| vec![(st, Value::Tensor(t.clone()))];
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    match args.first().or(kwargs.first().map(|(_, v)| v)) {
        None => {
            let mut dims = Vec::new();
            for d in &s.dims {
                match d.as_const() {
                    Some(1) => {}
                    Some(_) => dims.push(d.clone()),
                    None => match cx.dim_eq(&st, d, &Dim::konst(1)) {
                        Tri::False => dims.push(d.clone()),
                        Tri::True => {}
                        Tri::Unknown => return vec![(st, Value::Unknown)],
                    },
                }
            }
            vec![(st, tensor_value(Shape::known(dims), t.dtype))]
        }
        Some(d) => {
            let Some(d) = d.as_const_int() else { return vec![(st, Value::Unknown)] };
            let Some(i) = check_dim(cx, &st, &s, d, span, "squeeze") else { return vec![(st, Value::Unknown)] };
            if i == usize::MAX {
                return Vec::new();
            }
            if rank == 0 {
                return same(st);
            }
            let mut dims = s.dims.clone();
            match cx.dim_eq(&st, &dims[i], &Dim::konst(1)) {
                Tri::True => {
                    dims.remove(i);
                }
                Tri::False => {}
                Tri::Unknown => return vec![(st, Value::Unknown)],
            }
            vec![(st, tensor_value(Shape::known(dims), t.dtype))]
        }
    }
}

fn permute(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, args: &[Value], span: Span) -> Vals {
    let mut st = st;
    let dims_arg: Vec<Value> = match args {
        [one] if !matches!(one, Value::Int(_)) => cx.iterate(&mut st, one, span).unwrap_or_default(),
        _ => args.to_vec(),
    };
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    let perm: Option<Vec<i128>> = dims_arg.iter().map(|v| v.as_const_int()).collect();
    let Some(perm) = perm else { return vec![(st, Value::Unknown)] };
    let n = perm.len();
    if !cx.check(&st, span, Tri::from_bool(n != rank), |cx| {
        let shown = cx.show_shape(&st, &s);
        (DimOutOfRange::PermuteLength { len: n.to_string(), shape: shown, rank: rank.to_string() }, Vec::new())
    }) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut idx = Vec::new();
    let mut seen = vec![false; rank];
    for p in perm {
        let Some(i) = check_dim(cx, &st, &s, p, span, "permute") else { return vec![(st, Value::Unknown)] };
        if i == usize::MAX {
            return Vec::new();
        }
        if seen[i] {
            cx.check(&st, span, Tri::True, |_| (DimOutOfRange::PermuteRepeat { dim: p.to_string() }, Vec::new()));
            return Vec::new();
        }
        seen[i] = true;
        idx.push(i);
        out.push(s.dims[i].clone());
    }
    let res = vec![(st, tensor_value(Shape::known(out), t.dtype))];
    layout::permute_results(res, t, &idx, "permute", span)
}

fn repeat_expand(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, name: &str, args: &[Value], span: Span) -> Vals {
    let mut st = st;
    let Some(target) = sizes(cx, &mut st, args) else { return vec![(st, Value::Unknown)] };
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    let shown = |cx: &dyn ModelCtx| cx.show_shape(&st, s);
    let n = target.len();
    if n < rank {
        cx.check(&st, span, Tri::True, |cx| {
            let (count, shape, rank) = (n.to_string(), shown(cx), rank.to_string());
            let v = if name == "repeat" { InvalidShapeArgument::TooFewRepeats { count, shape, rank } } else { InvalidShapeArgument::TooFewSizes { op: name.into(), count, shape, rank } };
            (v, Vec::new())
        });
        return Vec::new();
    }
    let mut out = Vec::with_capacity(n);
    for (k, td) in target.iter().enumerate() {
        let src = if k + rank >= n { Some(&s.dims[k + rank - n]) } else { None };
        let d = match (name, src) {
            ("repeat", None) => td.clone(),
            ("repeat", Some(sd)) => Dim { v: match (&sd.v, &td.v) {
                (Some(a), Some(b)) => a.mul(b),
                _ => None,
            }, why: None },
            (_, None) => td.clone(),
            (_, Some(sd)) => {
                if td.as_const() == Some(-1) {
                    sd.clone()
                } else {
                    let violated = Formula::And(vec![cx.dim_eq_f(sd, td).not(), cx.dim_eq_f(sd, &Dim::konst(1)).not()]);
                    if !cx.check(&st, span, violated, |cx| {
                        let (a, b2) = (cx.show_dim(sd), cx.show_dim(td));
                        (BroadcastShapeMismatch::Expand { size: b2, existing: a, shape: shown(cx) }, Vec::new())
                    }) {
                        return Vec::new();
                    }
                    td.clone()
                }
            }
        };
        out.push(d);
    }
    if out.iter().any(|d| d.as_const().is_some_and(|c| c < 0)) {
        return vec![(st, Value::Unknown)];
    }
    vec![(st, tensor_value(Shape::known(out), t.dtype))]
}

fn transpose(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, a: i128, b: i128, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    if s.rank().is_none() {
        // negative dims within the known suffix
        let n = s.dims.len() as i128;
        if a < 0 && b < 0 && -a <= n && -b <= n {
            let mut dims = s.dims.clone();
            dims.swap((n + a) as usize, (n + b) as usize);
            return vec![(st, tensor_value(Shape { prefix: s.prefix, dims }, t.dtype))];
        }
        return vec![(st, Value::Unknown)];
    }
    let i = check_dim(cx, &st, &s, a, span, "transpose");
    if i == Some(usize::MAX) {
        return Vec::new();
    }
    let j = check_dim(cx, &st, &s, b, span, "transpose");
    if j == Some(usize::MAX) {
        return Vec::new();
    }
    let (Some(i), Some(j)) = (i, j) else { return vec![(st, Value::Unknown)] };
    let mut dims = s.dims.clone();
    if dims.is_empty() {
        return vec![(st, Value::Tensor(t.clone()))];
    }
    dims.swap(i, j);
    let mut perm: Vec<usize> = (0..dims.len()).collect();
    perm.swap(i, j);
    let res = vec![(st, tensor_value(Shape::known(dims), t.dtype))];
    layout::permute_results(res, t, &perm, "transpose", span)
}

/// The origin of the size `-1` infers at `m` in `target` (`x.view(x.size(0), -1)`): the
/// product of the input dims it stands for when the sizes around it are the input's own at
/// both ends, else the output of the op at `span`.
fn merged_by_view(s: &Shape, target: &[Dim], m: usize, span: Span, name: &str) -> Option<Why> {
    let (n, k) = (s.dims.len(), target.len());
    let (head, tail) = (m, k - m - 1);
    if s.prefix.is_none() && head + tail < n {
        let same = |a: &Dim, b: &Dim| a.v.is_some() && a.v == b.v;
        let heads = (0..head).all(|i| same(&target[i], &s.dims[i]));
        let tails = (0..tail).all(|i| same(&target[k - 1 - i], &s.dims[n - 1 - i]));
        if heads && tails {
            let parts = &s.dims[head..n - tail];
            if parts.len() == 1 {
                return parts[0].why.clone();
            }
            if let Some(w) = Origin::merged(if name == "view" { "viewed" } else { "reshaped" }, span, tail + 1, parts) {
                return Some(w);
            }
        }
    }
    Some(Origin::output(Rc::from(name), span, k - m, None))
}

pub fn flatten(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, sd: i128, ed: i128, span: Span, what: &str) -> Vals {
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else {
        // `flatten(1)` of an unknown-rank tensor: [*] -> [d0, ?]
        return vec![(st, Value::Unknown)];
    };
    if rank == 0 {
        return vec![(st, tensor_value(Shape::known(vec![Dim::konst(1)]), t.dtype))];
    }
    let i = check_dim(cx, &st, &s, sd, span, what);
    if i == Some(usize::MAX) {
        return Vec::new();
    }
    let j = check_dim(cx, &st, &s, ed, span, what);
    if j == Some(usize::MAX) {
        return Vec::new();
    }
    let (Some(i), Some(j)) = (i, j) else { return vec![(st, Value::Unknown)] };
    if i > j {
        cx.check(&st, span, Tri::True, |_| (DimOutOfRange::FlattenOrder { op: what.into(), start: sd.to_string(), end: ed.to_string() }, Vec::new()));
        return Vec::new();
    }
    let mut dims = s.dims[..i].to_vec();
    let pos = rank - j;
    dims.push(Dim { v: numel(&s.dims[i..=j]), why: crate::value::Origin::merged("flattened", span, pos, &s.dims[i..=j]) });
    dims.extend(s.dims[j + 1..].iter().cloned());
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

const DIM: &[&crate::rules::Rule] = &[&r::dim_out_of_range::RULE];
const RESHAPE: &[&crate::rules::Rule] = &[&r::reshape_size_mismatch::RULE];

/// The APIs this family models, for the registry (`models/registry.rs`).
pub const APIS: &[Decl] = &[
    // `view(*shape)`, `view((2, 3))`; `view(dtype)` is Unknown
    Decl::method("torch.Tensor.view", "*shape").checks(RESHAPE),
    Decl::method("torch.Tensor.reshape", "*shape").checks(RESHAPE),
    Decl::function("torch.reshape", "input, shape").checks(RESHAPE),
    Decl::function("torch.flatten", "input, start_dim=0, end_dim=-1").checks(DIM),
    Decl::method("torch.Tensor.flatten", "start_dim=0, end_dim=-1").checks(DIM),
    Decl::function("torch.unsqueeze", "input, dim").checks(DIM),
    Decl::method("torch.Tensor.unsqueeze", "dim").checks(DIM),
    Decl::function("torch.squeeze", "input, dim=None").checks(DIM),
    Decl::method("torch.Tensor.squeeze", "dim=None").checks(DIM),
    Decl::function("torch.transpose", "input, dim0, dim1").checks(DIM),
    Decl::method("torch.Tensor.transpose", "dim0, dim1").checks(DIM),
    Decl::function("torch.swapaxes", "input, axis0, axis1").checks(DIM),
    Decl::method("torch.Tensor.swapaxes", "axis0, axis1").checks(DIM),
    Decl::function("torch.swapdims", "input, dim0, dim1").checks(DIM),
    Decl::method("torch.Tensor.swapdims", "dim0, dim1").checks(DIM),
    Decl::function("torch.permute", "input, dims").checks(DIM),
    Decl::method("torch.Tensor.permute", "*dims").checks(DIM),
    Decl::method("torch.Tensor.repeat", "*repeats").checks(&[&r::invalid_shape_argument::RULE]),
    Decl::method("torch.Tensor.expand", "*size").checks(&[&r::invalid_shape_argument::RULE, &r::broadcast_shape_mismatch::RULE]),
];
