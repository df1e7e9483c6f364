//! Reductions (`sum`, `mean`, `max`, `argmax`, `norm`, `kthvalue`, ...), scans along a dim
//! (`softmax`, `cumsum`, `cummax`, `argsort`, ...), `topk` and `sort`.

use std::rc::Rc;

use crate::models::bind;
use super::tensor::{check_dim, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape::{self as r, IndexOutOfRange};
use crate::shape::{Formula, Poly};

/// Tensor methods modelled here; `Err(st)` gives the state back when `name` is not one of them.
#[allow(clippy::too_many_arguments)]
pub fn method(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    Ok(match name {
        "softmax" | "log_softmax" | "cumsum" | "cumprod" | "argsort" | "logcumsumexp" | "cummax" | "cummin" => scan(cx, st, t, s, name, args, kwargs, span),
        "sum" | "mean" | "prod" | "std" | "var" | "amax" | "amin" | "logsumexp" | "any" | "all" | "argmax" | "argmin" | "max" | "min"
        | "nansum" | "nanmean" | "norm" | "count_nonzero" | "median" | "nanmedian" | "mode" | "kthvalue" => reduce(cx, st, t, name, args, kwargs, span),
        "topk" | "sort" => topk_sort(cx, st, t, s, name, args, kwargs, span),
        "bincount" => bincount(st, t, s, args, kwargs),
        _ => return Err(st),
    })
}

/// `x.bincount(weights=None, minlength=0)` of a 1-D integral `x`: `max(max(x) + 1, minlength)`
/// counts (`minlength` for an empty `x`), known when the values of `x` are: all below
/// `minlength`, or with a greatest value some element attains. Long counts, or the weights'
/// dtype. (An input of another rank, or with a negative value, raises: not modelled.)
fn bincount(st: State, t: &Rc<Tensor>, s: &Shape, args: &[Value], kwargs: &[(Name, Value)]) -> Vals {
    let b = bind(&["weights", "minlength"], args, kwargs);
    let minlength = match b.get("minlength") {
        None => Some(0),
        Some(v) => v.as_const_int().filter(|m| *m >= 0),
    };
    let dtype = match b.get("weights") {
        None | Some(Value::None) => Some(Some(DType::Long)),
        Some(Value::Tensor(w)) => Some(w.dtype),
        Some(_) => None,
    };
    let one_d = s.prefix.is_none() && s.dims.len() == 1 && t.dtype.is_some_and(DType::is_integer);
    let n = match (&t.values, minlength) {
        (Some(v), Some(m)) if one_d && v.lo >= 0 && v.hi < m => Some(m),
        (Some(v), Some(m)) if one_d && v.lo >= 0 && v.hi_seen => Some(m.max(v.hi + 1)),
        _ => None,
    };
    match (n, dtype) {
        (Some(n), Some(dtype)) => vec![(st, tensor_value(Shape::known(vec![Dim::konst(n)]), dtype))],
        _ => vec![(st, Value::Unknown)],
    }
}

/// Along `dim`: the input's shape (`softmax`, `cumsum`, ...), long indices (`argsort`), or
/// (values, indices) (`cummax`, `cummin`).
#[allow(clippy::too_many_arguments)]
fn scan(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let same = |st: State| vec![(st, Value::Tensor(t.clone()))];
    let b = bind(&["dim"], args, kwargs);
    if let Some(d) = b.get("dim").and_then(|v| v.as_const_int()) {
        if check_dim(cx, &st, &s, d, span, name) == Some(usize::MAX) {
            return Vec::new();
        }
    }
    if name == "argsort" {
        return vec![(st, tensor_value(t.shape.clone(), Some(DType::Long)))];
    }
    if matches!(name, "cummax" | "cummin") {
        if b.get("dim").and_then(|v| v.as_const_int()).is_none() {
            return vec![(st, Value::Unknown)];
        }
        let idx = tensor_value(t.shape.clone(), Some(DType::Long));
        return vec![(st, Value::Tuple(Rc::new(vec![Value::Tensor(t.clone()), idx])))];
    }
    same(st)
}

/// `topk(k, dim=-1)` / `sort(dim=-1)`: (values, indices).
#[allow(clippy::too_many_arguments)]
fn topk_sort(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, s: &Shape, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let b = if name == "topk" { bind(&["k", "dim", "largest", "sorted"], args, kwargs) } else { bind(&["dim", "descending"], args, kwargs) };
    let d = match b.get("dim") {
        None => -1,
        Some(v) => match v.as_const_int() {
            Some(d) => d,
            None => return vec![(st, Value::Unknown)],
        },
    };
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    if rank == 0 {
        return vec![(st, Value::Unknown)];
    }
    let Some(i) = check_dim(cx, &st, &s, d, span, name) else { return vec![(st, Value::Unknown)] };
    if i == usize::MAX {
        return Vec::new();
    }
    let mut dims = s.dims.clone();
    if name == "topk" {
        let Some(k) = b.get("k").and_then(|v| v.as_int()).cloned() else { return vec![(st, Value::Unknown)] };
        if let Some(n) = dims[i].v.clone() {
            let violated = Formula::cmp(&n, crate::shape::Rel::Lt, &k);
            if !cx.check(&st, span, violated, |cx| {
                let shown = cx.show_shape(&st, &s);
                let (ks, ns) = (k.display(cx.syms()), cx.show_dim(&dims[i]));
                (IndexOutOfRange::TopK { k: ks, dim: i.to_string(), shape: shown, size: ns }, Vec::new())
            }) {
                return Vec::new();
            }
        }
        dims[i] = Dim::known(k, None);
    }
    let values = tensor_value(Shape::known(dims.clone()), t.dtype);
    let indices = tensor_value(Shape::known(dims), Some(DType::Long));
    vec![(st, Value::Tuple(Rc::new(vec![values, indices])))]
}

fn reduce(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let mut st = st;
    let s = st.resolve(&t.shape);
    if matches!(name, "std" | "var") && args.len() > 1 {
        // `std(dim, unbiased, keepdim)`: the second positional is not keepdim
        return vec![(st, Value::Unknown)];
    }
    let params: &[&str] = match name {
        "norm" => &["p", "dim", "keepdim"],
        "kthvalue" => &["k", "dim", "keepdim"],
        "count_nonzero" => &["dim"],
        _ => &["dim", "keepdim"],
    };
    let mut b = bind(params, args, kwargs);
    if matches!(name, "kthvalue" | "mode") && !b.contains_key("dim") {
        b.insert("dim", Value::int(-1));
    }
    // `norm`: a number `p` is a vector norm over any dims; "fro" (the default) takes one or two
    // dims (or all of them); other norms ("nuc", ...) are not modelled
    let fro = match (name, b.get("p")) {
        ("norm", None) => true,
        ("norm", Some(Value::Str(Some(p)))) if &**p == "fro" => true,
        ("norm", Some(Value::Int(_) | Value::Float(_))) => false,
        ("norm", Some(_)) => return vec![(st, Value::Unknown)],
        _ => false,
    };
    let keep = match b.get("keepdim") {
        Some(Value::Bool(k)) => *k,
        None => false,
        _ => return vec![(st, Value::Unknown)],
    };
    let idx_dtype = matches!(name, "argmax" | "argmin" | "count_nonzero");
    // (torch sums and multiplies integers and bools in int64)
    let widened = matches!(name, "sum" | "nansum" | "prod") && t.dtype.is_some_and(|d| matches!(d, DType::Bool | DType::Byte | DType::Int | DType::Long));
    let out_dtype = if idx_dtype || widened { Some(DType::Long) } else if matches!(name, "any" | "all") { Some(DType::Bool) } else { t.dtype };
    // (values, indices) when reducing along a dim
    let pair = matches!(name, "max" | "min" | "median" | "nanmedian" | "mode" | "kthvalue");
    let dimv = match b.get("dim") {
        None | Some(Value::None) => {
            // full reduction
            if matches!(name, "max" | "min") && !args.is_empty() {
                return vec![(st, Value::Unknown)];
            }
            return vec![(st, tensor_value(Shape::known(Vec::new()), out_dtype))];
        }
        Some(d) => d.clone(),
    };
    let dimv = &dimv;
    let dims: Vec<i128> = match dimv {
        Value::Int(_) => match dimv.as_const_int() {
            Some(d) => vec![d],
            None => return vec![(st, Value::Unknown)],
        },
        Value::Tensor(_) => return vec![(st, Value::Unknown)],
        // these take one int dim: a dim list is a TypeError in torch
        _ if matches!(name, "prod" | "argmax" | "argmin" | "max" | "min" | "median" | "nanmedian" | "mode" | "kthvalue") => return vec![(st, Value::Unknown)],
        other => match cx.iterate(&mut st, other, span) {
            Some(items) => match items.iter().map(|v| v.as_const_int()).collect::<Option<Vec<_>>>() {
                Some(d) => d,
                None => return vec![(st, Value::Unknown)],
            },
            None => return vec![(st, Value::Unknown)],
        },
    };
    if dims.is_empty() {
        return vec![(st, Value::Unknown)]; // an empty dim list: torch reduces over every dim (not modelled)
    }
    if fro && dims.len() > 2 {
        return vec![(st, Value::Unknown)]; // torch raises: a matrix norm takes two dims
    }
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    let mut idx = Vec::new();
    for d in &dims {
        match check_dim(cx, &st, &s, *d, span, name) {
            Some(usize::MAX) => return Vec::new(),
            Some(i) => idx.push(i),
            None => return vec![(st, Value::Unknown)],
        }
    }
    if !super::tensor::check_distinct_dims(cx, &st, &idx, span, name) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, d) in s.dims.iter().enumerate() {
        if idx.contains(&k) {
            if keep {
                out.push(Dim::konst(1));
            }
        } else {
            out.push(d.clone());
        }
    }
    let _ = rank;
    if name == "kthvalue" {
        if let (Some(Value::Int(k)), [i]) = (b.get("k"), idx.as_slice()) {
            let n = s.dims.get(*i).and_then(|d| d.v.clone()).unwrap_or(Poly::constant(1));
            let bad = cx.poly_cmp(&st, &n, crate::shape::Rel::Lt, k).or(cx.poly_cmp(&st, k, crate::shape::Rel::Lt, &Poly::constant(1)));
            if !cx.check(&st, span, bad, |cx| {
                let (shown, ks) = (cx.show_shape(&st, &s), k.display(cx.syms()));
                (IndexOutOfRange::KthValue { k: ks, shape: shown, dim: i.to_string() }, Vec::new())
            }) {
                return Vec::new();
            }
        }
    }
    let v = tensor_value(Shape::known(out.clone()), out_dtype);
    if pair {
        let i = tensor_value(Shape::known(out), Some(DType::Long));
        return vec![(st, Value::Tuple(Rc::new(vec![v, i])))];
    }
    vec![(st, v)]
}

