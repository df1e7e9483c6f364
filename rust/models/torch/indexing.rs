//! Indexing and selection: `x[...]`, `torch.where`, `masked_fill`, `index_select`, `index_add`, `narrow`.

use std::rc::Rc;

use crate::models::bind;
use super::tensor::{broadcast, check_dim, check_index_values, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape::{self as r, IndexOutOfRange, InvalidShapeArgument};
use crate::shape::{Formula, Poly, Tri};

/// `torch.` functions modelled here; `Err(st)` gives the state back when `f` is not one of them.
pub fn function(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], span: Span) -> Result<Vals, State> {
    Ok(match f {
        "where" if args.len() == 3 => where_(cx, st, args, span),
        _ => return Err(st),
    })
}

/// Tensor methods modelled here; `Err(st)` gives the state back when `name` is not one of them.
#[allow(clippy::too_many_arguments)]
pub fn method(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    Ok(match name {
        "masked_fill" | "masked_fill_" => masked_fill(cx, st, t, name, args, kwargs, span),
        "index_select" => index_select(cx, st, t, s, args, kwargs, span),
        "index_add" | "index_add_" => index_add(cx, st, t, s, name, args, kwargs, span),
        "narrow" => narrow(cx, st, t, s, args, kwargs, span),
        _ => return Err(st),
    })
}

/// `torch.where(cond, a, b)`: the three broadcast together.
fn where_(cx: &mut dyn ModelCtx, st: State, args: &[Value], span: Span) -> Vals {
    let shapes: Option<Vec<Shape>> = args
        .iter()
        .map(|a| match a {
            Value::Tensor(t) => Some(t.shape.clone()),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => Some(Shape::known(Vec::new())),
            _ => None,
        })
        .collect();
    let Some(shapes) = shapes else { return vec![(st, Value::Unknown)] };
    if matches!(&args[0], Value::Tensor(c) if c.dtype.is_some_and(|d| d != DType::Bool)) {
        return vec![(st, Value::Unknown)]; // a non-bool condition raises: a dtype matter
    }
    let Some(ab) = broadcast(cx, &st, &shapes[1], &shapes[2], span, "torch.where") else { return Vec::new() };
    let Some(all) = broadcast(cx, &st, &shapes[0], &ab, span, "torch.where") else { return Vec::new() };
    let dtype = match (&args[1], &args[2]) {
        (Value::Tensor(x), Value::Tensor(y)) if x.dtype == y.dtype => x.dtype,
        (Value::Tensor(x), Value::Float(_) | Value::Int(_)) | (Value::Float(_) | Value::Int(_), Value::Tensor(x)) => x.dtype,
        _ => None,
    };
    vec![(st, tensor_value(all, dtype))]
}

fn masked_fill(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let same = |st: State| vec![(st, Value::Tensor(t.clone()))];
    // a tensor value must be 0-dim (torch raises otherwise): not modelled unless it is known to be
    if let Some(Value::Tensor(v)) = args.get(1).or(kwargs.iter().find(|(k, _)| &**k == "value").map(|(_, v)| v)) {
        if st.resolve(&v.shape).rank() != Some(0) {
            return vec![(st, Value::Unknown)];
        }
    }
    match args.first().or(kwargs.iter().find(|(k, _)| &**k == "mask").map(|(_, v)| v)) {
        Some(Value::Tensor(m)) => {
            let m = m.clone();
            match broadcast(cx, &st, &t.shape, &m.shape, span, name) {
                Some(sh) if name == "masked_fill" => vec![(st, tensor_value(sh, t.dtype))],
                // in place: the broadcast shape must be `self`'s (torch raises "output with shape []
                // doesn't match the broadcast shape [2, 3]")
                Some(sh) if super::pointwise::fits_in_place(cx, &st, &t.shape, &sh, span, name) => same(st),
                _ => Vec::new(),
            }
        }
        _ => same(st),
    }
}

