//! Tensor creation: `zeros`/`ones`/`empty`/`rand`/`randn`, `full`, `randint`, the `*_like`
//! functions, `linspace`/`logspace`, `arange`, `randperm`, `eye`, `tensor`/`as_tensor`.

use std::rc::Rc;

use crate::models::bind;
use super::tensor::{arg_dtype, dim_of, sizes, tensor_of, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape::{self as r, InvalidShapeArgument};
use crate::shape::Tri;

/// `torch.` functions modelled here; `Err(st)` gives the state back when `f` is not one of them.
pub fn function(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    // fresh tensors of a given size are contiguous (`tensor`/`as_tensor` of a tensor keep its
    // strides, the `*_like` ones its memory format: not known)
    let fresh = |v: Vals| super::layout::contiguous(v);
    Ok(match f {
        "zeros" | "ones" | "empty" | "rand" | "randn" => fresh(zeros(cx, st, f, args, kwargs, span)),
        "full" => fresh(full(cx, st, args, kwargs, span)),
        "randint" => fresh(randint(cx, st, args, kwargs, span)),
        "zeros_like" | "ones_like" | "rand_like" | "randn_like" | "empty_like" | "full_like" | "randint_like" => like(st, args, kwargs),
        "linspace" | "logspace" => fresh(linspace(cx, st, f, args, kwargs, span)),
        "arange" => fresh(arange(cx, st, args, kwargs, span)),
        // of data (a list, a number): a fresh tensor
        // of a NumPy array: its shape, its dtype unless `dtype=` says
        "tensor" | "as_tensor" | "from_numpy" if let Some(a) = args.first().and_then(|a| crate::models::numpy::array_of(&st, a)) => {
            let dtype = match arg_dtype(kwargs) {
                Some(d) => d,
                None => a.dtype,
            };
            fresh(vec![(st, tensor_value(a.shape.clone(), dtype))])
        }
        // an array the core does not follow: a CPU tensor of its (unknown) shape and dtype; a
        // value that is no array raises TypeError
        "from_numpy" if matches!(args.first(), Some(Value::Unknown)) && args.len() == 1 && kwargs.is_empty() => {
            let shape = cx.any_shape();
            fresh(vec![(st, tensor_value(shape, None))])
        }
        "from_numpy" => vec![(st, Value::Unknown)],
        _ if let Some(d) = legacy_dtype(f) => fresh(legacy(cx, st, d, args, span)),
        "tensor" | "as_tensor" => {
            let of_data = !matches!(args.first(), Some(Value::Tensor(_)));
            let out = super::shape_ops::tensor_literal(cx, st, args, kwargs, span);
            if of_data { fresh(out) } else { out }
        }
        "randperm" => fresh(randperm(st, args, kwargs, span)),
        "triu_indices" | "tril_indices" => fresh(tri_indices(st, f == "triu_indices", args, kwargs)),
        "eye" => fresh(eye(st, args, kwargs)),
        _ => return Err(st),
    })
}

/// The sizes given to the factory `torch.{f}` at `span`, each known one with that origin
/// (`32 from torch.randn at line 21`) unless it has its own.
fn written(mut dims: Vec<Dim>, f: &str, span: Span) -> Vec<Dim> {
    let n = dims.len();
    let by: Rc<str> = Rc::from(format!("torch.{f}"));
    for (i, d) in dims.iter_mut().enumerate() {
        if d.v.is_some() && d.why.is_none() {
            d.why = Some(Rc::new(Origin::Written { by: by.clone(), at: span, pos: (n - i).min(u8::MAX as usize) as u8 }));
        }
    }
    dims
}

/// Whether values of this dtype are integers the bounds describe.
fn integral(dtype: Option<DType>) -> bool {
    matches!(dtype, Some(DType::Long | DType::Int))
}

/// A tensor with known values when its dtype is integral.
fn valued(shape: Shape, dtype: Option<DType>, values: Option<Rc<IntBounds>>) -> Value {
    let values = values.filter(|_| integral(dtype));
    Value::Tensor(Rc::new(Tensor::new(shape, dtype).with_values(values)))
}

/// `zeros`/`ones`/`empty`/`rand`/`randn(*size)` (or `size=`); `zeros`/`ones` of an integral
/// dtype have known values.
fn zeros(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let mut st = st;
    let dt = arg_dtype(kwargs);
    let size_kw = kwargs.iter().find(|(k, _)| &**k == "size").map(|(_, v)| vec![v.clone()]);
    let a = size_kw.unwrap_or_else(|| args.to_vec());
    let Some(dims) = sizes(cx, &mut st, &a) else { return vec![(st, Value::Unknown)] };
    let dims = written(dims, f, span);
    let dtype = dt.unwrap_or(Some(DType::Float));
    let values = match f {
        "zeros" => IntBounds::exact(0, 0, "torch.zeros", span),
        "ones" => IntBounds::exact(1, 1, "torch.ones", span),
        _ => None,
    };
    vec![(st, valued(Shape::known(dims), dtype, values))]
}

/// `full(size, fill_value)`: the dtype from the fill value unless `dtype=` says.
fn full(cx: &mut dyn ModelCtx, st: State, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let mut st = st;
    let dt = arg_dtype(kwargs);
    let Some(dims) = args.first().and_then(|a| sizes(cx, &mut st, std::slice::from_ref(a))) else { return vec![(st, Value::Unknown)] };
    let dims = written(dims, "full", span);
    let dtype = dt.unwrap_or(match args.get(1) {
        Some(Value::Int(_)) => Some(DType::Long),
        Some(Value::Bool(_)) => Some(DType::Bool),
        Some(Value::Float(_)) => Some(DType::Float),
        _ => None,
    });
    // an integer fill value (not a bool: `full(s, True, dtype=long)` is 1, not modelled)
    let values = match args.get(1) {
        Some(Value::Int(p)) => p.as_const().and_then(|v| IntBounds::exact(v, v, "torch.full", span)),
        _ => None,
    };
    vec![(st, valued(Shape::known(dims), dtype, values))]
}

/// `randint(low=0, high, size)`: values in `[low, high - 1]`, none certainly present.
fn randint(cx: &mut dyn ModelCtx, st: State, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let mut st = st;
    let dt = arg_dtype(kwargs);
    let b = bind(&["low", "high", "size"], args, kwargs);
    let size = match (b.get("size"), args.len()) {
        (Some(s), _) => Some(s.clone()),
        (None, 2) => args.get(1).cloned(),
        _ => None,
    };
    let Some(dims) = size.and_then(|s| sizes(cx, &mut st, std::slice::from_ref(&s))) else { return vec![(st, Value::Unknown)] };
    let dims = written(dims, "randint", span);
    // the bounds, positionally only: `randint(high, size)`, `randint(low, high, size)`
    let size_kw = kwargs.iter().any(|(k, _)| &**k == "size");
    let named = kwargs.iter().any(|(k, _)| matches!(&**k, "low" | "high"));
    let given = if size_kw { args } else { &args[..args.len().saturating_sub(1)] };
    let int = |v: &Value| match v {
        Value::Int(p) => p.as_const(),
        _ => None,
    };
    let bounds = match given {
        _ if named => None,
        [hi] => int(hi).map(|hi| (0, hi)),
        [lo, hi] => int(lo).zip(int(hi)),
        _ => None,
    };
    let values = bounds.and_then(|(lo, hi)| IntBounds::within(lo, hi - 1, "torch.randint", span));
    vec![(st, valued(Shape::known(dims), dt.unwrap_or(Some(DType::Long)), values))]
}

/// `zeros_like(x)` and the other `*_like`: `x`'s shape and dtype.
fn like(st: State, args: &[Value], kwargs: &[(Name, Value)]) -> Vals {
    let dt = arg_dtype(kwargs);
    match args.first().and_then(tensor_of) {
        Some(t) => {
            let dtype = dt.unwrap_or(t.dtype);
            vec![(st, tensor_value(t.shape.clone(), dtype))]
        }
        None => vec![(st, Value::Unknown)],
    }
}

/// `linspace`/`logspace(start, end, steps)`.
fn linspace(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let dt = arg_dtype(kwargs);
    let b = bind(&["start", "end", "steps"], args, kwargs);
    let Some(n) = b.get("steps").and_then(dim_of) else { return vec![(st, Value::Unknown)] };
    let bad = n.as_const().map(|c| c < 0).map(Tri::from_bool).unwrap_or(Tri::Unknown);
    if !cx.check(&st, span, bad, |_| (InvalidShapeArgument::NegativeSteps { op: format!("torch.{f}") }, Vec::new())) {
        return Vec::new();
    }
    vec![(st, tensor_value(Shape::known(vec![n]), dt.unwrap_or(Some(DType::Float))))]
}

/// `arange(end)`, `arange(start, end)`, `arange(start, end, step)`.
fn arange(cx: &mut dyn ModelCtx, st: State, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let dt = arg_dtype(kwargs);
    // the bounds are read positionally only
    if kwargs.iter().any(|(k, _)| matches!(&**k, "start" | "end" | "step")) {
        return vec![(st, Value::Unknown)];
    }
    let ints: Vec<Option<i128>> = args.iter().map(|a| a.as_const_int()).collect();
    let n = match ints.as_slice() {
        [Some(n)] => Some(*n),
        [Some(a), Some(b)] => Some(b - a),
        [Some(a), Some(b), Some(s)] if *s > 0 => Some((b - a + s - 1).div_euclid(*s)),
        _ => None,
    };
    let is_float = args.iter().any(|a| matches!(a, Value::Float(_)));
    if !cx.check(&st, span, Tri::from_bool(n.is_some_and(|n| n < 0)), |_| (InvalidShapeArgument::ArangeNegative {}, Vec::new())) {
        return Vec::new();
    }
    let dim = match (n, args) {
        (Some(n), _) => Dim::konst(n.max(0)),
        (None, [Value::Int(p)]) => Dim::known(p.clone(), None),
        _ => Dim::unknown(),
    };
    let dtype = dt.unwrap_or(if is_float { Some(DType::Float) } else { Some(DType::Long) });
    // integer bounds (step > 0): `start`, ..., `start + (n - 1) * step`, all present
    let values = match ints.as_slice() {
        _ if is_float || args.iter().any(|a| matches!(a, Value::Bool(_))) => None,
        [Some(e)] => IntBounds::exact(0, e - 1, "torch.arange", span),
        [Some(a), Some(b)] => IntBounds::exact(*a, b - 1, "torch.arange", span),
        [Some(a), Some(_), Some(s)] if *s > 0 => n.and_then(|n| IntBounds::exact(*a, a + (n - 1) * s, "torch.arange", span)),
        _ => None,
    };
    vec![(st, valued(Shape::known(vec![dim]), dtype, values))]
}

/// `triu_indices(row, col, offset=0)` (`upper`) and `tril_indices`: the `[2, n]` indices of the
/// `n` places `(i, j)` of a `row` x `col` matrix with `j - i >= offset` (`<= offset`). Known for
/// known sizes, and for one size `N` of both with the offsets of a triangle with or without its
/// diagonal: `N(N + 1)/2`, `N(N - 1)/2`.
fn tri_indices(st: State, upper: bool, args: &[Value], kwargs: &[(Name, Value)]) -> Vals {
    let b = crate::models::bind(&["row", "col", "offset"], args, kwargs);
    let dt = arg_dtype(kwargs).unwrap_or(Some(DType::Long));
    let offset = match b.get("offset") {
        None => Some(0),
        Some(v) => v.as_const_int(),
    };
    let (Some(Value::Int(row)), Some(Value::Int(col)), Some(k)) = (b.get("row"), b.get("col"), offset) else { return vec![(st, Value::Unknown)] };
    let n = match (row.as_const(), col.as_const()) {
        (Some(r), Some(c)) if (0..=1 << 20).contains(&r) && (0..=1 << 20).contains(&c) => {
            let per_row = |i: i128| if upper { (c - (i + k).max(0)).max(0) } else { (i + k + 1).min(c).max(0) };
            Some(crate::shape::Poly::constant((0..r).map(per_row).sum()))
        }
        _ if row == col && matches!((upper, k), (true, 0 | 1) | (false, 0 | -1)) => {
            let other = if k == 0 { row.add_const(1) } else { row.add_const(-1) };
            other.and_then(|o| row.mul(&o)).and_then(|p| p.floordiv(&crate::shape::Poly::constant(2)))
        }
        _ => None,
    };
    match n {
        Some(n) => vec![(st, valued(Shape::known(vec![Dim::konst(2), Dim { v: Some(n), why: None }]), dt, None))],
        None => vec![(st, Value::Unknown)],
    }
}

/// `randperm(n)`: a permutation of `0..n`.
fn randperm(st: State, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let dt = arg_dtype(kwargs);
    let Some(n) = args.first().and_then(dim_of) else { return vec![(st, Value::Unknown)] };
    let values = match args.first() {
        Some(Value::Int(p)) => p.as_const().and_then(|n| IntBounds::exact(0, n - 1, "torch.randperm", span)),
        _ => None,
    };
    vec![(st, valued(Shape::known(vec![n]), dt.unwrap_or(Some(DType::Long)), values))]
}

/// `eye(n, m=None)`.
fn eye(st: State, args: &[Value], kwargs: &[(Name, Value)]) -> Vals {
    let dt = arg_dtype(kwargs);
    let n = args.first().and_then(dim_of);
    let m = args.get(1).or(kwargs.iter().find(|(k, _)| &**k == "m").map(|(_, v)| v)).and_then(dim_of).or_else(|| n.clone());
    match (n, m) {
        (Some(n), Some(m)) => vec![(st, tensor_value(Shape::known(vec![n, m]), dt.unwrap_or(Some(DType::Float))))],
        _ => vec![(st, Value::Unknown)],
    }
}

/// The APIs this family models, for the registry (`models/registry.rs`). `layout`, `device`,
/// `requires_grad`, `pin_memory` and `generator` change neither shapes nor dtypes; `out=` and
/// `memory_format=` are not read.
pub const APIS: &[Decl] = &[
    // a static method: `[sz, sz]` as `torch.empty` makes it (`models/mod.rs`)
    Decl::function("torch.nn.Transformer.generate_square_subsequent_mask", "sz, ~device=None, dtype=None"),
    Decl::function("torch.zeros", "*size, size=None, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False"),
    Decl::function("torch.ones", "*size, size=None, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False"),
    Decl::function("torch.empty", "*size, size=None, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False, ~pin_memory=False"),
    Decl::function("torch.rand", "*size, size=None, ~generator=None, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False, ~pin_memory=False"),
    Decl::function("torch.randn", "*size, size=None, ~generator=None, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False, ~pin_memory=False"),
    Decl::function("torch.full", "size, fill_value, *, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False"),
    // `low` and `high` give the values only (the model counts the positional arguments)
    Decl::function("torch.randint", "~low=0, ~high=None, size=None, *, ~generator=None, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False, ~pin_memory=False"),
    Decl::function("torch.zeros_like", "input, *, dtype=None, ~layout=None, ~device=None, ~requires_grad=False"),
    Decl::function("torch.ones_like", "input, *, dtype=None, ~layout=None, ~device=None, ~requires_grad=False"),
    Decl::function("torch.empty_like", "input, *, dtype=None, ~layout=None, ~device=None, ~requires_grad=False"),
    Decl::function("torch.rand_like", "input, *, ~generator=None, dtype=None, ~layout=None, ~device=None, ~requires_grad=False"),
    Decl::function("torch.randn_like", "input, *, ~generator=None, dtype=None, ~layout=None, ~device=None, ~requires_grad=False"),
    // the fill value and the bounds give the values only: the dtype is the input's
    Decl::function("torch.full_like", "input, ~fill_value, *, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False"),
    Decl::function("torch.randint_like", "input, ~low=0, ~high=None, *, ~generator=None, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False"),
    Decl::function("torch.linspace", "~start, ~end, steps, *, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False").checks(&[&r::invalid_shape_argument::RULE]),
    Decl::function("torch.logspace", "~start, ~end, steps, ~base=10.0, *, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False").checks(&[&r::invalid_shape_argument::RULE]),
    Decl::function("torch.arange", "start=0, end=None, step=1, *, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False").checks(&[&r::invalid_shape_argument::RULE]),
    Decl::function("torch.triu_indices", "row, col, offset=0, *, dtype=torch.int64, ~device=None, ~layout=torch.strided"),
    Decl::function("torch.tril_indices", "row, col, offset=0, *, dtype=torch.int64, ~device=None, ~layout=torch.strided"),
    Decl::function("torch.randperm", "n, *, ~generator=None, dtype=torch.int64, ~layout=torch.strided, ~device=None, ~requires_grad=False, ~pin_memory=False"),
    Decl::function("torch.eye", "n, m=None, *, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False"),
    // a NumPy array's shape and dtype (`models/numpy.rs`), on the CPU
    Decl::function("torch.from_numpy", "ndarray"),
    // the legacy constructors: of data (a sequence, an array) or of sizes, in their dtype
    Decl::function("torch.Tensor", "*data, ~device=None"),
    Decl::function("torch.FloatTensor", "*data, ~device=None"),
    Decl::function("torch.DoubleTensor", "*data, ~device=None"),
    Decl::function("torch.HalfTensor", "*data, ~device=None"),
    Decl::function("torch.LongTensor", "*data, ~device=None"),
    Decl::function("torch.IntTensor", "*data, ~device=None"),
    Decl::function("torch.ByteTensor", "*data, ~device=None"),
    Decl::function("torch.BoolTensor", "*data, ~device=None"),
];

/// The dtype of a legacy constructor (`torch.LongTensor`).
fn legacy_dtype(f: &str) -> Option<DType> {
    Some(match f {
        "Tensor" | "FloatTensor" => DType::Float,
        "DoubleTensor" => DType::Double,
        "HalfTensor" => DType::Half,
        "LongTensor" => DType::Long,
        "IntTensor" => DType::Int,
        "ByteTensor" => DType::Byte,
        "BoolTensor" => DType::Bool,
        _ => return None,
    })
}

/// `torch.LongTensor(data)` / `torch.LongTensor(*sizes)`: a tensor of the constructor's dtype,
/// of the data's shape (a sequence of numbers, a NumPy array) or of the sizes (ints). Another
/// argument (a tensor, a number) is Unknown.
fn legacy(cx: &mut dyn ModelCtx, st: State, dtype: DType, args: &[Value], span: Span) -> Vals {
    let mut st = st;
    let shape = match args {
        [] => Shape::known(vec![Dim::konst(0)]),
        _ if args.iter().all(|a| matches!(a, Value::Int(_))) => match sizes(cx, &mut st, args) {
            Some(dims) => Shape::known(dims),
            None => return vec![(st, Value::Unknown)],
        },
        // a tuple of ints may be a `torch.Size` (`torch.FloatTensor(x.size())`: sizes) or data
        // (`torch.FloatTensor((2, 3))`): not told apart
        [Value::Tuple(items)] if items.iter().all(|i| matches!(i, Value::Int(_))) => return vec![(st, Value::Unknown)],
        [data] => match crate::models::numpy::array_of(&st, data) {
            Some(a) => a.shape.clone(),
            // (a sequence: a tuple, a list, or alike items of unknown number)
            None if matches!(data, Value::Tuple(_) | Value::Ref(_)) || matches!(data, Value::LibMethod(_, n) if &**n == "<repeat>") => {
                // the shape of the data (ragged data raises: Unknown there)
                let out = super::shape_ops::tensor_literal(cx, st, args, &[], span);
                return out.into_iter().map(|(st, v)| match v {
                    Value::Tensor(t) => (st, tensor_value(t.shape.clone(), Some(dtype))),
                    v => (st, v),
                }).collect();
            }
            // data (or a size) the core does not follow: the constructor's dtype, a shape not
            // known
            None if data.is_unknown() => cx.any_shape(),
            None => return vec![(st, Value::Unknown)],
        },
        _ => return vec![(st, Value::Unknown)],
    };
    vec![(st, tensor_value(shape, Some(dtype)))]
}
