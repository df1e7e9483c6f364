//! Tensors: the helpers every tensor model uses (sizes, dims, broadcasting), the dispatch of
//! `torch.*` functions and `Tensor` methods to the families (creation.rs, reshape.rs,
//! reduce.rs, join.rs, indexing.rs, matmul.rs, shape_ops.rs, pointwise.rs), the tensor
//! attributes, and the methods that only look at the tensor (`size`, `dim`, `to`, ...).

use std::rc::Rc;

use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::{self, Decl};
use crate::value::*;
use crate::ir::{BinOp, Name, Span};
use crate::rules::shape::{self as r, BroadcastShapeMismatch, DimOutOfRange, InvalidShapeArgument};
use crate::shape::{Formula, Tri};

use super::{creation, indexing, join, matmul, pointwise, reduce, reshape, shape_ops, spectral};

pub use super::indexing::index;
pub use super::matmul::matmul;
pub use super::reshape::{flatten, numel};

pub fn tensor_value(shape: Shape, dtype: Option<DType>) -> Value {
    Value::Tensor(Rc::new(Tensor::new(shape, dtype)))
}

pub fn dim_of(v: &Value) -> Option<Dim> {
    match v {
        Value::Int(p) => Some(Dim::known(p.clone(), None)),
        Value::Bool(b) => Some(Dim::konst(*b as i128)),
        _ => None,
    }
}

/// Known values of the index tensor `idx` certainly outside `[0, n)` (`n == None`: negative
/// ones only), other than `exempt`, on a tensor with at least one element: torch raises
/// (SHP110, `bound` says what the range is). False when it certainly does.
#[allow(clippy::too_many_arguments)]
pub fn check_index_values(cx: &mut dyn ModelCtx, st: &State, idx: &Tensor, n: Option<i128>, exempt: Option<i128>, span: Span, op: &str, bound: impl FnOnce(&dyn ModelCtx) -> String) -> bool {
    let Some(b) = &idx.values else { return true };
    let s = st.resolve(&idx.shape);
    let nonempty = s.prefix.is_none() && s.dims.iter().all(|d| d.as_const().is_some_and(|c| c >= 1));
    let Some(w) = b.outside(n, exempt).filter(|_| nonempty) else { return true };
    cx.check(st, span, Tri::True, |cx| {
        let index = match w {
            Some(v) => v.to_string(),
            None if b.lo == b.hi => b.lo.to_string(),
            None => format!("values in [{}, {}]", b.lo, b.hi),
        };
        (r::IndexOutOfRange::Value { op: op.into(), index, src: b.src.into(), line: cx.line(b.span).to_string(), bound: bound(cx) }, Vec::new())
    })
}

/// Sizes given as `f(2, 3)`, `f((2, 3))`, `f([2, 3])` or `f(torch.Size)`.
pub fn sizes(cx: &mut dyn ModelCtx, st: &mut State, args: &[Value]) -> Option<Vec<Dim>> {
    let one = |cx: &mut dyn ModelCtx, st: &mut State, v: &Value| -> Option<Vec<Dim>> {
        match v {
            Value::Int(_) | Value::Bool(_) => None,
            _ => {
                let items = cx.iterate(st, v, Span::default())?;
                Some(items.iter().map(|i| dim_of(i).unwrap_or_else(Dim::unknown)).collect())
            }
        }
    };
    match args {
        [single] if !matches!(single, Value::Int(_) | Value::Bool(_)) => one(cx, st, single),
        _ => Some(args.iter().map(|a| dim_of(a).unwrap_or_else(Dim::unknown)).collect()),
    }
}

pub(super) fn arg_dtype(kwargs: &[(Name, Value)]) -> Option<Option<DType>> {
    kwargs.iter().find(|(k, _)| &**k == "dtype").map(|(_, v)| dtype_of(v))
}

pub fn dtype_of(v: &Value) -> Option<DType> {
    v.as_dtype()
}

pub(super) fn tensor_of(v: &Value) -> Option<&Rc<Tensor>> {
    match v {
        Value::Tensor(t) => Some(t),
        _ => None,
    }
}

/// Normalise a dim index against a known rank: `Some(i)` in range, `None` out of range.
pub fn norm_dim(d: i128, rank: usize) -> Option<usize> {
    let r = rank as i128;
    let rr = r.max(1);
    if d < -rr || d >= rr {
        return None;
    }
    Some(if d < 0 { (d + rr) as usize } else { d as usize }.min(rank.saturating_sub(0)))
}

/// Check a dim argument against a shape; false: torch raises (recorded).
pub fn check_dim(cx: &mut dyn ModelCtx, st: &State, s: &Shape, d: i128, span: Span, what: &str) -> Option<usize> {
    let Some(rank) = s.rank() else {
        // unknown rank: a negative dim within the known suffix is fine
        return None;
    };
    let ok = norm_dim(d, rank).filter(|i| *i < rank.max(1));
    let violated = Tri::from_bool(ok.is_none());
    if !cx.check(st, span, violated, |cx| {
        let shown = cx.show_shape(st, s);
        let lo = -(rank.max(1) as i128);
        let hi = rank.max(1) as i128 - 1;
        (DimOutOfRange::Dim { op: what.into(), dim: d.to_string(), rank: rank.to_string(), shape: shown, lo: lo.to_string(), hi: hi.to_string() }, Vec::new())
    }) {
        return Some(usize::MAX);
    }
    ok
}