fn index_select(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let b = bind(&["dim", "index"], args, kwargs);
    let (Some(d), Some(Value::Tensor(idx))) = (b.get("dim").and_then(|v| v.as_const_int()), b.get("index")) else {
        return vec![(st, Value::Unknown)];
    };
    let is = st.resolve(&idx.shape);
    let Some(ir) = is.rank() else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(ir > 1), |cx| {
        let shown = cx.show_shape(&st, &is);
        (InvalidShapeArgument::IndexSelectRank { index: shown, rank: ir.to_string() }, Vec::new())
    }) {
        return Vec::new();
    }
    let Some(i) = check_dim(cx, &st, &s, d, span, "index_select") else { return vec![(st, Value::Unknown)] };
    if i == usize::MAX {
        return Vec::new();
    }
    // known index values outside `[0, size)` (negative ones too): "index out of range in self"
    if let Some(n) = s.dims.get(i).and_then(|d| d.as_const())
        && matches!(idx.dtype, Some(DType::Long | DType::Int))
        && !check_index_values(cx, &st, idx, Some(n), None, span, "index_select", |cx| format!("dimension {i} of {} (size {n})", cx.show_shape(&st, s)))
    {
        return Vec::new();
    }
    if ir != 1 || s.dims.is_empty() {
        return vec![(st, Value::Unknown)];
    }
    let mut dims = s.dims.clone();
    dims[i] = is.dims[0].clone();
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

/// `x.index_add(dim, index, source)` (and in place): `source` holds one slice per index along
/// `dim` and matches `x` elsewhere (`Number of indices (3) should be equal to source.size(dim)`,
/// `source tensor shape must match self tensor shape, excluding the specified dimension`); the
/// result is `x`'s shape. A source of another rank or dtype is not modelled (Unknown).
#[allow(clippy::too_many_arguments)]
fn index_add(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let b = bind(&["dim", "index", "source", "alpha"], args, kwargs);
    let (Some(d), Some(Value::Tensor(idx)), Some(Value::Tensor(src))) = (b.get("dim").and_then(|v| v.as_const_int()), b.get("index"), b.get("source")) else {
        return vec![(st, Value::Unknown)];
    };
    let what = format!("{name}()");
    let (is, ss) = (st.resolve(&idx.shape), st.resolve(&src.shape));
    let (Some(ir), Some(rank), Some(sr)) = (is.rank(), s.rank(), ss.rank()) else { return vec![(st, Value::Unknown)] };
    if rank == 0 || sr != rank || (src.dtype.is_some() && t.dtype.is_some() && src.dtype != t.dtype) {
        return vec![(st, Value::Unknown)];
    }
    let Some(i) = check_dim(cx, &st, s, d, span, &what) else { return vec![(st, Value::Unknown)] };
    if i == usize::MAX {
        return Vec::new();
    }
    if !cx.check(&st, span, Tri::from_bool(ir > 1), |cx| {
        let shown = cx.show_shape(&st, &is);
        (InvalidShapeArgument::IndexAddRank { op: what.clone(), index: shown, rank: ir.to_string() }, Vec::new())
    }) {
        return Vec::new();
    }
    let count = if ir == 0 { Dim::konst(1) } else { is.dims[0].clone() };
    if !cx.check(&st, span, cx.dim_eq_f(&count, &ss.dims[i]).not(), |cx| {
        let (c, shown, size) = (cx.show_dim(&count), cx.show_shape(&st, &ss), cx.show_dim(&ss.dims[i]));
        (InvalidShapeArgument::IndexAddCount { op: what.clone(), count: c, source: shown, dim: i.to_string(), size }, Vec::new())
    }) {
        return Vec::new();
    }
    for j in (0..rank).filter(|&j| j != i) {
        if !cx.check(&st, span, cx.dim_eq_f(&s.dims[j], &ss.dims[j]).not(), |cx| {
            let (src_shown, shown) = (cx.show_shape(&st, &ss), cx.show_shape(&st, s));
            (InvalidShapeArgument::IndexAddSource { op: what.clone(), source: src_shown, input: shown, dim: i.to_string() }, Vec::new())
        }) {
            return Vec::new();
        }
    }
    if name == "index_add_" {
        return vec![(st, Value::Tensor(t.clone()))];
    }
    vec![(st, tensor_value(s.clone(), t.dtype))]
}

