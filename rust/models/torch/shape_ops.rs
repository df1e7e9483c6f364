//! More shape ops, as Tensor methods (the `torch.` function forms reach them with the tensor
//! as receiver): `movedim`, `select`, `tile`, `unflatten`, `scatter`, `diag`/`diagonal`/`trace`,
//! `repeat_interleave`, `unfold` (sliding windows), `new_*`, `*_as`, `T`/`mT`, `fliplr`/`flipud`,
//! `tril`/`triu`, the rank requirements of `mm`/`bmm`/`mv`/`dot`/`outer`, `addmm`/`baddbmm`,
//! and `torch.tensor`.
//!
//! `method` gives the state back (`Err`) when it does not handle the name; for a name this
//! family declares, the dispatcher (`tensor::method`) then answers Unknown.

use std::rc::Rc;

use crate::models::bind;
use super::tensor::{self, broadcast, check_dim, matmul, sizes, tensor_value};
use super::layout;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape::{self as r, DimOutOfRange, IndexOutOfRange, InvalidShapeArgument, LayerInputRankMismatch, MatmulShapeMismatch, OutputSizeTooSmall};
use crate::shape::{Formula, Poly, Rel, Tri};

/// `x.unfold(dimension, size, step)`: dim `dimension` becomes the number of windows,
/// `(dim - size) // step + 1`, and a last dim of `size` is added (a 0-D tensor is one window:
/// `[size]`). Torch checks the dim, then `size <= dim`, `size >= 0` and `step > 0`.
#[allow(clippy::too_many_arguments)]
fn unfold(cx: &mut dyn ModelCtx, st: State, t: &Tensor, s: &Shape, d: i128, size: &Poly, step: &Poly, span: Span) -> Vals {
    let Some(i) = check_dim(cx, &st, s, d, span, "unfold") else { return unknown(st) };
    if i == usize::MAX {
        return Vec::new();
    }
    let len = s.dims.get(i).cloned().unwrap_or(Dim::konst(1));
    let Some(lv) = len.v.clone() else { return unknown(st) };
    if !cx.check(&st, span, Formula::cmp(&lv, Rel::Lt, size), |cx| {
        let (shown, ls, zs) = (cx.show_shape(&st, s), lv.display(cx.syms()), size.display(cx.syms()));
        (OutputSizeTooSmall::Window { op: "unfold".into(), size: zs.clone(), dim: d.to_string(), input: shown, len: ls }, Vec::new())
    }) {
        return Vec::new();
    }
    if !cx.check(&st, span, Formula::cmp(size, Rel::Lt, &Poly::constant(0)), |cx| (InvalidShapeArgument::Negative { op: "unfold".into(), name: "size".into(), value: size.display(cx.syms()) }, Vec::new())) {
        return Vec::new();
    }
    if !cx.check(&st, span, Formula::cmp(step, Rel::Lt, &Poly::constant(1)), |cx| {
        let ss = step.display(cx.syms());
        (InvalidShapeArgument::NotPositive { op: "unfold".into(), name: "step".into(), value: ss }, Vec::new())
    }) {
        return Vec::new();
    }
    let mut dims = s.dims.clone();
    if let Some(di) = dims.get_mut(i) {
        *di = Dim { v: lv.sub(size).and_then(|x| x.floordiv(step)).and_then(|x| x.add_const(1)), why: None };
    }
    dims.push(Dim::known(size.clone(), None));
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

/// Check that `s` has a rank `ok` accepts (`expect` says which, for the message). `Some(true)`:
/// it does; `Some(false)`: torch raises (recorded, the path ends); `None`: rank unknown.
pub fn check_rank(cx: &mut dyn ModelCtx, st: &State, s: &Shape, ok: impl Fn(usize) -> bool, expect: &str, what: &str, span: Span) -> Option<bool> {
    let rank = s.rank()?;
    Some(cx.check(st, span, Tri::from_bool(!ok(rank)), |cx| {
        let shown = cx.show_shape(st, s);
        (LayerInputRankMismatch::Expects { op: what.into(), expect: expect.into(), rank: rank.to_string(), shape: shown }, Vec::new())
    }))
}

fn int_values(dims: &[Dim]) -> Option<Vec<Value>> {
    dims.iter().map(|d| d.v.clone().map(Value::Int)).collect()
}

fn unknown(st: State) -> Vals {
    vec![(st, Value::Unknown)]
}

fn const_arg(b: &std::collections::BTreeMap<&str, Value>, k: &str) -> Option<i128> {
    b.get(k).and_then(|v| v.as_const_int())
}

/// Tensor methods modelled here; `Err(st)` gives the state back when `name` is not one of them.
pub fn method(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    let mut st = st;
    let s = st.resolve(&t.shape);
    let what = name;
    let recv = Value::Tensor(t.clone());
    let out = |st: State, dims: Vec<Dim>, dtype: Option<DType>| vec![(st, tensor_value(Shape::known(dims), dtype))];
    Ok(match name {
        "movedim" | "moveaxis" => {
            let b = bind(&["source", "destination"], args, kwargs);
            // an int or a sequence of ints each
            let mut list = |st: &mut State, k: &str| -> Option<Vec<i128>> {
                match b.get(k)? {
                    Value::Int(p) => p.as_const().map(|c| vec![c]),
                    v @ (Value::Ref(_) | Value::Tuple(_)) => cx.iterate(st, v, span)?.iter().map(|x| x.as_const_int()).collect(),
                    _ => None,
                }
            };
            // both ints or both sequences: torch has no overload for a mix (a TypeError)
            if matches!(b.get("source"), Some(Value::Int(_))) != matches!(b.get("destination"), Some(Value::Int(_))) {
                return Ok(unknown(st));
            }
            let (Some(src), Some(dst)) = (list(&mut st, "source"), list(&mut st, "destination")) else { return Ok(unknown(st)) };
            let (mut si, mut di) = (Vec::new(), Vec::new());
            for (ds, out) in [(&src, &mut si), (&dst, &mut di)] {
                for d in ds {
                    match check_dim(cx, &st, &s, *d, span, what) {
                        None => return Ok(unknown(st)),
                        Some(usize::MAX) => return Ok(Vec::new()),
                        Some(i) => out.push(i),
                    }
                }
            }
            if !cx.check(&st, span, Tri::from_bool(si.len() != di.len()), |_| {
                let fmt = |v: &[i128]| format!("[{}]", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "));
                (DimOutOfRange::MovedimLength { source: fmt(&src), destination: fmt(&dst) }, Vec::new())
            }) {
                return Ok(Vec::new());
            }
            for (which, idx, raw) in [("source", &si, &src), ("destination", &di, &dst)] {
                let repeated = idx.iter().enumerate().any(|(k, i)| idx[..k].contains(i));
                if !cx.check(&st, span, Tri::from_bool(repeated), |_| {
                    let dims = format!("[{}]", raw.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "));
                    (DimOutOfRange::MovedimRepeat { which: which.into(), dims }, Vec::new())
                }) {
                    return Ok(Vec::new());
                }
            }
            if s.dims.is_empty() {
                return Ok(vec![(st, recv)]);
            }
            // out[dst[k]] = in[src[k]]; the other dims keep their order in the other places
            let n = s.dims.len();
            let mut outd: Vec<Option<usize>> = vec![None; n];
            for (a, d) in si.iter().zip(&di) {
                outd[*d] = Some(*a);
            }
            let mut rest = (0..n).filter(|i| !si.contains(i));
            let perm: Vec<usize> = outd.into_iter().map(|d| d.or_else(|| rest.next()).expect("as many places as dims")).collect();
            let dims: Vec<Dim> = perm.iter().map(|&i| s.dims[i].clone()).collect();
            layout::permute_results(out(st, dims, t.dtype), t, &perm, "movedim", span)
        }
        "select" => {
            let b = bind(&["dim", "index"], args, kwargs);
            let (Some(d), Some(k)) = (const_arg(&b, "dim"), const_arg(&b, "index")) else { return Ok(unknown(st)) };
            if check_rank(cx, &st, &s, |r| r >= 1, "1-D or higher", "select()", span) == Some(false) {
                return Ok(Vec::new());
            }
            let Some(i) = check_dim(cx, &st, &s, d, span, what) else { return Ok(unknown(st)) };
            if i == usize::MAX || !index_in_range(cx, &st, &s, i, k, span, "select") {
                return Ok(Vec::new());
            }
            let mut dims = s.dims.clone();
            dims.remove(i);
            out(st, dims, t.dtype)
        }
        "fliplr" | "flipud" => {
            let need = if name == "fliplr" { 2 } else { 1 };
            if check_rank(cx, &st, &s, |r| r >= need, if need == 2 { "2-D or higher" } else { "1-D or higher" }, name, span) == Some(false) {
                return Ok(Vec::new());
            }
            vec![(st, recv)]
        }
        "tril" | "triu" | "tril_" | "triu_" => {
            match check_rank(cx, &st, &s, |r| r >= 2, "2-D or higher", name, span) {
                Some(false) => Vec::new(),
                Some(true) => vec![(st, recv)],
                None => unknown(st),
            }
        }
        "t" => match check_rank(cx, &st, &s, |r| r <= 2, "0-D, 1-D or 2-D", "t()", span) {
            Some(false) => Vec::new(),
            Some(true) if s.dims.len() == 2 => layout::permute_results(out(st, vec![s.dims[1].clone(), s.dims[0].clone()], t.dtype), t, &[1, 0], "t()", span),
            Some(true) => vec![(st, recv)],
            None => unknown(st),
        },
        "T" => match s.rank() {
            Some(r) => layout::permute_results(out(st, s.dims.iter().rev().cloned().collect(), t.dtype), t, &(0..r).rev().collect::<Vec<_>>(), ".T", span),
            None => unknown(st),
        },
        "mT" | "mH" => {
            // identity on 0-D tensors (deprecated), an error on 1-D ones
            match check_rank(cx, &st, &s, |r| r != 1, "0-D or 2-D or higher", name, span) {
                Some(true) if s.dims.is_empty() => vec![(st, recv)],
                Some(false) => Vec::new(),
                Some(true) => {
                    let mut dims = s.dims.clone();
                    let n = dims.len();
                    dims.swap(n - 2, n - 1);
                    let mut perm: Vec<usize> = (0..n).collect();
                    perm.swap(n - 2, n - 1);
                    layout::permute_results(out(st, dims, t.dtype), t, &perm, if name == "mT" { ".mT" } else { ".mH" }, span)
                }
                None => unknown(st),
            }
        }
        "expand_as" | "view_as" | "reshape_as" => {
            let Some(Value::Tensor(o)) = args.first().or(kwargs.first().map(|(_, v)| v)) else { return Ok(unknown(st)) };
            let os = st.resolve(&o.shape);
            let Some(target) = os.rank().and_then(|_| int_values(&os.dims)) else { return Ok(unknown(st)) };
            let base = &name[..name.len() - 3];
            // a 0-dim target is `view(())`/`expand(())`: one empty size tuple
            let target = if target.is_empty() { vec![Value::Tuple(Rc::new(Vec::new()))] } else { target };
            tensor::method(cx, st, recv, if base == "expand" { "expand" } else { "reshape" }, target, Vec::new(), span)
        }
        "broadcast_to" => {
            let Some(shape) = args.first() else { return Ok(unknown(st)) };
            tensor::method(cx, st, recv, "expand", vec![shape.clone()], Vec::new(), span)
        }
        "tile" => {
            let Some(reps) = args.first().and_then(|a| sizes(cx, &mut st, std::slice::from_ref(a))) else { return Ok(unknown(st)) };
            let Some(rank) = s.rank() else { return Ok(unknown(st)) };
            let mut padded = vec![Dim::konst(1); rank.saturating_sub(reps.len())];
            padded.extend(reps);
            let Some(vals) = int_values(&padded) else { return Ok(unknown(st)) };
            tensor::method(cx, st, recv, "repeat", vals, Vec::new(), span)
        }
        "ravel" => tensor::method(cx, st, recv, "flatten", Vec::new(), Vec::new(), span),
        "unflatten" => {
            let b = bind(&["dim", "sizes"], args, kwargs);
            let Some(d) = const_arg(&b, "dim") else { return Ok(unknown(st)) };
            let Some(parts) = b.get("sizes").and_then(|v| sizes(cx, &mut st, std::slice::from_ref(v))) else { return Ok(unknown(st)) };
            let Some(i) = check_dim(cx, &st, &s, d, span, what) else { return Ok(unknown(st)) };
            if i == usize::MAX {
                return Ok(Vec::new());
            }
            if s.dims.is_empty() {
                return Ok(unknown(st));
            }
            // the sizes, with at most one -1, must multiply to the dim's size: that is `view` of the dim
            let piece = tensor_value(Shape::known(vec![s.dims[i].clone()]), t.dtype);
            let Some(vals) = int_values(&parts) else { return Ok(unknown(st)) };
            let mut res = Vec::new();
            for (st2, v) in tensor::method(cx, st, piece, "view", vals, Vec::new(), span) {
                match v {
                    Value::Tensor(p) => {
                        let mut dims = s.dims[..i].to_vec();
                        dims.extend(p.shape.dims.iter().cloned());
                        dims.extend(s.dims[i + 1..].iter().cloned());
                        res.push((st2, tensor_value(Shape::known(dims), t.dtype)));
                    }
                    other => res.push((st2, other)),
                }
            }
            res
        }
        "scatter" | "scatter_" | "scatter_add" | "scatter_add_" | "scatter_reduce" | "scatter_reduce_" => {
            let b = bind(&["dim", "index", "src"], args, kwargs);
            let src = b.get("src").or(kwargs.iter().find(|(k, _)| &**k == "value").map(|(_, v)| v));
            let (Some(d), Some(Value::Tensor(idx))) = (const_arg(&b, "dim"), b.get("index")) else { return Ok(unknown(st)) };
            let is = st.resolve(&idx.shape);
            let srcs = match src {
                Some(Value::Tensor(x)) => Some(st.resolve(&x.shape)),
                _ => None,
            };
            if !index_fits(cx, &st, &s, &is, srcs.as_ref(), d, span, name) {
                return Ok(Vec::new());
            }
            vec![(st, recv)]
        }
        "gather" => {
            let b = bind(&["dim", "index"], args, kwargs);
            let (Some(d), Some(Value::Tensor(idx))) = (const_arg(&b, "dim"), b.get("index")) else { return Ok(unknown(st)) };
            let is = st.resolve(&idx.shape);
            if !index_fits(cx, &st, &s, &is, None, d, span, name) {
                return Ok(Vec::new());
            }
            if is.rank().is_none() {
                return Ok(unknown(st));
            }
            vec![(st, tensor_value(is, t.dtype))]
        }
        "diag" if args.is_empty() && kwargs.is_empty() => match check_rank(cx, &st, &s, |r| r == 1 || r == 2, "1-D or 2-D", "diag", span) {
            Some(false) => Vec::new(),
            Some(true) if s.dims.len() == 1 => out(st, vec![s.dims[0].clone(), s.dims[0].clone()], t.dtype),
            Some(true) => match min_dim(cx, &st, &s.dims[0], &s.dims[1]) {
                Some(m) => out(st, vec![m], t.dtype),
                None => unknown(st),
            },
            None => unknown(st),
        },
        "diagonal" if args.is_empty() && kwargs.is_empty() => match check_rank(cx, &st, &s, |r| r >= 2, "2-D or higher", "diagonal", span) {
            Some(false) => Vec::new(),
            Some(true) => match min_dim(cx, &st, &s.dims[0], &s.dims[1]) {
                Some(m) => {
                    let mut dims = s.dims[2..].to_vec();
                    dims.push(m);
                    out(st, dims, t.dtype)
                }
                None => unknown(st),
            },
            None => unknown(st),
        },
        "trace" => match check_rank(cx, &st, &s, |r| r == 2, "2-D", "trace", span) {
            Some(false) => Vec::new(),
            Some(true) => out(st, Vec::new(), t.dtype),
            None => unknown(st),
        },
        "repeat_interleave" => {
            let b = bind(&["repeats", "dim"], args, kwargs);
            let Some(Value::Int(k)) = b.get("repeats") else { return Ok(unknown(st)) };
            let k = k.clone();
            match b.get("dim") {
                None | Some(Value::None) => {
                    let Some(n) = s.rank().and_then(|_| s.dims.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(d.v.as_ref()?))) else { return Ok(unknown(st)) };
                    out(st, vec![Dim { v: n.mul(&k), why: None }], t.dtype)
                }
                Some(dv) => {
                    let Some(d) = dv.as_const_int() else { return Ok(unknown(st)) };
                    let Some(i) = check_dim(cx, &st, &s, d, span, what) else { return Ok(unknown(st)) };
                    if i == usize::MAX {
                        return Ok(Vec::new());
                    }
                    if s.dims.is_empty() {
                        return Ok(out(st, vec![Dim::known(k, None)], t.dtype));
                    }
                    let mut dims = s.dims.clone();
                    dims[i] = Dim { v: dims[i].v.as_ref().and_then(|p| p.mul(&k)), why: None };
                    out(st, dims, t.dtype)
                }
            }
        }
        "unfold" => {
            let b = bind(&["dimension", "size", "step"], args, kwargs);
            let (Some(d), Some(Value::Int(size)), Some(Value::Int(step))) = (const_arg(&b, "dimension"), b.get("size"), b.get("step")) else { return Ok(unknown(st)) };
            return Ok(unfold(cx, st, t, &s, d, size, step, span));
        }
        "new_zeros" | "new_ones" | "new_empty" | "new_full" => {
            let size_arg: Vec<Value> = match (name, args) {
                ("new_full", [size, ..]) => vec![size.clone()],
                ("new_full", []) => return Ok(unknown(st)),
                _ => args.to_vec(),
            };
            let Some(dims) = sizes(cx, &mut st, &size_arg) else { return Ok(unknown(st)) };
            let dtype = kwargs.iter().find(|(k, _)| &**k == "dtype").map(|(_, v)| tensor::dtype_of(v)).unwrap_or(t.dtype);
            out(st, dims, dtype)
        }
        "type_as" => match args.first() {
            Some(Value::Tensor(o)) => vec![(st, tensor_value(t.shape.clone(), o.dtype))],
            _ => unknown(st),
        },
        "mm" | "bmm" | "mv" | "dot" | "vdot" | "inner" | "outer" | "ger" => {
            let Some(Value::Tensor(o)) = args.first() else { return Ok(unknown(st)) };
            let os = st.resolve(&o.shape);
            let (ra, rb) = match name {
                "mm" => (2, 2),
                "bmm" => (3, 3),
                "mv" => (2, 1),
                _ => (1, 1),
            };
            let desc = |n: usize| format!("{n}-D");
            if check_rank(cx, &st, &s, |r| r == ra, &desc(ra), &format!("torch.{name} (first argument)"), span) == Some(false)
                || check_rank(cx, &st, &os, |r| r == rb, &desc(rb), &format!("torch.{name} (second argument)"), span) == Some(false)
            {
                return Ok(Vec::new());
            }
            if s.rank().is_none() || os.rank().is_none() {
                return Ok(unknown(st));
            }
            if matches!(name, "outer" | "ger") {
                return Ok(out(st, vec![s.dims[0].clone(), os.dims[0].clone()], t.dtype));
            }
            if name == "bmm" {
                // batch sizes must be equal: no broadcasting
                let eq = cx.dim_eq(&st, &s.dims[0], &os.dims[0]);
                if !cx.check(&st, span, eq.not(), |cx| {
                    let (a, b2) = (cx.show_shape(&st, &s), cx.show_shape(&st, &os));
                    (MatmulShapeMismatch::BatchSizes { lhs: a, rhs: b2 }, Vec::new())
                }) {
                    return Ok(Vec::new());
                }
            }
            matmul(cx, st, if matches!(name, "mm" | "bmm") { name } else { "matmul" }, recv, args[0].clone(), span)
        }
        "addmm" | "baddbmm" | "addbmm" | "addmv" => {
            // torch.addmm(input, a, b): input broadcasts to the product's shape
            let (Some(a), Some(b2)) = (args.first(), args.get(1)) else { return Ok(unknown(st)) };
            let prod_op = match name {
                "addmm" => "mm",
                "baddbmm" => "bmm",
                _ => return Ok(unknown(st)),
            };
            let Value::Tensor(at) = a else { return Ok(unknown(st)) };
            let mut res = Vec::new();
            for (st2, p) in method(cx, st, at, prod_op, std::slice::from_ref(b2), &[], span).unwrap_or_default() {
                match p {
                    Value::Tensor(p) => {
                        let ps = st2.resolve(&p.shape);
                        let Some(vals) = ps.rank().and_then(|_| int_values(&ps.dims)) else {
                            res.push((st2, Value::Unknown));
                            continue;
                        };
                        res.extend(tensor::method(cx, st2, recv.clone(), "expand", vals, Vec::new(), span));
                    }
                    other => res.push((st2, other)),
                }
            }
            res
        }
        // `torch.meshgrid(a, b, ..., indexing='ij'|'xy')`: each of 0 or 1 dims, of one dtype
        // (else torch raises: not modelled); N grids of the inputs' lengths, the first two
        // swapped for 'xy'
        "meshgrid" => {
            let indexing = match kwargs.iter().find(|(k, _)| &**k == "indexing").map(|(_, v)| v) {
                None | Some(Value::None) => "ij",
                Some(v) => match v.as_str() {
                    Some("ij") => "ij",
                    Some("xy") => "xy",
                    _ => return Ok(unknown(st)),
                },
            };
            if kwargs.iter().any(|(k, _)| &**k != "indexing") {
                return Ok(unknown(st));
            }
            let mut lens = Vec::new();
            for a in std::iter::once(&Value::Tensor(t.clone())).chain(args.iter()) {
                let Value::Tensor(o) = a else { return Ok(unknown(st)) };
                let os = st.resolve(&o.shape);
                if o.dtype.is_none() || o.dtype != t.dtype || o.device != t.device {
                    return Ok(unknown(st));
                }
                match os.rank() {
                    Some(0) => lens.push(Dim::konst(1)),
                    Some(1) => lens.push(os.dims[0].clone()),
                    _ => return Ok(unknown(st)),
                }
            }
            if indexing == "xy" && lens.len() >= 2 {
                lens.swap(0, 1);
            }
            let n = lens.len();
            let grid = tensor_value(Shape::known(lens), t.dtype);
            vec![(st, Value::Tuple(Rc::new(vec![grid; n])))]
        }
        "broadcast_tensors" => {
            let mut shape = s.clone();
            for a in args {
                let Value::Tensor(o) = a else { return Ok(unknown(st)) };
                match broadcast(cx, &st, &shape, &o.shape, span, "torch.broadcast_tensors") {
                    Some(x) => shape = x,
                    None => return Ok(Vec::new()),
                }
            }
            let mut items = vec![tensor_value(shape.clone(), t.dtype)];
            items.extend(args.iter().map(|a| match a {
                Value::Tensor(o) => tensor_value(shape.clone(), o.dtype),
                _ => Value::Unknown,
            }));
            vec![(st, Value::Tuple(Rc::new(items)))]
        }
        _ => return Err(st),
    })
}

/// `min(a, b)` of two dims when decidable.
fn min_dim(cx: &dyn ModelCtx, st: &State, a: &Dim, b: &Dim) -> Option<Dim> {
    let (x, y) = (a.v.as_ref()?, b.v.as_ref()?);
    match cx.poly_cmp(st, x, Rel::Le, y) {
        Tri::True => Some(a.clone()),
        Tri::False => Some(b.clone()),
        Tri::Unknown => None,
    }
}

/// A constant index `k` into dim `i` of `s`: `-n <= k < n`. False: torch raises (recorded).
fn index_in_range(cx: &mut dyn ModelCtx, st: &State, s: &Shape, i: usize, k: i128, span: Span, what: &str) -> bool {
    let Some(n) = s.dims.get(i).and_then(|d| d.v.clone()) else { return true };
    let kp = Poly::constant(k);
    let violated = if k >= 0 { cx.poly_cmp(st, &n, Rel::Le, &kp) } else { cx.poly_cmp(st, &n, Rel::Lt, &Poly::constant(-k)) };
    cx.check(st, span, violated, |cx| {
        let (shown, ns) = (cx.show_shape(st, s), cx.show_dim(&s.dims[i]));
        (IndexOutOfRange::Select { op: what.into(), index: k.to_string(), dim: i.to_string(), shape: shown, size: ns }, Vec::new())
    })
}

/// `gather`/`scatter`: the index has the input's rank, and its size along every dim other than
/// `dim` is at most the input's (and, for `scatter` with a `src` tensor, at most `src`'s along
/// every dim). False: torch raises (recorded).
#[allow(clippy::too_many_arguments)]
fn index_fits(cx: &mut dyn ModelCtx, st: &State, s: &Shape, is: &Shape, src: Option<&Shape>, d: i128, span: Span, what: &str) -> bool {
    let (Some(rank), Some(ir)) = (s.rank(), is.rank()) else { return true };
    if !cx.check(st, span, Tri::from_bool(rank.max(1) != ir.max(1)), |cx| {
        let (shown, ishown) = (cx.show_shape(st, s), cx.show_shape(st, is));
        (InvalidShapeArgument::IndexRank { op: what.into(), index: ishown.clone(), input: shown.clone() }, Vec::new())
    }) {
        return false;
    }
    let Some(k) = check_dim(cx, st, s, d, span, what) else { return true };
    if k == usize::MAX {
        return false;
    }
    if rank == 0 || ir == 0 {
        return true;
    }
    let mut violated = Tri::False;
    for j in 0..rank {
        let mut limits = Vec::new();
        if j != k {
            limits.push(&s.dims[j]);
        }
        if let Some(x) = src.filter(|x| x.rank() == Some(rank)) {
            limits.push(&x.dims[j]);
        }
        for lim in limits {
            let (Some(a), Some(b)) = (&is.dims[j].v, &lim.v) else {
                violated = if violated == Tri::True { Tri::True } else { Tri::Unknown };
                continue;
            };
            match cx.poly_cmp(st, b, Rel::Lt, a) {
                Tri::True => violated = Tri::True,
                Tri::Unknown if violated == Tri::False => violated = Tri::Unknown,
                _ => {}
            }
        }
    }
    cx.check(st, span, violated, |cx| {
        let (shown, ishown) = (cx.show_shape(st, s), cx.show_shape(st, is));
        (InvalidShapeArgument::IndexLarger { op: what.into(), index: ishown, input: shown, dim: d.to_string() }, Vec::new())
    })
}

/// `torch.tensor(data)` / `torch.as_tensor(data)`: the shape of a nested list/tuple literal; the
/// dtype from the values (bool, integer or float) unless `dtype=` says.
pub fn tensor_literal(cx: &mut dyn ModelCtx, st: State, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let mut st = st;
    let Some(data) = args.first() else { return unknown(st) };
    #[derive(PartialEq, Clone, Copy, PartialOrd)]
    enum Kind {
        Bool,
        Int,
        Float,
    }
    /// The least and greatest integer (a bool as 0/1) of the literal.
    type Range = Option<(i128, i128)>;
    fn seen(range: &mut Range, v: i128) {
        *range = Some(match *range {
            None => (v, v),
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
        });
    }
    fn walk(cx: &mut dyn ModelCtx, st: &mut State, v: &Value, span: Span, depth: usize, kind: &mut Kind, range: &mut Range, ragged: &mut bool) -> Option<Vec<i128>> {
        match v {
            // an int known to be one (a class index), of unknown value: the range then spans
            // every int, so no values are known
            Value::Int(p) if p.as_const().is_none() && cx.syms().is_int(p) => {
                *range = Some((i128::MIN, i128::MAX));
                *kind = if *kind < Kind::Int { Kind::Int } else { *kind };
                Some(Vec::new())
            }
            Value::Bool(b) => {
                seen(range, *b as i128);
                Some(Vec::new())
            }
            // a symbolic int may stand for anything the engine assumed to be an int (a missing
            // constructor argument is a fresh symbol, though the caller may pass a list)
            Value::Int(p) if p.as_const().is_some() => {
                seen(range, p.as_const().unwrap());
                *kind = if *kind < Kind::Int { Kind::Int } else { *kind };
                Some(Vec::new())
            }
            Value::Float(_) => {
                *kind = Kind::Float;
                Some(Vec::new())
            }
            // alike items of unknown number (a comprehension over text): a dim not known
            Value::LibMethod(elem, name) if &**name == "<repeat>" && depth < 8 => {
                let mut out = vec![UNKNOWN_LEN];
                out.extend(walk(cx, st, elem, span, depth + 1, kind, range, ragged)?);
                // (none may be present)
                *range = Some((i128::MIN, i128::MAX));
                Some(out)
            }
            Value::Tuple(_) | Value::Ref(_) if depth < 8 => {
                let items = cx.iterate(st, v, span)?;
                if items.len() > 4096 {
                    return None;
                }
                let mut inner: Option<Vec<i128>> = None;
                for it in &items {
                    let s = walk(cx, st, it, span, depth + 1, kind, range, ragged)?;
                    match &inner {
                        None => inner = Some(s),
                        Some(p) if *p == s => {}
                        Some(_) => {
                            // ragged: torch raises, not a shape rule of ours
                            *ragged = true;
                            return None;
                        }
                    }
                }
                let mut out = vec![items.len() as i128];
                out.extend(inner.unwrap_or_default());
                Some(out)
            }
            _ => None,
        }
    }
    let mut kind = Kind::Bool;
    let mut range = None;
    let mut ragged = false;
    let Some(dims) = walk(cx, &mut st, data, span, 0, &mut kind, &mut range, &mut ragged) else {
        // data the core does not follow (a list built from text, an unknown value): a tensor
        // of unknown shape, of the `dtype=` given (else not known); a ragged list raises
        return match kwargs.iter().find(|(k, _)| &**k == "dtype") {
            _ if ragged => unknown(st),
            given => {
                let (shape, dtype) = (cx.any_shape(), given.and_then(|(_, v)| tensor::dtype_of(v)));
                vec![(st, Value::Tensor(Rc::new(Tensor::new(shape, dtype))))]
            }
        };
    };
    // an empty list is a float tensor of shape [0]
    let empty = dims.contains(&0);
    let dtype = match kwargs.iter().find(|(k, _)| &**k == "dtype") {
        Some((_, v)) => tensor::dtype_of(v),
        None if empty => Some(DType::Float),
        None => Some(match kind {
            Kind::Bool => DType::Bool,
            Kind::Int => DType::Long,
            Kind::Float => DType::Float,
        }),
    };
    // integer values (not floats: `tensor([1.5], dtype=long)` truncates) of an integral
    // dtype, the least and greatest present
    let values = match (kind, range, dtype) {
        (Kind::Int | Kind::Bool, Some((lo, hi)), Some(DType::Long | DType::Int)) if !empty && lo > i128::MIN && hi < i128::MAX => IntBounds::exact(lo, hi, "torch.tensor", span),
        _ => None,
    };
    let dims = dims.into_iter().map(|d| if d == UNKNOWN_LEN { Dim::unknown() } else { Dim::konst(d) }).collect();
    vec![(st, Value::Tensor(Rc::new(Tensor::new(Shape::known(dims), dtype).with_values(values))))]
}

/// A length `tensor_literal` does not know (of alike items of unknown number). The dtype is
/// then taken as if they were at least one (an empty list makes a float tensor).
const UNKNOWN_LEN: i128 = -1;


const RANK: &[&crate::rules::Rule] = &[&r::layer_input_rank_mismatch::RULE];
const DIM: &[&crate::rules::Rule] = &[&r::dim_out_of_range::RULE];
const INDEX: &[&crate::rules::Rule] = &[&r::invalid_shape_argument::RULE, &r::dim_out_of_range::RULE];
const EXPAND: &[&crate::rules::Rule] = &[&r::invalid_shape_argument::RULE, &r::broadcast_shape_mismatch::RULE];
const PRODUCT: &[&crate::rules::Rule] = &[&r::layer_input_rank_mismatch::RULE, &r::matmul_shape_mismatch::RULE];
const ADD_PRODUCT: &[&crate::rules::Rule] = &[&r::layer_input_rank_mismatch::RULE, &r::matmul_shape_mismatch::RULE, &r::invalid_shape_argument::RULE, &r::broadcast_shape_mismatch::RULE];

/// The APIs this family models, for the registry (`models/registry.rs`). The `torch.` forms
/// take the tensor first. (`torch.inner` is not declared: it takes N-D tensors, and the model
/// knows 1-D ones only. `addbmm`/`addmv` are not modelled.)
pub const APIS: &[Decl] = &[
    Decl::function("torch.movedim", "input, source, destination").checks(DIM),
    Decl::method("torch.Tensor.movedim", "source, destination").checks(DIM),
    Decl::function("torch.moveaxis", "input, source, destination").checks(DIM),
    Decl::method("torch.Tensor.moveaxis", "source, destination").checks(DIM),
    Decl::function("torch.select", "input, dim, index").checks(&[&r::layer_input_rank_mismatch::RULE, &r::dim_out_of_range::RULE, &r::index_out_of_range::RULE]),
    Decl::method("torch.Tensor.select", "dim, index").checks(&[&r::layer_input_rank_mismatch::RULE, &r::dim_out_of_range::RULE, &r::index_out_of_range::RULE]),
    Decl::function("torch.fliplr", "input").checks(RANK),
    Decl::method("torch.Tensor.fliplr", "").checks(RANK),
    Decl::function("torch.flipud", "input").checks(RANK),
    Decl::method("torch.Tensor.flipud", "").checks(RANK),
    // the diagonal changes values only
    Decl::function("torch.tril", "input, ~diagonal=0").checks(RANK),
    Decl::method("torch.Tensor.tril", "~diagonal=0").checks(RANK),
    Decl::method("torch.Tensor.tril_", "~diagonal=0").checks(RANK),
    Decl::function("torch.triu", "input, ~diagonal=0").checks(RANK),
    Decl::method("torch.Tensor.triu", "~diagonal=0").checks(RANK),
    Decl::method("torch.Tensor.triu_", "~diagonal=0").checks(RANK),
    Decl::function("torch.t", "input").checks(RANK),
    Decl::method("torch.Tensor.t", "").checks(RANK),
    // attributes (`x.T`, `x.mT`, `x.mH`)
    Decl::method("torch.Tensor.T", ""),
    Decl::method("torch.Tensor.mT", "").checks(RANK),
    Decl::method("torch.Tensor.mH", "").checks(RANK),
    Decl::method("torch.Tensor.expand_as", "other").checks(EXPAND),
    Decl::method("torch.Tensor.view_as", "other").checks(&[&r::reshape_size_mismatch::RULE]),
    Decl::method("torch.Tensor.reshape_as", "other").checks(&[&r::reshape_size_mismatch::RULE]),
    Decl::function("torch.broadcast_to", "input, size").checks(EXPAND),
    Decl::method("torch.Tensor.broadcast_to", "size").checks(EXPAND),
    Decl::function("torch.tile", "input, dims"),
    Decl::method("torch.Tensor.tile", "dims"),
    Decl::function("torch.ravel", "input"),
    Decl::method("torch.Tensor.ravel", ""),
    Decl::function("torch.unflatten", "input, dim, sizes").checks(&[&r::dim_out_of_range::RULE, &r::reshape_size_mismatch::RULE]),
    Decl::method("torch.Tensor.unflatten", "dim, sizes").checks(&[&r::dim_out_of_range::RULE, &r::reshape_size_mismatch::RULE]),
    // `scatter(dim, index, src)` or `scatter(dim, index, value=...)` (`reduce=` is not read)
    Decl::function("torch.scatter", "input, dim, index, src=None, *, value=None").checks(INDEX),
    Decl::method("torch.Tensor.scatter", "dim, index, src=None, *, value=None").checks(INDEX),
    Decl::method("torch.Tensor.scatter_", "dim, index, src=None, *, value=None").checks(INDEX),
    Decl::function("torch.scatter_add", "input, dim, index, src").checks(INDEX),
    Decl::method("torch.Tensor.scatter_add", "dim, index, src").checks(INDEX),
    Decl::method("torch.Tensor.scatter_add_", "dim, index, src").checks(INDEX),
    // the reduction changes values only
    Decl::function("torch.scatter_reduce", "input, dim, index, src, ~reduce, *, ~include_self=True").checks(INDEX),
    Decl::method("torch.Tensor.scatter_reduce", "dim, index, src, ~reduce, *, ~include_self=True").checks(INDEX),
    Decl::method("torch.Tensor.scatter_reduce_", "dim, index, src, ~reduce, *, ~include_self=True").checks(INDEX),
    Decl::function("torch.gather", "input, dim, index, *, ~sparse_grad=False").checks(INDEX),
    Decl::method("torch.Tensor.gather", "dim, index").checks(INDEX),
    // the main diagonal only (`diagonal=`/`offset=` are not read)
    Decl::function("torch.diag", "input").checks(RANK),
    Decl::method("torch.Tensor.diag", "").checks(RANK),
    Decl::function("torch.diagonal", "input").checks(RANK),
    Decl::method("torch.Tensor.diagonal", "").checks(RANK),
    Decl::function("torch.trace", "input").checks(RANK),
    Decl::method("torch.Tensor.trace", "").checks(RANK),
    Decl::function("torch.repeat_interleave", "input, repeats, dim=None").checks(DIM),
    Decl::method("torch.Tensor.repeat_interleave", "repeats, dim=None").checks(DIM),
    // `new_zeros(2, 3)` or `new_zeros((2, 3))`; the fill value gives the values only
    // `torch.unfold` does not exist
    Decl::method("torch.Tensor.unfold", "dimension, size, step").checks(&[&r::dim_out_of_range::RULE, &r::output_size_too_small::RULE, &r::invalid_shape_argument::RULE]),
    Decl::method("torch.Tensor.new_zeros", "*size, dtype=None, ~device=None, ~requires_grad=False, ~layout=torch.strided, ~pin_memory=False"),
    Decl::method("torch.Tensor.new_ones", "*size, dtype=None, ~device=None, ~requires_grad=False, ~layout=torch.strided, ~pin_memory=False"),
    Decl::method("torch.Tensor.new_empty", "*size, dtype=None, ~device=None, ~requires_grad=False, ~layout=torch.strided, ~pin_memory=False"),
    Decl::method("torch.Tensor.new_full", "size, ~fill_value, *, dtype=None, ~device=None, ~requires_grad=False, ~layout=torch.strided, ~pin_memory=False"),
    Decl::method("torch.Tensor.type_as", "other"),
    Decl::function("torch.mm", "input, mat2").checks(PRODUCT),
    Decl::method("torch.Tensor.mm", "mat2").checks(PRODUCT),
    Decl::function("torch.bmm", "input, mat2").checks(PRODUCT),
    Decl::method("torch.Tensor.bmm", "mat2").checks(PRODUCT),
    Decl::function("torch.mv", "input, vec").checks(PRODUCT),
    Decl::method("torch.Tensor.mv", "vec").checks(PRODUCT),
    Decl::function("torch.dot", "input, tensor").checks(PRODUCT),
    Decl::method("torch.Tensor.dot", "tensor").checks(PRODUCT),
    Decl::function("torch.vdot", "input, other").checks(PRODUCT),
    Decl::method("torch.Tensor.vdot", "other").checks(PRODUCT),
    Decl::function("torch.outer", "input, vec2").checks(RANK),
    Decl::method("torch.Tensor.outer", "vec2").checks(RANK),
    Decl::function("torch.ger", "input, vec2").checks(RANK),
    Decl::method("torch.Tensor.ger", "vec2").checks(RANK),
    // (`beta=`/`alpha=` are not read)
    Decl::function("torch.addmm", "input, mat1, mat2").checks(ADD_PRODUCT),
    Decl::method("torch.Tensor.addmm", "mat1, mat2").checks(ADD_PRODUCT),
    Decl::function("torch.baddbmm", "input, batch1, batch2").checks(ADD_PRODUCT),
    Decl::method("torch.Tensor.baddbmm", "batch1, batch2").checks(ADD_PRODUCT),
    Decl::function("torch.broadcast_tensors", "*tensors").checks(&[&r::broadcast_shape_mismatch::RULE]),
    // (inputs of 2 or more dims, of different dtypes or devices, raise: not modelled, Unknown)
    Decl::function("torch.meshgrid", "*tensors, indexing=None"),
    // (`device`, `requires_grad`, `pin_memory` change neither shape nor dtype)
    Decl::function("torch.tensor", "data, *, dtype=None, ~device=None, ~requires_grad=False, ~pin_memory=False"),
    Decl::function("torch.as_tensor", "data, *, dtype=None, ~device=None"),
];