/// A dim list (`flip`, a reduction over several dims) names each dim once: torch raises "dim d
/// appears multiple times in the list of dims" (SHP105). `idx` are the normalized dims; false
/// when the check failed.
pub fn check_distinct_dims(cx: &mut dyn ModelCtx, st: &State, idx: &[usize], span: Span, what: &str) -> bool {
    let Some(d) = idx.iter().enumerate().find(|(k, i)| idx[..*k].contains(i)).map(|(_, i)| *i) else { return true };
    cx.check(st, span, Tri::True, |_| (DimOutOfRange::Repeated { op: what.into(), dim: d.to_string() }, Vec::new()))
}

/// The state of a family's dispatcher that did not handle the name, or the caller's return.
macro_rules! or_next {
    ($e:expr) => {
        match $e {
            Ok(v) => return v,
            Err(st) => st,
        }
    };
}

/// `torch.f(...)`: modelled when the registry declares `torch.f` and its model reads every
/// argument of the call; otherwise Unknown.
pub fn torch_function(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    match registry::lookup_in("torch", f) {
        Some(api) if api.accepts(&args, &kwargs) => {
            let src = args.first().filter(|_| KEEPS_VALUES.contains(&f)).cloned();
            let out = function(cx, st, f, args, kwargs, span);
            keep_values(src.as_ref(), out)
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// The ops whose result holds exactly the input's values (the same elements, maybe another
/// shape or an integral dtype): known value bounds carry over, attained bounds included.
const KEEPS_VALUES: &[&str] = &["view", "reshape", "unsqueeze", "squeeze", "flatten", "expand", "view_as", "reshape_as", "expand_as", "clone", "contiguous", "detach", "long", "int", "to"];

/// `out` with the value bounds of `src` (the input of a [`KEEPS_VALUES`] op) on each tensor
/// result of an integral dtype that holds them.
fn keep_values(src: Option<&Value>, out: Vals) -> Vals {
    let Some(Value::Tensor(t)) = src else { return out };
    let Some(b) = &t.values else { return out };
    let fits = |d: Option<DType>| match d {
        Some(DType::Long) => true,
        Some(DType::Int) => b.lo >= i32::MIN as i128 && b.hi <= i32::MAX as i128,
        _ => false,
    };
    out.into_iter()
        .map(|(st, v)| match v {
            Value::Tensor(r) if r.values.is_none() && fits(r.dtype) => (st, Value::Tensor(Rc::new((*r).clone().with_values(Some(b.clone()))))),
            v => (st, v),
        })
        .collect()
}

fn function(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    match args.first() {
        // an op handing back its input keeps a permuted layout only in place (super::layout)
        Some(Value::Tensor(t)) if !f.ends_with('_') => {
            let t = t.clone();
            super::layout::forget_permuted(function_inner(cx, st, f, args, kwargs, span), &t)
        }
        _ => function_inner(cx, st, f, args, kwargs, span),
    }
}

fn function_inner(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    if pointwise::handles(f) && args.iter().take(2).any(|a| matches!(a, Value::Tensor(_))) {
        return pointwise::call(cx, st, f, &args, &kwargs, span, false);
    }
    let st = or_next!(creation::function(cx, st, f, &args, &kwargs, span));
    let st = or_next!(join::function(cx, st, f, &args, &kwargs, span));
    let st = or_next!(indexing::function(cx, st, f, &args, span));
    let st = or_next!(matmul::function(cx, st, f, &args, span));
    let st = or_next!(spectral::function(cx, st, f, &args, &kwargs, span));
    match f {
        "save" => return super::checkpoint::save(cx, st, &args, &kwargs, span),
        "load" => return super::checkpoint::load(st, &args, &kwargs),
        "manual_seed" | "set_num_threads" | "set_default_dtype" | "set_printoptions" => return vec![(st, Value::None)],
        // context managers of the grad mode (`autograd.rs`); `set_grad_enabled(mode)` also sets it
        // at once, as torch does
        "no_grad" => return vec![(st, super::autograd::mode_value(Some(false)))],
        "enable_grad" => return vec![(st, super::autograd::mode_value(Some(true)))],
        "inference_mode" | "set_grad_enabled" => {
            let arg = args.first().or(kwargs.iter().find(|(k, _)| matches!(&**k, "mode")).map(|(_, v)| v));
            let enabled = match (f, arg) {
                ("inference_mode", None) => Some(false),
                ("inference_mode", Some(Value::Bool(b))) => Some(!b),
                ("set_grad_enabled", Some(Value::Bool(b))) => Some(*b),
                _ => None,
            };
            let mut st = st;
            if f == "set_grad_enabled" {
                st.grad_mode = super::autograd::mode(enabled, span);
            }
            return vec![(st, super::autograd::mode_value(enabled))];
        }
        "device" | "Size" => return vec![(st, Value::Unknown)],
        // (a value of unknown type, what `torch.load` gave back: not known)
        "is_tensor" => {
            let v = match args.first() {
                Some(Value::Tensor(_)) => Value::Bool(true),
                Some(a @ Value::Ref(_)) if super::checkpoint::is_checkpoint(&st, a).is_some() => Value::Unknown,
                Some(Value::Unknown) => Value::Unknown,
                _ => Value::Bool(false),
            };
            return vec![(st, v)];
        }
        _ => {}
    }
    // `torch.f(x, ...)` is `x.f(...)` for the tensor methods
    if let Some(first @ Value::Tensor(_)) = args.first().cloned() {
        return method(cx, st, first, f, args[1..].to_vec(), kwargs, span);
    }
    vec![(st, Value::Unknown)]
}

/// `x.name(...)` on a tensor: modelled when the registry declares `torch.Tensor.name` and its
/// model reads every argument of the call; otherwise Unknown.
pub fn tensor_method(cx: &mut dyn ModelCtx, st: State, recv: Value, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    match registry::lookup_in("torch.Tensor", name) {
        Some(api) if api.accepts(&args, &kwargs) => {
            let src = KEEPS_VALUES.contains(&name).then(|| recv.clone());
            let unranked = match &recv {
                Value::Tensor(t) if st.resolve(&t.shape).rank().is_none() && KEEPS_DTYPE.contains(&name) && !args.iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| matches!(v, Value::DType(_) | Value::Unknown)) => Some(t.clone()),
                _ => None,
            };
            // (for `unranked_result`: the receiver of unknown rank, the arguments' number)
            let recv_unranked = match &recv {
                Value::Tensor(t) if st.resolve(&t.shape).rank().is_none() && !args.iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| matches!(v, Value::DType(_))) => Some(t.clone()),
                _ => None,
            };
            let dim_given = matches!(args.first(), Some(Value::Int(_))) || kwargs.iter().any(|(k, _)| &**k == "dim");
            let out = method_of(cx, st, recv, name, Some(api.family), args, kwargs, span);
            let out = keep_values(src.as_ref(), out);
            match unranked {
                Some(t) => out.into_iter().map(|(st, v)| if v.is_unknown() { (st, same_kind_unranked(cx, &t)) } else { (st, v) }).collect(),
                None => out,
            }
            .into_iter()
            .map(|(st, v)| match (&v, &recv_unranked) {
                (Value::Unknown, Some(t)) => {
                    let r = unranked_result(cx, t, name, dim_given);
                    (st, r)
                }
                _ => (st, v),
            })
            .collect()
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// The methods whose result is one tensor of the receiver's dtype and device, its values
/// moved, viewed or copied (`view` to a dtype excepted by the caller).
const KEEPS_DTYPE: &[&str] = &[
    "unsqueeze", "squeeze", "view", "reshape", "flatten", "unflatten", "permute", "transpose", "t", "contiguous", "clone", "detach",
    "expand", "repeat", "narrow", "select", "flip", "roll", "tril", "triu", "movedim", "moveaxis", "swapaxes", "swapdims", "view_as", "reshape_as", "expand_as",
];

/// A result of one of [`KEEPS_DTYPE`] on a tensor of unknown rank whose model gave nothing: a
/// tensor of unknown shape with the receiver's dtype, device and autograd state.
fn same_kind_unranked(cx: &mut dyn ModelCtx, t: &Tensor) -> Value {
    Value::Tensor(Rc::new(Tensor { device: t.device, grad: t.grad, ..Tensor::new(cx.any_shape(), t.dtype) }))
}

/// The result of a reduction or an index op on a tensor of unknown rank whose model gave
/// nothing: `gather` keeps the dtype, `argmax`/`argmin` give int64, `max`/`min` along a dim
/// give (values, indices), `sum`/`mean`/`prod` over a float tensor keep its dtype. Its shape is
/// not known; its device and autograd state are the receiver's (the dispatch stamps them).
fn unranked_result(cx: &mut dyn ModelCtx, t: &Tensor, name: &str, dim_given: bool) -> Value {
    let float = t.dtype.is_some_and(|d| d.is_floating());
    let of = |cx: &mut dyn ModelCtx, dtype: Option<DType>| Value::Tensor(Rc::new(Tensor { device: t.device, ..Tensor::new(cx.any_shape(), dtype) }));
    match name {
        "gather" => of(cx, t.dtype),
        "argmax" | "argmin" => of(cx, Some(DType::Long)),
        "max" | "min" if dim_given => Value::Tuple(Rc::new(vec![of(cx, t.dtype), of(cx, Some(DType::Long))])),
        "sum" | "mean" | "prod" | "logsumexp" if float => of(cx, t.dtype),
        _ => Value::Unknown,
    }
}

/// A tensor method as the models call it for one another (`expand_as` is `expand`, ...) and as
/// `torch.f(x, ...)` reaches it once `torch.f`'s own declaration accepted the call: no registry
/// check.
pub fn method(cx: &mut dyn ModelCtx, st: State, recv: Value, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    // the family that declared the method (or, for `torch.f(x, ...)`, the function) models it
    let family = registry::lookup_in("torch.Tensor", name).or_else(|| registry::lookup_in("torch", name)).map(|a| a.family);
    method_of(cx, st, recv, name, family, args, kwargs, span)
}

/// `method` once the declaring family is known (`tensor_method` has the entry already).
#[allow(clippy::too_many_arguments)]
fn method_of(cx: &mut dyn ModelCtx, st: State, recv: Value, name: &str, family: Option<&'static str>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Value::Tensor(t) = &recv else { return vec![(st, Value::Unknown)] };
    let t = t.clone();
    let out = method_inner(cx, st, recv, name, family, args, kwargs, span);
    // an op handing back its input keeps a permuted layout only in place (super::layout)
    if name.ends_with('_') { out } else { super::layout::forget_permuted(out, &t) }
}

#[allow(clippy::too_many_arguments)]
fn method_inner(cx: &mut dyn ModelCtx, st: State, recv: Value, name: &str, family: Option<&'static str>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Value::Tensor(t) = &recv else { return vec![(st, Value::Unknown)] };
    let t = t.clone();
    let s = st.resolve(&t.shape);
    let same = |st: State| vec![(st, Value::Tensor(t.clone()))];
    // each name is declared once, so no family shadows another
    let handled = match family {
        Some("pointwise") => {
            let mut all = Vec::with_capacity(args.len() + 1);
            all.push(recv.clone());
            all.extend(args);
            return pointwise::call(cx, st, name, &all, &kwargs, span, true);
        }
        Some("shape_ops") => shape_ops::method(cx, st, &t, name, &args, &kwargs, span),
        Some("reshape") => reshape::method(cx, st, &t, &s, name, &args, &kwargs, span),
        Some("reduce") => reduce::method(cx, st, &t, &s, name, &args, &kwargs, span),
        Some("join") => join::method(cx, st, &t, name, &args, &kwargs, span),
        Some("indexing") => indexing::method(cx, st, &t, &s, name, &args, &kwargs, span),
        Some("matmul") => matmul::method(cx, st, &t, name, &args, span),
        Some("spectral") => spectral::method(cx, st, &t, name, &args, &kwargs, span),
        _ => Err(st),
    };
    let mut st = match (handled, family) {
        (Ok(v), _) => return v,
        // a family that declares a name it does not model is a bug; be silent
        (Err(st), Some(f)) if f != "tensor" => return vec![(st, Value::Unknown)],
        (Err(st), _) => st,
    };
    match name {
        // (the pointwise ops, incl. `clone`/`detach`/`contiguous`, are handled by pointwise.rs above)
        "dropout" | "gelu" | "silu" | "softplus" | "requires_grad" => same(st),
        "is_floating_point" => vec![(st, t.dtype.filter(|d| *d != DType::Other).map(|d| Value::Bool(d.is_floating())).unwrap_or(Value::Unknown))],
        "float" | "double" | "half" | "long" | "int" | "bool" | "bfloat16" | "byte" => {
            let dt = match name {
                "float" => DType::Float,
                "double" => DType::Double,
                "half" => DType::Half,
                "long" => DType::Long,
                "int" => DType::Int,
                "bool" => DType::Bool,
                "byte" => DType::Byte,
                _ => DType::BFloat16,
            };
            vec![(st, tensor_value(t.shape.clone(), Some(dt)))]
        }
        "to" | "type" => {
            // `to(other)` takes the other tensor's dtype; `type()` returns the type's name and
            // `type("torch.DoubleTensor")` takes one: not modelled
            if name == "to" && args.iter().any(|a| matches!(a, Value::Tensor(_))) {
                return vec![(st, Value::Unknown)];
            }
            let dt = args.iter().chain(kwargs.iter().map(|(_, v)| v)).find_map(dtype_of);
            if name == "type" && dt.is_none() {
                return vec![(st, Value::Unknown)];
            }
            // an argument that may be a dtype the core does not know (`x.to(p.dtype)` of a
            // parameter of unknown dtype, `x.to(dtype=cfg.dtype)`) makes the dtype unknown; a
            // device string or index, `non_blocking` and `copy` cannot be one
            let may_be_dtype = |v: &Value| !matches!(v, Value::Str(_) | Value::Int(_) | Value::Bool(_) | Value::None);
            if dt.is_none() && (args.iter().any(may_be_dtype) || kwargs.iter().any(|(k, v)| &**k == "dtype" && may_be_dtype(v))) {
                return vec![(st, tensor_value(t.shape.clone(), None))];
            }
            vec![(st, tensor_value(t.shape.clone(), dt.or(t.dtype)))]
        }
        "size" | "dim" | "ndimension" | "numel" | "nelement" => {
            let v = match name {
                "size" => match args.first().or(kwargs.iter().find(|(k, _)| &**k == "dim").map(|(_, v)| v)) {
                    None => return tensor_attr(cx, st, recv.clone(), &Rc::from("shape"), span),
                    Some(d) => match d.as_const_int() {
                        Some(d) => return size_at(cx, st, &t, d, span),
                        None => Value::Unknown,
                    },
                },
                "dim" | "ndimension" => rank_value(cx, &s),
                _ => {
                    if s.prefix.is_none() {
                        numel(&s.dims).map(Value::Int).unwrap_or(Value::Unknown)
                    } else {
                        Value::Unknown
                    }
                }
            };
            vec![(st, v)]
        }
        "item" | "backward" if !one_element(cx, &st, name, &t, &s, span) => Vec::new(),
        "backward" if !super::autograd::check_backward(cx, &st, &t, span) => Vec::new(),
        // the optimizers whose layers the loss reaches get its gradients (`optim.rs`); a loss
        // whose graph is not known may reach any of them
        "backward" => {
            let mut st = st;
            if matches!(t.grad, Grad::Tracked | Grad::Leaf) && args.is_empty() {
                super::optim::backward(&mut st, &t, span);
                super::mode::backward(cx, &mut st, &t, span);
            } else if !matches!(t.grad, Grad::Untracked(..)) {
                super::optim::forget(&mut st, None);
            }
            // (then the graph's saved tensors are freed, unless retained: SHP314)
            super::autograd::free_after_backward(&mut st, &t, &args, &kwargs, span);
            vec![(st, Value::None)]
        }
        "item" => match t.index_value() {
            Some(p) => vec![(st, Value::Int(p))],
            None => vec![(st, Value::Float(None))],
        },
        // `tolist()`: of a 1-D tensor of a known integer or floating dtype, alike Python ints
        // (floats) of unknown number; of a 0-dim one, one of them
        "tolist" if args.is_empty() => {
            let mut st = st;
            let s = st.resolve(&t.shape);
            let integer = matches!(t.dtype, Some(DType::Long | DType::Int | DType::Byte));
            let floating = t.dtype.is_some_and(|d| d.is_floating());
            let number = |cx: &mut dyn ModelCtx| if integer { Value::Int(cx.fresh_int_sym("n", crate::shape::UNBOUNDED)) } else { Value::Float(None) };
            let v = match (s.rank(), integer || floating) {
                (Some(0), true) => number(cx),
                // (as many numbers as the tensor's length, when it is a short known one)
                (Some(1), true) => match s.dims[0].as_const() {
                    Some(n) if (0..=64).contains(&n) => {
                        let items = (0..n).map(|_| number(cx)).collect();
                        Value::Ref(st.alloc(Obj::List(items)))
                    }
                    _ => crate::models::builtins::repeat(number(cx)),
                },
                _ => Value::Unknown,
            };
            vec![(st, v)]
        }
        "tolist" | "numpy" | "data_ptr" | "register_hook" => vec![(st, Value::Unknown)],
        "flip" | "roll" => {
            let dims_arg = if name == "flip" { args.first().or(kwargs.iter().find(|(k, _)| &**k == "dims").map(|(_, v)| v)) } else { args.get(1).or(kwargs.iter().find(|(k, _)| &**k == "dims").map(|(_, v)| v)) };
            if name == "roll" {
                // one shift and no dims, or a shift per dim: torch raises otherwise ("shifts and
                // dimensions must align", "`shifts` required")
                let shifts = args.first().or(kwargs.iter().find(|(k, _)| &**k == "shifts").map(|(_, v)| v));
                let mut count = |v: Option<&Value>| match v {
                    None | Some(Value::None) => Some(0),
                    Some(Value::Int(_)) => Some(1),
                    Some(Value::Tensor(_)) => None,
                    Some(v) => cx.iterate(&mut st, v, span).map(|xs| xs.len()),
                };
                let (Some(n_shifts), Some(n_dims)) = (count(shifts), count(dims_arg)) else { return vec![(st, Value::Unknown)] };
                let ok = (n_shifts == 1 && n_dims == 0) || (n_shifts == n_dims && n_dims > 0);
                if !cx.check(&st, span, Tri::from_bool(!ok), |_| {
                    (InvalidShapeArgument::RollShifts { shifts: n_shifts.to_string(), dims: n_dims.to_string() }, Vec::new())
                }) {
                    return Vec::new();
                }
            }
            let ds: Option<Vec<i128>> = match dims_arg {
                None => Some(Vec::new()),
                Some(Value::Int(p)) => p.as_const().map(|c| vec![c]),
                Some(v) => cx.iterate(&mut st, v, span).and_then(|items| items.iter().map(|x| x.as_const_int()).collect()),
            };
            let Some(ds) = ds else { return same(st) };
            if s.rank().is_some() {
                let mut idx = Vec::new();
                for d in ds {
                    match check_dim(cx, &st, &s, d, span, name) {
                        Some(usize::MAX) => return Vec::new(),
                        Some(i) => idx.push(i),
                        None => {}
                    }
                }
                // roll takes a dim twice (each shift applies); flip does not
                if name == "flip" && !check_distinct_dims(cx, &st, &idx, span, name) {
                    return Vec::new();
                }
            }
            same(st)
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// Broadcast two shapes (SHP102 on a definite mismatch).
pub fn broadcast(cx: &mut dyn ModelCtx, st: &State, a: &Shape, b: &Shape, span: Span, what: &str) -> Option<Shape> {
    let a = st.resolve(a);
    let b = st.resolve(b);
    let n = a.dims.len().max(b.dims.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let x = if i < a.dims.len() { Some(&a.dims[a.dims.len() - 1 - i]) } else { None };
        let y = if i < b.dims.len() { Some(&b.dims[b.dims.len() - 1 - i]) } else { None };
        let d = match (x, y) {
            (Some(x), None) => {
                if b.prefix.is_some() { Dim::unknown() } else { x.clone() }
            }
            (None, Some(y)) => {
                if a.prefix.is_some() { Dim::unknown() } else { y.clone() }
            }
            (Some(x), Some(y)) => {
                let eq = cx.dim_eq(st, x, y);
                let one = Dim::konst(1);
                let x1 = cx.dim_eq(st, x, &one);
                let y1 = cx.dim_eq(st, y, &one);
                // torch raises when the sizes differ and neither is 1 (the formula is built
                // and decided again only when the three comparisons leave it open)
                let violated = match (eq, x1, y1) {
                    _ if [eq, x1, y1].contains(&Tri::True) => Formula::Const(false),
                    (Tri::False, Tri::False, Tri::False) => Formula::Const(true),
                    _ => Formula::And(vec![cx.dim_eq_f(x, y).not(), cx.dim_eq_f(x, &one).not(), cx.dim_eq_f(y, &one).not()]),
                };
                let pos = -(i as i64) - 1;
                if !cx.check(st, span, violated, |cx| {
                    let (sa, sb) = (cx.show_shape(st, &a), cx.show_shape(st, &b));
                    let (dx, dy) = (cx.show_dim(x), cx.show_dim(y));
                    (BroadcastShapeMismatch::Shapes { op: what.into(), lhs: sa, rhs: sb, da: dx, db: dy, dim: pos.to_string() }, Vec::new())
                }) {
                    return None;
                }
                if eq == Tri::True || y1 == Tri::True {
                    x.clone()
                } else if x1 == Tri::True {
                    y.clone()
                } else {
                    Dim::unknown()
                }
            }
            (None, None) => Dim::unknown(),
        };
        out.push(d);
    }
    out.reverse();
    let prefix = if a.prefix.is_some() || b.prefix.is_some() {
        // both ranks unknown: the longer known suffix is all we know
        Some(a.prefix.or(b.prefix).unwrap())
    } else {
        None
    };
    // a prefix stays the result's only when the other side adds no dims in front of the
    // prefixed side's known suffix (`[*p, 64] * [?, 1]` has rank max(rank, 2): `[*q, ?, 64]`)
    let extends = |x: &Shape, y: &Shape| x.prefix.is_some() && y.dims.len() > x.dims.len();
    let prefix = if (a.prefix.is_some() && b.prefix.is_some() && a.prefix != b.prefix) || extends(&a, &b) || extends(&b, &a) { Some(u32::MAX) } else { prefix };
    // the leading dims of the result are a function of the operands' prefixes and the
    // lengths of their known suffixes: one variable for each such pair
    let key = [1, a.prefix.unwrap_or(u32::MAX), a.dims.len() as u32, b.prefix.unwrap_or(u32::MAX), b.dims.len() as u32];
    Some(Shape { prefix: prefix.map(|p| if p == u32::MAX { cx.derived_var(&key) } else { p }), dims: out })
}

pub fn binop(cx: &mut dyn ModelCtx, st: State, op: BinOp, a: Value, b: Value, span: Span, inplace: bool) -> Vals {
    if op == BinOp::MatMul {
        return matmul(cx, st, "matmul", a, b, span);
    }
    // arithmetic of a tensor and a value not followed (a reward from an environment): a tensor
    // of a shape, dtype and device not known, or a raise (its graph: `device::around_binop`)
    if !inplace
        && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Pow)
        && matches!((&a, &b), (Value::Tensor(_), Value::Unknown) | (Value::Unknown, Value::Tensor(_)))
    {
        let shape = cx.any_shape();
        return vec![(st, tensor_value(shape, None))];
    }
    super::pointwise::operator(cx, st, op, a, b, span, inplace)
}

/// Elementwise comparison (`x != pad`, `scores > 0`): a bool tensor of the broadcast shape.
pub fn compare(cx: &mut dyn ModelCtx, st: State, a: Value, b: Value, span: Span) -> Vals {
    super::pointwise::comparison(cx, st, a, b, span)
}

/// SHP311: `x.item()` and `x.backward()` (without a gradient) need exactly one element. A known
/// dim other than 1 (a 0 too) settles it; symbolic dims leave it open. False when the path ends.
fn one_element(cx: &mut dyn ModelCtx, st: &State, name: &str, t: &Tensor, s: &Shape, span: Span) -> bool {
    use crate::rules::training::scalar_required::ScalarRequired;
    if s.prefix.is_some() || !s.dims.iter().any(|d| d.as_const().is_some_and(|c| c != 1)) {
        return true;
    }
    let numel = numel(&s.dims);
    if numel.as_ref().and_then(|n| n.as_const()) == Some(1) {
        return true;
    }
    let backward = name == "backward";
    cx.check(st, span, Tri::True, |cx| {
        let count = match numel.as_ref() {
            Some(n) => format!("{} elements", cx.show_dim(&Dim::known(n.clone(), None))),
            None => "not one element".to_string(),
        };
        let shape = cx.show_shape(st, &t.shape);
        (if backward { ScalarRequired::Backward { shape, count } } else { ScalarRequired::Item { shape, count } }, Vec::new())
    })
}

/// Where the leading sizes of a tensor of unknown rank are kept among its refinements
/// (`ModelCtx::refine_dim`'s slots; the trailing dims a layer gives it use the low ones).
const LEADING_SLOTS: usize = 1 << 16;

/// The refinement key (`Interp::refined_dims`) of the `d`th leading size (`d < 8`) of the
/// tensors whose shape is `[*var]`: `x.size(d)` read before their rank is known. When a path
/// learns their rank that size is their `d`th dim (`engine::contract` ties the two).
pub fn leading_size_key(var: u32, d: usize) -> (u32, usize, Rc<str>) {
    const NAMES: [&str; 8] = ["B", "d1", "d2", "d3", "d4", "d5", "d6", "d7"];
    (var, LEADING_SLOTS + d, Rc::from(NAMES[d]))
}

pub fn size_at(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, d: i128, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    if let Some(rank) = s.rank() {
        return match check_dim(cx, &st, &s, d, span, "size") {
            Some(usize::MAX) => Vec::new(),
            Some(i) if i < rank => {
                // (a size not known is still an int)
                let v = s.dims[i].v.clone().map(Value::Int).unwrap_or_else(|| Value::Int(cx.fresh_int_sym("n", 0)));
                vec![(st, v)]
            }
            _ => vec![(st, Value::Unknown)],
        };
    }
    // unknown rank
    if d < 0 && ((-d) as usize) <= s.dims.len() {
        let v = s.dims[s.dims.len() - (-d) as usize].v.clone().map(Value::Int).unwrap_or_else(|| Value::Int(cx.fresh_int_sym("n", 0)));
        return vec![(st, v)];
    }
    if d >= 0 && d < 8 && s.dims.is_empty() {
        // a leading size of a tensor of unknown rank: a size of its own, the same one for each
        // read of this tensor. It is not bound into the shape: a shape knows trailing dims
        // only (`[*, ...]`), and binding `[*rest, B]` made `x.size(0)` the *last* dim, so
        // `if x.size(0) != 32: raise` then `Linear(784)(x)` was reported. The tie between
        // this size and the first dim a later layer gives the shape is lost (never a guess).
        let (var, slot, name) = leading_size_key(s.prefix.unwrap(), d as usize);
        let v = cx.refine_dim(var, slot, &name).v;
        return vec![(st, v.map(Value::Int).unwrap_or(Value::Unknown))];
    }
    vec![(st, Value::Unknown)]
}

/// A tensor's rank: an int, or for an unknown rank an int symbol of its own, at least the number
/// of trailing dims known (`x.ndim == 2` on a path, then `ndim == 2` again on the same path, is
/// decided; the symbol is not tied to the shape, which a later use may fix).
pub fn rank_value(cx: &mut dyn ModelCtx, s: &Shape) -> Value {
    match s.rank() {
        Some(r) => Value::int(r as i128),
        None => Value::Int(cx.fresh_int_sym("ndim", s.dims.len() as i128)),
    }
}

pub fn tensor_attr(cx: &mut dyn ModelCtx, st: State, o: Value, name: &Name, span: Span) -> Vals {
    let Value::Tensor(t) = &o else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    match &**name {
        "shape" => {
            if s.prefix.is_none() {
                // (a size not known is still an int)
                let items = s.dims.iter().map(|d| d.v.clone().map(Value::Int).unwrap_or_else(|| Value::Int(cx.fresh_int_sym("n", 0)))).collect();
                return vec![(st, Value::Tuple(Rc::new(items)))];
            }
            vec![(st, Value::LibMethod(Box::new(o.clone()), Rc::from("<shape>")))]
        }
        "ndim" => vec![(st, rank_value(cx, &s))],
        "T" | "mT" | "mH" | "data" | "real" => {
            if &**name == "data" {
                return vec![(st, o.clone())];
            }
            if &**name == "real" {
                return vec![(st, o.clone())];
            }
            tensor_method(cx, st, o.clone(), name, Vec::new(), Vec::new(), span)
        }
        // the dtype when it is one the core tells apart: `x.dtype == torch.bool` is decided
        "dtype" => match &o {
            Value::Tensor(t) if t.dtype.is_some_and(|d| d != DType::Other) => vec![(st, Value::DType(t.dtype.unwrap_or(DType::Other)))],
            _ => vec![(st, Value::Unknown)],
        },
        "device" | "grad" | "is_cuda" | "requires_grad" | "grad_fn" => vec![(st, Value::Unknown)],
        _ => vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))],
    }
}

/// The APIs this family models, for the registry (`models/registry.rs`): the tensor's own
/// methods and attributes, and the `torch.` functions that change nothing the models follow.
pub const APIS: &[Decl] = &[
    // (return None; the arguments change no shape. `set_default_dtype` changes the dtype of later
    // creations, which the models do not follow: they keep float32)
    Decl::function("torch.manual_seed", "~seed"),
    // the grad mode (`autograd.rs`): context managers whose value sets the mode of a `with` body
    Decl::function("torch.set_grad_enabled", "mode"),
    Decl::function("torch.no_grad", ""),
    Decl::function("torch.enable_grad", ""),
    Decl::function("torch.inference_mode", "mode=True"),
    Decl::function("torch.set_num_threads", "~int"),
    Decl::function("torch.save", "~obj, ~f, ~pickle_module=pickle, ~pickle_protocol=2, ~_use_new_zipfile_serialization=True, ~_disable_byteorder_record=False"),
    // a loaded object (`loaded.rs`: a tensor where a use tells), and for SHP312 where it was
    // loaded from (`checkpoint.rs`)
    Decl::function("torch.load", "f, ~map_location=None, ~pickle_module=None, *, ~weights_only=None, ~mmap=None, ~**pickle_load_args"),
    Decl::function("torch.set_default_dtype", "~d"),
    Decl::function("torch.set_printoptions", "~precision=None, ~threshold=None, ~edgeitems=None, ~linewidth=None, ~profile=None, ~sci_mode=None"),
    Decl::function("torch.is_tensor", "obj"),
    // the input's shape (`p` out of [0, 1] raises: a value, not a shape)
    Decl::function("torch.dropout", "input, ~p, ~train"),
    Decl::function("torch.numel", "input"),
    // (`memory_format=` is not read)
    Decl::method("torch.Tensor.float", ""),
    Decl::method("torch.Tensor.double", ""),
    Decl::method("torch.Tensor.half", ""),
    Decl::method("torch.Tensor.long", ""),
    Decl::method("torch.Tensor.int", ""),
    Decl::method("torch.Tensor.bool", ""),
    Decl::method("torch.Tensor.bfloat16", ""),
    Decl::method("torch.Tensor.byte", ""),
    Decl::method("torch.Tensor.is_floating_point", ""),
    Decl::function("torch.is_floating_point", "input"),
    // the dtype from whichever argument is one: `to(dtype)`, `to(device, dtype)`, `to(dtype=...)`
    Decl::method("torch.Tensor.to", "~device=None, dtype=None, ~non_blocking=False, ~copy=False"),
    Decl::method("torch.Tensor.type", "dtype=None, ~non_blocking=False"),
    Decl::method("torch.Tensor.size", "dim=None").checks(&[&r::dim_out_of_range::RULE]),
    Decl::method("torch.Tensor.dim", ""),
    Decl::method("torch.Tensor.ndimension", ""),
    Decl::method("torch.Tensor.numel", ""),
    Decl::method("torch.Tensor.nelement", ""),
    Decl::method("torch.Tensor.item", ""),
    // Python numbers: of a 1-D tensor, alike ints (floats) of unknown number
    Decl::method("torch.Tensor.tolist", ""),
    // returns None (`gradient` is not read: its shape must match)
    Decl::method("torch.Tensor.backward", "*, ~retain_graph=None, ~create_graph=False, ~inputs=None"),
    Decl::function("torch.flip", "input, dims").checks(&[&r::dim_out_of_range::RULE]),
    Decl::method("torch.Tensor.flip", "dims").checks(&[&r::dim_out_of_range::RULE]),
    Decl::function("torch.roll", "input, shifts, dims=None").checks(&[&r::dim_out_of_range::RULE, &r::invalid_shape_argument::RULE]),
    Decl::method("torch.Tensor.roll", "shifts, dims=None").checks(&[&r::dim_out_of_range::RULE, &r::invalid_shape_argument::RULE]),
    // attributes (`tensor_attr`)
    Decl::method("torch.Tensor.shape", ""),
    Decl::method("torch.Tensor.ndim", ""),
    Decl::method("torch.Tensor.data", ""),
    Decl::method("torch.Tensor.real", ""),
];