fn narrow(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let b = bind(&["dim", "start", "length"], args, kwargs);
    let (Some(d), Some(start), Some(len)) = (b.get("dim").and_then(|v| v.as_const_int()), b.get("start").and_then(|v| v.as_int()), b.get("length").and_then(|v| v.as_int())) else {
        return vec![(st, Value::Unknown)];
    };
    let Some(i) = check_dim(cx, &st, &s, d, span, "narrow") else { return vec![(st, Value::Unknown)] };
    if i == usize::MAX {
        return Vec::new();
    }
    let Some(n) = s.dims[i].v.clone() else { return vec![(st, Value::Unknown)] };
    let end = start.add(len);
    let Some(end) = end else { return vec![(st, Value::Unknown)] };
    let violated = Formula::cmp(&n, crate::shape::Rel::Lt, &end);
    if !cx.check(&st, span, violated, |cx| {
        let shown = cx.show_shape(&st, &s);
        let (es, ns) = (end.display(cx.syms()), cx.show_dim(&s.dims[i]));
        (IndexOutOfRange::Narrow { end: es, dim: i.to_string(), size: ns, shape: shown }, Vec::new())
    }) {
        return Vec::new();
    }
    let mut dims = s.dims.clone();
    dims[i] = Dim::known(len.clone(), None);
    // a view with the input's strides, as a slice
    let rank = dims.len();
    let layout = t.layout.as_ref().and_then(|l| sliced_layout(l, &s.dims, &(0..rank).collect::<Vec<_>>(), &[i], false));
    vec![(st, Value::Tensor(Rc::new(Tensor::new(Shape::known(dims), t.dtype).with_layout(layout))))]
}

/// A slice as the evaluator gives it (`("<slice>", start, stop, step)`).
pub fn is_slice(v: &Value) -> bool {
    matches!(v, Value::Tuple(t) if t.len() == 4 && t[0].as_str() == Some("<slice>"))
}

/// An item of a basic index, which gives a view: an int, `None`, a slice or `...`.
pub fn is_basic_item(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::None) || is_slice(v) || v.as_str() == Some("<ellipsis>")
}

