//! Joining and splitting: `cat`/`stack` (and `hstack`/`vstack`), `chunk`, `split`,
//! `tensor_split`, `unbind`.

use std::rc::Rc;

use crate::models::bind;
use super::tensor::{check_dim, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape::{self as r, ConcatShapeMismatch, InvalidShapeArgument};
use crate::shape::{Formula, Poly, Rel, Tri};

/// `torch.` functions modelled here; `Err(st)` gives the state back when `f` is not one of them.
pub fn function(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    Ok(match f {
        "cat" | "concat" | "concatenate" | "stack" => cat_stack(cx, st, f == "stack", args, kwargs, span),
        "hstack" | "vstack" | "row_stack" => hstack_vstack(cx, st, f, args, span),
        _ => return Err(st),
    })
}

/// Tensor methods modelled here; `Err(st)` gives the state back when `name` is not one of them.
pub fn method(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    Ok(match name {
        "chunk" | "split" | "tensor_split" | "unbind" => split(cx, st, t, name, args, kwargs, span),
        _ => return Err(st),
    })
}

/// `torch.cat`/`torch.stack` of an unknown number of tensors like `item` (a list a loop appended
/// to) along `d`: its dims, with the joined dim (cat) or the new one (stack) not known. Nothing
/// is judged (the list may be empty, which raises otherwise); a `d` outside the result's rank,
/// or an item of rank 0 for `cat`, leaves it Unknown.
fn appended(stack: bool, item: &Value, d: i128) -> Value {
    let Value::Tensor(t) = item else { return Value::Unknown };
    let Some(r) = t.shape.rank() else { return Value::Unknown };
    let out_rank = if stack { r + 1 } else { r } as i128;
    if (!stack && r == 0) || d < -out_rank || d >= out_rank {
        return Value::Unknown;
    }
    let d = d.rem_euclid(out_rank) as usize;
    let mut dims = t.shape.dims.clone();
    if stack {
        dims.insert(d, Dim::unknown());
    } else {
        dims[d] = Dim::unknown();
    }
    tensor_value(Shape::known(dims), t.dtype)
}

fn cat_stack(cx: &mut dyn ModelCtx, st: State, stack: bool, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let mut st = st;
    let b = bind(&["tensors", "dim"], args, kwargs);
    let d = match b.get("dim") {
        Some(v) => match v.as_const_int() {
            Some(d) => d,
            None => return vec![(st, Value::Unknown)],
        },
        None => 0,
    };
    // a list a loop appended to (`value::alike`): an unknown number of tensors like its item
    if let Some(item) = b.get("tensors").and_then(|v| crate::value::alike::appended_item(&st, v)) {
        return vec![(st, appended(stack, &item, d))];
    }
    let Some(items) = b.get("tensors").and_then(|v| cx.iterate(&mut st, v, span)) else { return vec![(st, Value::Unknown)] };
    let mut shapes = Vec::new();
    let mut dtypes = Vec::new();
    let name = if stack { "torch.stack" } else { "torch.cat" };
    // tensors of which some has an unknown rank: not judged; the result, on every path that
    // goes on, has their dtype when they share one (the shape not known)
    if !items.is_empty() && items.iter().all(|v| matches!(v, Value::Tensor(_))) && items.iter().any(|v| matches!(v, Value::Tensor(t) if st.resolve(&t.shape).prefix.is_some())) {
        let dts: Vec<Option<DType>> = items.iter().filter_map(|v| if let Value::Tensor(t) = v { Some(t.dtype) } else { None }).collect();
        let dtype = if dts.windows(2).all(|w| w[0] == w[1]) { dts[0] } else { None };
        return vec![(st, tensor_value(cx.any_shape(), dtype))];
    }
    for (k, it) in items.iter().enumerate() {
        match it {
            Value::Tensor(t) => {
                let s = st.resolve(&t.shape);
                if s.prefix.is_some() {
                    return vec![(st, Value::Unknown)];
                }
                dtypes.push(t.dtype);
                // torch raises "zero-dimensional tensor (at position k) cannot be concatenated"
                if !stack && s.dims.is_empty() {
                    cx.check(&st, span, Tri::True, |_| (ConcatShapeMismatch::ZeroDim { op: name.into(), index: k.to_string() }, Vec::new()));
                    return Vec::new();
                }
                // cat skips a legacy empty 1-D tensor (`torch.tensor([])`) wherever it is; one
                // that may be empty leaves the result unknown
                if !stack && s.dims.len() == 1 {
                    match s.dims[0].as_const() {
                        Some(0) => continue,
                        Some(_) => {}
                        None => {
                            if items.iter().any(|o| matches!(o, Value::Tensor(u) if st.resolve(&u.shape).dims.len() != 1)) {
                                return vec![(st, Value::Unknown)];
                            }
                        }
                    }
                }
                shapes.push(s);
            }
            _ => return vec![(st, Value::Unknown)],
        }
    }
    // (the result's dtype: the inputs' when they agree)
    let dtype = if dtypes.windows(2).all(|w| w[0] == w[1]) { dtypes.first().copied().flatten() } else { None };
    if shapes.is_empty() {
        // every tensor a skipped empty one: an empty one
        return if !stack && !dtypes.is_empty() { vec![(st, tensor_value(Shape::known(vec![Dim::konst(0)]), dtype))] } else { vec![(st, Value::Unknown)] };
    }
    let rank0 = shapes[0].dims.len();
    // ranks must agree
    for (k, s) in shapes.iter().enumerate() {
        if s.dims.len() != rank0 {
            let n = s.dims.len();
            cx.check(&st, span, Tri::True, |cx| {
                let a = cx.show_shape(&st, &shapes[0]);
                let bsh = cx.show_shape(&st, s);
                (ConcatShapeMismatch::Rank { op: name.into(), first_rank: rank0.to_string(), first: a, index: k.to_string(), rank: n.to_string(), other: bsh }, Vec::new())
            });
            return Vec::new();
        }
    }
    let out_rank = if stack { rank0 + 1 } else { rank0 };
    let Some(di) = check_dim(cx, &st, &Shape::known(vec![Dim::unknown(); out_rank]), d, span, name) else { return vec![(st, Value::Unknown)] };
    if di == usize::MAX {
        return Vec::new();
    }
    // all other dims (for stack: all dims) must match
    let mut out = shapes[0].dims.clone();
    let mut total = out.get(di).and_then(|x| x.v.clone());
    for (k, s) in shapes.iter().enumerate().skip(1) {
        for (j, (x, y)) in shapes[0].dims.iter().zip(s.dims.iter()).enumerate() {
            if !stack && j == di {
                continue;
            }
            let eq = cx.dim_eq(&st, x, y);
            if !cx.check(&st, span, cx.dim_eq_f(x, y).not(), |cx| {
                let a = cx.show_shape(&st, &shapes[0]);
                let bsh = cx.show_shape(&st, s);
                // (what the message is about: the two sizes that differ)
                cx.cite(x, true);
                cx.cite(y, true);
                let (op, first, index, other, dim) = (name.to_string(), a, k.to_string(), bsh, j.to_string());
                let v = if stack { ConcatShapeMismatch::Stack { op, first, index, other, dim } } else { ConcatShapeMismatch::Cat { op, first, index, other, dim } };
                (v, Vec::new())
            }) {
                return Vec::new();
            }
            if eq == Tri::Unknown {
                out[j] = Dim::unknown();
            }
        }
        if !stack {
            total = match (total, s.dims.get(di).and_then(|x| x.v.clone())) {
                (Some(a), Some(b)) => a.add(&b),
                _ => None,
            };
        }
    }
    if stack {
        out.insert(di, Dim::konst(shapes.len() as i128));
    } else {
        let parts: Vec<Dim> = shapes.iter().filter_map(|s| s.dims.get(di).cloned()).collect();
        let why = Origin::merged("concatenated", span, out_rank - di, &parts);
        out[di] = Dim { v: total, why };
    }
    vec![(st, tensor_value(Shape::known(out), dtype))]
}

/// `hstack`/`vstack`: atleast_1d / atleast_2d, then `cat`.
fn hstack_vstack(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], span: Span) -> Vals {
    let mut st = st;
    // atleast_1d (hstack) / atleast_2d (vstack), then cat along dim 1 (0 for 1-D hstack) / 0
    let Some(items) = args.first().and_then(|v| cx.iterate(&mut st, v, span)) else { return vec![(st, Value::Unknown)] };
    let mut lifted = Vec::with_capacity(items.len());
    let mut first_rank = None;
    for it in &items {
        let Value::Tensor(x) = it else { return vec![(st, Value::Unknown)] };
        let xs = st.resolve(&x.shape);
        let Some(rank) = xs.rank() else { return vec![(st, Value::Unknown)] };
        let dims = match (f, rank) {
            (_, 0) if f == "hstack" => vec![Dim::konst(1)],
            (_, 0) => vec![Dim::konst(1), Dim::konst(1)],
            (_, 1) if f != "hstack" => vec![Dim::konst(1), xs.dims[0].clone()],
            _ => xs.dims.clone(),
        };
        first_rank.get_or_insert(dims.len());
        lifted.push(tensor_value(Shape::known(dims), x.dtype));
    }
    let d = if f == "hstack" && first_rank != Some(1) { 1 } else { 0 };
    let list = Value::Tuple(Rc::new(lifted));
    cat_stack(cx, st, false, &[list, Value::int(d)], &[], span)
}