const DIM: &[&crate::rules::Rule] = &[&r::dim_out_of_range::RULE];
const DIM_INDEX: &[&crate::rules::Rule] = &[&r::dim_out_of_range::RULE, &r::index_out_of_range::RULE];

/// The APIs this family models, for the registry (`models/registry.rs`): each as `torch.f(input,
/// ...)` and `Tensor.f(...)`. `dtype=` and `out=` are not read; `unbiased`/`correction`,
/// `largest`/`sorted`, `descending` and `stable` change values only.
pub const APIS: &[Decl] = &[
    Decl::function("torch.sum", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.sum", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.mean", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.mean", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.nansum", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.nansum", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.nanmean", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.nanmean", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.prod", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.prod", "dim=None, keepdim=False").checks(DIM),
    // a second positional argument (`unbiased` of the old overload) is Unknown
    Decl::function("torch.std", "input, dim=None, ~unbiased=True, keepdim=False, *, ~correction=1").checks(DIM),
    Decl::method("torch.Tensor.std", "dim=None, ~unbiased=True, keepdim=False, *, ~correction=1").checks(DIM),
    Decl::function("torch.var", "input, dim=None, ~unbiased=True, keepdim=False, *, ~correction=1").checks(DIM),
    Decl::method("torch.Tensor.var", "dim=None, ~unbiased=True, keepdim=False, *, ~correction=1").checks(DIM),
    Decl::function("torch.amax", "input, dim=(), keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.amax", "dim=(), keepdim=False").checks(DIM),
    Decl::function("torch.amin", "input, dim=(), keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.amin", "dim=(), keepdim=False").checks(DIM),
    Decl::function("torch.logsumexp", "input, dim, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.logsumexp", "dim, keepdim=False").checks(DIM),
    Decl::function("torch.any", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.any", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.all", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.all", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.argmax", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.argmax", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.argmin", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.argmin", "dim=None, keepdim=False").checks(DIM),
    // `max(other)` (elementwise) is Unknown
    Decl::function("torch.max", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.max", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.min", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.min", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.norm", "input, p=\"fro\", dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.norm", "p=\"fro\", dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.count_nonzero", "input, dim=None").checks(DIM),
    Decl::method("torch.Tensor.count_nonzero", "dim=None").checks(DIM),
    Decl::function("torch.median", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.median", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.nanmedian", "input, dim=None, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.nanmedian", "dim=None, keepdim=False").checks(DIM),
    Decl::function("torch.mode", "input, dim=-1, keepdim=False").checks(DIM),
    Decl::method("torch.Tensor.mode", "dim=-1, keepdim=False").checks(DIM),
    Decl::function("torch.kthvalue", "input, k, dim=-1, keepdim=False").checks(DIM_INDEX),
    Decl::method("torch.Tensor.kthvalue", "k, dim=-1, keepdim=False").checks(DIM_INDEX),
    Decl::function("torch.softmax", "input, dim").checks(DIM),
    Decl::method("torch.Tensor.softmax", "dim").checks(DIM),
    Decl::function("torch.log_softmax", "input, dim").checks(DIM),
    Decl::method("torch.Tensor.log_softmax", "dim").checks(DIM),
    Decl::function("torch.cumsum", "input, dim").checks(DIM),
    Decl::method("torch.Tensor.cumsum", "dim").checks(DIM),
    Decl::function("torch.cumprod", "input, dim").checks(DIM),
    Decl::method("torch.Tensor.cumprod", "dim").checks(DIM),
    Decl::function("torch.logcumsumexp", "input, dim").checks(DIM),
    Decl::method("torch.Tensor.logcumsumexp", "dim").checks(DIM),
    Decl::function("torch.cummax", "input, dim").checks(DIM),
    Decl::method("torch.Tensor.cummax", "dim").checks(DIM),
    Decl::function("torch.cummin", "input, dim").checks(DIM),
    Decl::method("torch.Tensor.cummin", "dim").checks(DIM),
    Decl::function("torch.argsort", "input, dim=-1, ~descending=False, *, ~stable=False").checks(DIM),
    Decl::method("torch.Tensor.argsort", "dim=-1, ~descending=False, *, ~stable=False").checks(DIM),
    Decl::function("torch.bincount", "input, weights=None, minlength=0"),
    Decl::method("torch.Tensor.bincount", "weights=None, minlength=0"),
    Decl::function("torch.topk", "input, k, dim=-1, ~largest=True, ~sorted=True").checks(DIM_INDEX),
    Decl::method("torch.Tensor.topk", "k, dim=-1, ~largest=True, ~sorted=True").checks(DIM_INDEX),
    Decl::function("torch.sort", "input, dim=-1, ~descending=False, *, ~stable=False").checks(DIM),
    Decl::method("torch.Tensor.sort", "dim=-1, ~descending=False, *, ~stable=False").checks(DIM),
];