/// `x[...]`: integers, slices, `None`, `...` on a tensor of known rank.
pub fn index(cx: &mut dyn ModelCtx, st: State, o: Value, i: Value, span: Span) -> Vals {
    let Value::Tensor(t) = &o else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    let items: Vec<Value> = match &i {
        Value::Tuple(items) if !is_slice(&i) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    // a tensor index of a floating dtype: torch raises "tensors used as indices must be long,
    // int, byte or bool tensors" (SHP202)
    for ix in items.iter().filter_map(|v| if let Value::Tensor(ix) = v { Some(ix) } else { None }) {
        if ix.dtype.is_some_and(DType::is_floating) && !super::dtype::check_indices(cx, &st, "indexing", ix, &[DType::Long, DType::Int, DType::Byte, DType::Bool], span) {
            return Vec::new();
        }
    }
    // Whatever the index, a tensor's `__getitem__` gives a tensor of its dtype or raises: an
    // index not modelled gives, on every path that goes on, such a tensor of a shape not known
    // (the dispatch gives it the input's device and graph).
    let any = |cx: &mut dyn ModelCtx, st: State| {
        let shape = cx.any_shape();
        vec![(st, Value::Tensor(Rc::new(Tensor::new(shape, t.dtype))))]
    };
    let Some(rank) = s.rank() else { return any(cx, st) };
    let is_ellipsis = |v: &Value| v.as_str() == Some("<ellipsis>");
    // Only an index known to be an int, a bool, a slice, None, `...` or an integer/bool tensor
    // is modelled. Anything else (an unmodelled library attribute, a list, an object with
    // `__index__`, a value of unknown type) may be a new axis, a mask or an advanced index:
    // the result is Unknown, and it never counts as an integer index.
    let known = |v: &Value| match v {
        Value::Int(_) | Value::Bool(_) | Value::None => true,
        Value::Tensor(ix) => matches!(ix.dtype, Some(DType::Long | DType::Int | DType::Bool)) && st.resolve(&ix.shape).rank().is_some(),
        v => is_slice(v) || is_ellipsis(v),
    };
    // several Python bools are indexed together, as one advanced index (`x[True, :, True]` is
    // [1, 2, 3]): not modelled
    let bools = items.iter().filter(|v| matches!(v, Value::Bool(_))).count();
    if !items.iter().all(known) || items.iter().filter(|v| is_ellipsis(v)).count() > 1 || bools > 1 {
        return any(cx, st);
    }
    // integer/bool tensor indices: one of them, or several integer ones of one shape (`x[:, rows,
    // cols]`, which index together: their shape once, where the first stands when they are
    // side by side, else first). Others broadcast together, and ints then take part in advanced
    // indexing, which moves dims around: not modelled
    let tensor_items = items.iter().filter(|v| matches!(v, Value::Tensor(_))).count();
    let int_items = items.iter().filter(|v| matches!(v, Value::Int(_) | Value::Bool(_))).count();
    let together: Option<(Vec<Dim>, bool)> = if tensor_items > 1 && int_items == 0 {
        let shapes: Vec<Option<Shape>> = items
            .iter()
            .filter_map(|v| match v {
                Value::Tensor(ix) => Some(matches!(ix.dtype, Some(DType::Long | DType::Int)).then(|| st.resolve(&ix.shape)).filter(|s| s.prefix.is_none())),
                _ => None,
            })
            .collect();
        let first = shapes[0].clone();
        let same = first.as_ref().is_some_and(|f| shapes.iter().all(|s| s.as_ref().is_some_and(|s| s.dims.len() == f.dims.len() && s.dims.iter().zip(&f.dims).all(|(a, b)| a.v.is_some() && a.v == b.v))));
        let at: Vec<usize> = items.iter().enumerate().filter(|(_, v)| matches!(v, Value::Tensor(_))).map(|(i, _)| i).collect();
        let adjacent = at.windows(2).all(|w| w[1] == w[0] + 1);
        first.filter(|_| same).map(|f| (f.dims, adjacent))
    } else {
        None
    };
    if (tensor_items > 1 && together.is_none()) || (tensor_items == 1 && int_items > 0) {
        return any(cx, st);
    }
    let mut first_tensor = true;
    // the dims an index consumes: a bool tensor its rank, a Python bool none (like `None`,
    // it adds a dim: of size 1 for True, 0 for False), an int, a slice or an integer tensor one
    let consumed: usize = items
        .iter()
        .map(|v| match v {
            Value::None | Value::Bool(_) => 0,
            Value::Tensor(ix) if ix.dtype == Some(DType::Bool) => st.resolve(&ix.shape).rank().unwrap_or(0),
            v if is_ellipsis(v) => 0,
            _ => 1,
        })
        .sum();
    if !cx.check(&st, span, Tri::from_bool(consumed > rank), |cx| {
        let shown = cx.show_shape(&st, &s);
        (IndexOutOfRange::TooManyIndices { shape: shown.clone(), count: consumed.to_string(), rank: rank.to_string() }, Vec::new())
    }) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut k = 0usize;
    // the input dims the result keeps, in order, while only slices, ints and `...` index, and
    // the dims an int or a slice that is not `:` indexes
    let mut kept: Option<Vec<usize>> = Some(Vec::new());
    let mut cut: Vec<usize> = Vec::new();
    let mut stepped = false;
    for it in &items {
        if it.as_str() == Some("<ellipsis>") {
            let skip = rank - consumed;
            out.extend(s.dims[k..k + skip].iter().cloned());
            if let Some(kept) = kept.as_mut() {
                kept.extend(k..k + skip);
            }
            k += skip;
            continue;
        }
        // `None`, a bool or a tensor index: the layout is not followed
        if !matches!(it, Value::Int(_)) && !is_slice(it) {
            kept = None;
        }
        match it {
            Value::None => out.push(Dim::konst(1)),
            Value::Bool(b) => out.push(Dim::konst(*b as i128)),
            v if is_slice(v) => {
                let Value::Tuple(sl) = v else { unreachable!() };
                let d = &s.dims[k];
                let (lo, hi, step) = (&sl[1], &sl[2], &sl[3]);
                let new = if matches!(lo, Value::None) && matches!(hi, Value::None) && matches!(step, Value::None) {
                    d.clone()
                } else {
                    cut.push(k);
                    // a step spreads the dim's elements apart
                    stepped |= !matches!(step, Value::None) && step.as_const_int() != Some(1);
                    slice_len(cx, &st, d, lo, hi, step)
                };
                if let Some(kept) = kept.as_mut() {
                    kept.push(k);
                }
                out.push(new);
                k += 1;
            }
            Value::Tensor(ix) => {
                let is = st.resolve(&ix.shape);
                match (ix.dtype, is.rank()) {
                    // (indexing together: their shape once, here when side by side)
                    (Some(DType::Long | DType::Int), Some(_)) if let Some((dims, adjacent)) = &together => {
                        if std::mem::replace(&mut first_tensor, false) && *adjacent {
                            out.extend(dims.iter().cloned());
                        }
                        k += 1;
                    }
                    (Some(DType::Long | DType::Int), Some(_)) => {
                        out.extend(is.dims.iter().cloned());
                        k += 1;
                    }
                    (Some(DType::Bool), Some(r)) if r >= 1 => {
                        // a mask selects an unknown number of elements
                        out.push(Dim::unknown());
                        k += r;
                    }
                    _ => return vec![(st, Value::Unknown)],
                }
            }
            Value::Int(_) => {
                let d = &s.dims[k];
                if let (Some(n), Some(c)) = (d.as_const(), it.as_const_int()) {
                    let kk = k;
                    if !cx.check(&st, span, Tri::from_bool(c >= n || c < -n), |cx| {
                        let shown = cx.show_shape(&st, &s);
                        cx.cite(d, true);
                        (IndexOutOfRange::Subscript { index: c.to_string(), dim: kk.to_string(), size: n.to_string(), shape: shown }, Vec::new())
                    }) {
                        return Vec::new();
                    }
                }
                cut.push(k);
                k += 1;
            }
            _ => return vec![(st, Value::Unknown)],
        }
    }
    out.extend(s.dims[k.min(rank)..].iter().cloned());
    if let Some(kept) = kept.as_mut() {
        kept.extend(k.min(rank)..rank);
    }
    if let Some((dims, false)) = together {
        out.splice(0..0, dims);
    }
    // the elements are some of x's: its value bounds hold, none is known to be attained
    let values = t.values.as_ref().map(|b| b.subset());
    let layout = kept.and_then(|kept| sliced_layout(t.layout.as_ref()?, &s.dims, &kept, &cut, stepped));
    vec![(st, Value::Tensor(Rc::new(Tensor::new(Shape::known(out), t.dtype).with_values(values).with_layout(layout))))]
}

/// The layout of a basic slice of a tensor of layout `l` and dims `dims` that keeps the input
/// dims `kept` and indexes the dims `cut` (with an int, or a slice that is not `:`): a slice is
/// a view with the input's strides, so the kept dims stay in their memory order (`x.t()[1:]`
/// is still transposed). Cutting a dim leaves gaps between the elements unless every dim
/// outer to it in memory has size 1 (`x[1:]` of a contiguous `x` is contiguous, `x[:, :3]`
/// is not): the layout then says so (`Layout::gaps`), as it does after a step (`stepped`:
/// `x[::2]`).
fn sliced_layout(l: &Layout, dims: &[Dim], kept: &[usize], cut: &[usize], stepped: bool) -> Option<Layout> {
    if l.perm.len() != dims.len() || kept.iter().chain(cut).any(|&d| d >= dims.len()) {
        return None;
    }
    let order: Vec<u8> = kept.iter().map(|&d| l.perm[d]).collect();
    // renumber the kept memory positions 0..n in their order
    let perm: Rc<[u8]> = order.iter().map(|p| order.iter().filter(|q| *q < p).count() as u8).collect();
    let gaps = l.gaps || stepped || cut.iter().any(|&c| (0..dims.len()).any(|o| l.perm[o] < l.perm[c] && dims[o].as_const() != Some(1)));
    Some(Layout { perm, origin: l.origin, gaps })
}

fn slice_len(cx: &dyn ModelCtx, st: &State, d: &Dim, lo: &Value, hi: &Value, step: &Value) -> Dim {
    let step = match step {
        Value::None => 1,
        v => match v.as_const_int() {
            Some(s) if s > 0 => s,
            _ => return Dim::unknown(),
        },
    };
    let Some(n) = d.v.clone() else { return Dim::unknown() };
    // clamp(x) for a non-negative bound x: min(x, n), decided by the facts
    let clamp = |x: &Poly| -> Option<Poly> {
        match cx.poly_cmp(st, x, crate::shape::Rel::Le, &n) {
            Tri::True => Some(x.clone()),
            Tri::False => Some(n.clone()),
            Tri::Unknown => None,
        }
    };
    // a negative bound counts from the end: n + x, at least 0
    let from_end = |q: Poly| -> Option<Poly> {
        match cx.poly_cmp(st, &q, crate::shape::Rel::Lt, &Poly::constant(0)) {
            Tri::True => Some(Poly::constant(0)),
            Tri::False => clamp(&q),
            Tri::Unknown => None,
        }
    };
    let bound = |v: &Value, default: &Poly| -> Option<Poly> {
        // a 0-d integer tensor of a known int is that int (`operator.index`)
        let index = match v {
            Value::Tensor(t) => t.index_value().map(Value::Int),
            _ => None,
        };
        match index.as_ref().unwrap_or(v) {
            Value::None => Some(default.clone()),
            Value::Int(p) => match p.as_const() {
                Some(c) if c < 0 => from_end(n.add_const(c)?),
                Some(_) => clamp(p),
                // a symbolic bound: its sign decides which end it counts from
                None => match cx.poly_cmp(st, p, crate::shape::Rel::Lt, &Poly::constant(0)) {
                    Tri::False => clamp(p),
                    Tri::True => from_end(n.add(p)?),
                    Tri::Unknown => None,
                },
            },
            _ => None,
        }
    };
    let (Some(a), Some(b)) = (bound(lo, &Poly::constant(0)), bound(hi, &n)) else { return Dim::unknown() };
    let Some(len) = b.sub(&a) else { return Dim::unknown() };
    let len = match cx.poly_cmp(st, &len, crate::shape::Rel::Lt, &Poly::constant(0)) {
        Tri::True => Poly::constant(0),
        Tri::False => len,
        Tri::Unknown => return Dim::unknown(),
    };
    if step == 1 {
        return Dim { v: Some(len), why: None };
    }
    Dim { v: len.add_const(step - 1).and_then(|x| x.floordiv(&Poly::constant(step))), why: None }
}

/// The APIs this family models, for the registry (`models/registry.rs`). (`x[...]` is an
/// operator, not a call: it is not in the registry.)
pub const APIS: &[Decl] = &[
    Decl::function("torch.where", "condition, input, other").checks(&[&r::broadcast_shape_mismatch::RULE]),
    Decl::function("torch.masked_fill", "input, mask, value").checks(&[&r::broadcast_shape_mismatch::RULE]),
    Decl::method("torch.Tensor.masked_fill", "mask, value").checks(&[&r::broadcast_shape_mismatch::RULE]),
    Decl::method("torch.Tensor.masked_fill_", "mask, value").checks(&[&r::broadcast_shape_mismatch::RULE]),
    Decl::function("torch.index_select", "input, dim, index").checks(&[&r::invalid_shape_argument::RULE, &r::dim_out_of_range::RULE, &r::index_out_of_range::RULE]),
    Decl::method("torch.Tensor.index_select", "dim, index").checks(&[&r::invalid_shape_argument::RULE, &r::dim_out_of_range::RULE, &r::index_out_of_range::RULE]),
    Decl::method("torch.Tensor.index_add", "dim, index, source, *, alpha=1").checks(&[&r::invalid_shape_argument::RULE, &r::dim_out_of_range::RULE]),
    Decl::method("torch.Tensor.index_add_", "dim, index, source, *, alpha=1").checks(&[&r::invalid_shape_argument::RULE, &r::dim_out_of_range::RULE]),
    Decl::function("torch.narrow", "input, dim, start, length").checks(&[&r::dim_out_of_range::RULE, &r::index_out_of_range::RULE]),
    Decl::method("torch.Tensor.narrow", "dim, start, length").checks(&[&r::dim_out_of_range::RULE, &r::index_out_of_range::RULE]),
];