/// At most this many parts are listed one by one (a tuple); beyond, and when the number of
/// parts is not known, a split is a sequence of unknown length with the parts' shape.
const MAX_PARTS: i128 = 4096;

/// `chunk`, `split`, `unbind`: a tuple of tensors when the sizes are known.
fn split(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let mut st = st;
    let s = st.resolve(&t.shape);
    let params: &[&str] = match name {
        "chunk" => &["chunks", "dim"],
        "tensor_split" => &["indices_or_sections", "dim"],
        "unbind" => &["dim"],
        _ => &["split_size_or_sections", "dim"],
    };
    let b = bind(params, args, kwargs);
    let d = match b.get("dim") {
        None => 0,
        Some(v) => match v.as_const_int() {
            Some(d) => d,
            None => return vec![(st, Value::Unknown)],
        },
    };
    // the dim split, and the unknown leading dims the parts keep
    let (i, prefix) = match s.rank() {
        Some(_) => match check_dim(cx, &st, &s, d, span, name) {
            Some(usize::MAX) => return Vec::new(),
            Some(i) => (i, None),
            None => return vec![(st, Value::Unknown)],
        },
        // unknown rank: a negative dim within the known suffix
        None if d < 0 && ((-d) as usize) <= s.dims.len() => (s.dims.len() - (-d) as usize, s.prefix),
        None => return vec![(st, Value::Unknown)],
    };
    let n = s.dims[i].clone();
    let with = |size: Dim| {
        let mut dims = s.dims.clone();
        dims[i] = size;
        tensor_value(Shape { prefix, dims }, t.dtype)
    };
    let parts: Option<Vec<Value>> = match name {
        "unbind" => {
            let mut dims = s.dims.clone();
            dims.remove(i);
            n.as_const().filter(|k| *k <= MAX_PARTS).map(|k| vec![tensor_value(Shape { prefix, dims }, t.dtype); k as usize])
        }
        "chunk" => match (b.get("chunks").and_then(|v| v.as_const_int()), n.as_const()) {
            (Some(k), Some(nn)) if k > 0 && k <= MAX_PARTS => {
                let size = (nn + k - 1) / k;
                if size == 0 {
                    Some(vec![with(Dim::konst(0))])
                } else {
                    let count = (nn + size - 1) / size;
                    Some((0..count).map(|j| with(Dim::konst(size.min(nn - j * size)))).collect())
                }
            }
            _ => None,
        },
        // `tensor_split`: k near-equal sections (the first `n % k` one longer), or slices
        // between indices (Python slice semantics: clamped, possibly empty)
        "tensor_split" => match (b.get("indices_or_sections"), n.as_const()) {
            (Some(Value::Int(k)), Some(nn)) => match k.as_const() {
                Some(k) if k > 0 && k <= MAX_PARTS => Some((0..k).map(|j| with(Dim::konst(nn / k + i128::from(j < nn % k)))).collect()),
                _ => None,
            },
            (Some(v), Some(nn)) => {
                let v = v.clone();
                let idx: Option<Vec<i128>> = cx.iterate(&mut st, &v, span).and_then(|xs| xs.iter().map(|x| x.as_const_int().filter(|i| *i >= 0)).collect());
                idx.filter(|xs| (xs.len() as i128) < MAX_PARTS).map(|xs| {
                    let mut bounds = vec![0];
                    bounds.extend(xs);
                    bounds.push(nn);
                    bounds.windows(2).map(|w| with(Dim::konst((w[1].min(nn) - w[0].min(nn)).max(0)))).collect()
                })
            }
            _ => None,
        },
        _ => match b.get("split_size_or_sections") {
            Some(Value::Int(p)) => match (p.as_const(), n.as_const()) {
                (Some(sz), Some(nn)) if sz > 0 && nn / sz <= MAX_PARTS => {
                    let count = (nn + sz - 1) / sz;
                    Some((0..count.max(1)).map(|j| with(Dim::konst(sz.min(nn - j * sz)))).collect())
                }
                _ => None,
            },
            Some(v) => {
                let sections = cx.iterate(&mut st, v, span);
                match sections {
                    Some(secs) => {
                        let sizes: Option<Vec<Poly>> = secs.iter().map(|x| x.as_int().cloned()).collect();
                        match sizes {
                            Some(sizes) => {
                                let total = sizes.iter().try_fold(Poly::constant(0), |acc, x| acc.add(x));
                                if let (Some(total), Some(nv)) = (total, n.v.clone()) {
                                    let eq = Formula::cmp(&total, crate::shape::Rel::Eq, &nv);
                                    let (ts, ns) = (total.display(cx.syms()), nv.display(cx.syms()));
                                    let shown = cx.show_shape(&st, &s);
                                    // the dim as given when leading dims are unknown
                                    let shown_dim = if prefix.is_some() { d.to_string() } else { i.to_string() };
                                    if !cx.check(&st, span, eq.not(), |_| {
                                        (InvalidShapeArgument::SplitSizes { total: ts, dim: shown_dim, shape: shown, size: ns }, Vec::new())
                                    }) {
                                        return Vec::new();
                                    }
                                }
                                Some(sizes.into_iter().map(|p| with(Dim::known(p, None))).collect())
                            }
                            None => None,
                        }
                    }
                    None => None,
                }
            }
            None => None,
        },
    };
    if let Some(p) = parts {
        return vec![(st, Value::Tuple(Rc::new(p)))];
    }
    // More parts than listed, or a number of parts not known: a sequence of unknown length
    // whose every element has the part's shape (`models::element_of`), when that shape is
    // the same for every part: `unbind` drops the dim, `split(1)` gives size-1 parts of a
    // non-empty dim; otherwise the split dim is unknown (the last part may be shorter).
    let positive = |k: Option<i128>| k.is_none_or(|k| k > 0);
    let nonempty = n.v.as_ref().is_some_and(|v| cx.poly_cmp(&st, &Poly::constant(1), Rel::Le, v) == Tri::True);
    let elem = match name {
        "unbind" => {
            let mut dims = s.dims.clone();
            dims.remove(i);
            Some(tensor_value(Shape { prefix, dims }, t.dtype))
        }
        "chunk" => match b.get("chunks") {
            Some(Value::Int(k)) if positive(k.as_const()) => Some(with(Dim::unknown())),
            _ => None,
        },
        "split" => match b.get("split_size_or_sections") {
            Some(Value::Int(p)) if p.as_const() == Some(1) && nonempty => Some(with(Dim::konst(1))),
            Some(Value::Int(p)) if positive(p.as_const()) => Some(with(Dim::unknown())),
            _ => None,
        },
        _ => None,
    };
    match elem {
        Some(e) => vec![(st, Value::LibMethod(Box::new(e), Rc::from("<repeat>")))],
        None => vec![(st, Value::Unknown)],
    }
}

const CAT: &[&crate::rules::Rule] = &[&r::concat_shape_mismatch::RULE, &r::dim_out_of_range::RULE];
const DIM: &[&crate::rules::Rule] = &[&r::dim_out_of_range::RULE];

/// The APIs this family models, for the registry (`models/registry.rs`). (`out=` is not read;
/// nor is `axis=`, which `cat` takes for `dim`.)
pub const APIS: &[Decl] = &[
    Decl::function("torch.cat", "tensors, dim=0").checks(CAT),
    Decl::function("torch.concat", "tensors, dim=0").checks(CAT),
    Decl::function("torch.concatenate", "tensors, dim=0").checks(CAT),
    Decl::function("torch.stack", "tensors, dim=0").checks(CAT),
    Decl::function("torch.hstack", "tensors").checks(&[&r::concat_shape_mismatch::RULE]),
    Decl::function("torch.vstack", "tensors").checks(&[&r::concat_shape_mismatch::RULE]),
    Decl::function("torch.row_stack", "tensors").checks(&[&r::concat_shape_mismatch::RULE]),
    Decl::function("torch.chunk", "input, chunks, dim=0").checks(DIM),
    Decl::method("torch.Tensor.chunk", "chunks, dim=0").checks(DIM),
    Decl::function("torch.split", "tensor, split_size_or_sections, dim=0").checks(&[&r::dim_out_of_range::RULE, &r::invalid_shape_argument::RULE]),
    Decl::method("torch.Tensor.split", "split_size, dim=0").checks(&[&r::dim_out_of_range::RULE, &r::invalid_shape_argument::RULE]),
    Decl::function("torch.tensor_split", "input, indices_or_sections, dim=0").checks(DIM),
    Decl::method("torch.Tensor.tensor_split", "indices_or_sections, dim=0").checks(DIM),
    Decl::function("torch.unbind", "input, dim=0").checks(DIM),
    Decl::method("torch.Tensor.unbind", "dim=0").checks(DIM),
];
