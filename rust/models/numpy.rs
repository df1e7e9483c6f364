//! NumPy arrays, as far as they reach torch: their shape and dtype. NumPy's floats are float64,
//! the classic source of `mat1 and mat2 must have the same dtype, but got Double and Float`
//! once `torch.from_numpy`, `torch.tensor` or a `DataLoader` turns an array into a tensor
//! (SHP202).
//!
//! An array is a `Namespace` object of kind [`ARRAY`]: its `shape`, `ndim` and `dtype`
//! attributes, and its shape and dtype as a tensor under [`TENSOR`] (on no device: it is not a
//! torch tensor, and no torch model takes it for one). What is modelled:
//! - creation: `np.zeros`/`ones`/`empty`/`full` (and `_like`), `np.random.rand`/`randn`/
//!   `random`/`uniform`/`normal`/`randint`/`standard_normal`, a `default_rng()` generator's
//!   `random`/`normal`/`uniform`/`standard_normal`/`integers`, `np.arange`, `np.linspace`,
//!   `np.eye`, `np.array`/`np.asarray` of a literal, an array or a tensor;
//! - `a.astype(dtype)`, `a.copy()`, `a.reshape(...)`, `a.flatten()`, `a.ravel()`,
//!   `a.transpose(...)` (through torch's models of the same layouts), `np.where(c, x, y)`, a
//!   subscript that keeps an array (a slice, an integer of an array of known rank);
//! - the dtypes `np.float32`, `np.float64`, `np.int64`, ... (as torch's dtype values).
//!
//! Everything else of NumPy is Unknown: an unmodelled attribute or function, arithmetic on
//! arrays, reductions.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::ir::{Name, Span};
use crate::models::ctx::ModelCtx;
use crate::models::torch::tensor::{dim_of, sizes};
use crate::value::*;

/// The kind of the namespace objects that are arrays.
pub const ARRAY: &str = "numpy.ndarray";
/// The kind of a `np.random.default_rng()` generator.
const GENERATOR: &str = "numpy.random.Generator";
/// The kind of a legacy `np.random.RandomState(seed)`: its draws are `np.random`'s functions.
const RANDOM_STATE: &str = "numpy.random.RandomState";
/// The draws of `np.random` (and of a `RandomState`).
const LEGACY_DRAWS: &[&str] = &["rand", "randn", "random", "random_sample", "sample", "uniform", "normal", "standard_normal", "randint", "seed"];
/// The hidden attribute of an array holding its shape and dtype as a tensor.
pub const TENSOR: &str = "<array>";

/// A dtype named by NumPy (`np.float32`, or its string `"float32"`).
fn dtype_named(name: &str) -> Option<DType> {
    Some(match name {
        "float32" | "single" => DType::Float,
        "float64" | "double" | "float_" => DType::Double,
        "float16" | "half" => DType::Half,
        "int64" | "int_" | "intp" | "longlong" => DType::Long,
        "int32" | "intc" => DType::Int,
        "uint8" | "ubyte" => DType::Byte,
        "bool_" | "bool" => DType::Bool,
        _ => return None,
    })
}

/// `np.<name>` (`lib_attr` of `numpy`, `numpy.random`): a modelled function or submodule as a
/// library object, a dtype as its value; anything else Unknown.
pub fn lib_attr(path: &str, name: &str) -> Value {
    match path {
        "numpy" => {
            if name == "newaxis" {
                return Value::None; // a new axis when indexing
            }
            match name {
                "pi" => return Value::Float(Some(std::f64::consts::PI)),
                "e" => return Value::Float(Some(std::f64::consts::E)),
                "inf" => return Value::Float(Some(f64::INFINITY)),
                "nan" => return Value::Float(Some(f64::NAN)),
                _ => {}
            }
            if let Some(d) = dtype_named(name) {
                return Value::DType(d);
            }
            match name {
                "random" | "zeros" | "ones" | "empty" | "full" | "zeros_like" | "ones_like" | "empty_like" | "full_like" | "array" | "asarray" | "arange" | "linspace" | "eye" | "clip" | "stack" | "concatenate" | "vstack" | "hstack" | "loadtxt" | "genfromtxt" | "where" | "save" | "load" => {
                    Value::Lib(Rc::from(format!("numpy.{name}")))
                }
                _ if ufunc_kind(name).is_some() || matches!(name, "power" | "float_power") => Value::Lib(Rc::from(format!("numpy.{name}"))),
                _ => Value::Unknown,
            }
        }
        "numpy.random" => match name {
            _ if LEGACY_DRAWS.contains(&name) => Value::Lib(Rc::from(format!("numpy.random.{name}"))),
            "default_rng" | "RandomState" => Value::Lib(Rc::from(format!("numpy.random.{name}"))),
            _ => Value::Unknown,
        },
        _ => Value::Unknown,
    }
}

/// What an elementwise NumPy function of one array gives: a floating result whatever the
/// input (`sin`, `exp`), or the input's dtype (`abs`, `square`; `floor` of a floating input).
#[derive(Clone, Copy)]
enum Ufunc {
    Float,
    Same,
}

fn ufunc_kind(name: &str) -> Option<Ufunc> {
    Some(match name {
        "sin" | "cos" | "tan" | "tanh" | "sinh" | "cosh" | "arcsin" | "arccos" | "arctan" | "exp" | "exp2" | "expm1" | "log" | "log2" | "log10" | "log1p" | "sqrt" | "cbrt" | "fabs" | "rint" => Ufunc::Float,
        "abs" | "absolute" | "negative" | "square" | "sign" | "floor" | "ceil" | "trunc" => Ufunc::Same,
        _ => return None,
    })
}

/// A Python number (an int, a float, a bool).
fn is_number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
}

/// An elementwise function `f` of one Python number: a float64 scalar (a Python float) from a
/// function that gives a floating result whatever the input (`np.sin(3)`), or `np.abs`-like of
/// a float. `None` otherwise (an array, an int given to `np.abs`: an int64, not modelled).
fn scalar_ufunc(f: &str, v: &Value) -> Option<Value> {
    match (ufunc_kind(f)?, v) {
        (Ufunc::Float, v) if is_number(v) => Some(Value::Float(None)),
        (Ufunc::Same, Value::Float(_)) => Some(Value::Float(None)),
        _ => None,
    }
}

/// A new array of this shape and dtype.
pub fn new_array(st: &mut State, shape: Shape, dtype: Option<DType>) -> Value {
    let mut attrs = BTreeMap::new();
    if let Some(r) = shape.rank() {
        let dims: Vec<Value> = shape.dims.iter().map(|d| d.v.clone().map(Value::Int).unwrap_or(Value::Unknown)).collect();
        attrs.insert(Name::from("shape"), Value::Tuple(Rc::new(dims)));
        attrs.insert(Name::from("ndim"), Value::int(r as i128));
    }
    if let Some(d) = dtype {
        attrs.insert(Name::from("dtype"), Value::DType(d));
    }
    attrs.insert(Name::from(TENSOR), Value::Tensor(Rc::new(Tensor::new(shape, dtype))));
    Value::Ref(st.alloc(Obj::Namespace { kind: Rc::from(ARRAY), attrs }))
}

/// The shape and dtype of an array value (as a tensor on no device).
pub fn array_of(st: &State, v: &Value) -> Option<Rc<Tensor>> {
    let Value::Ref(id) = v else { return None };
    match st.get(*id) {
        Obj::Namespace { kind, attrs } if &**kind == ARRAY => match attrs.get(TENSOR) {
            Some(Value::Tensor(t)) => Some(t.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Whether either value is an array (NumPy's operators then apply).
pub fn involves_array(st: &State, a: &Value, b: &Value) -> bool {
    array_of(st, a).is_some() || array_of(st, b).is_some()
}

/// Whether `name` is a method of arrays the model answers (`a.astype` is then a bound method).
pub fn is_array_method(name: &str) -> bool {
    matches!(name, "astype" | "copy" | "sum" | "mean" | "max" | "min" | "std" | "var" | "reshape" | "flatten" | "ravel" | "transpose")
}

/// Whether `name` is a method of a generator the model answers.
pub fn is_generator_method(kind: &str, name: &str) -> bool {
    (kind == GENERATOR && matches!(name, "random" | "normal" | "uniform" | "standard_normal" | "integers")) || (kind == RANDOM_STATE && LEGACY_DRAWS.contains(&name))
}

/// The shape a `size=`/shape argument gives: `None` (the argument absent or `None`: a scalar
/// draw), or the shape (unknown when the argument is not a known int or sequence).
fn size_shape(cx: &mut dyn ModelCtx, st: &mut State, v: Option<&Value>) -> Option<Shape> {
    match v {
        None | Some(Value::None) => None,
        Some(v) => Some(match sizes(cx, st, std::slice::from_ref(v)) {
            Some(dims) => Shape::known(dims),
            None => cx.any_shape(),
        }),
    }
}

/// The value a draw gives: a Python scalar without a size (`np.random.rand()` is a float), an
/// array of the shape with one.
fn draw(mut st: State, shape: Option<Shape>, dtype: DType) -> Vals {
    let v = match shape {
        Some(s) => new_array(&mut st, s, Some(dtype)),
        // a Python int or float
        None if dtype == DType::Long => Value::Unknown,
        None => Value::Float(None),
    };
    vec![(st, v)]
}

/// The dtype NumPy gives an array of these Python values: float64 with any float, else int64
/// with any int, else bool. `None` when a value is not a number.
fn literal(cx: &mut dyn ModelCtx, st: &mut State, v: &Value, depth: usize, kind: &mut u8) -> Option<Vec<i128>> {
    match v {
        Value::Bool(_) => Some(Vec::new()),
        Value::Int(p) if p.as_const().is_some() || cx.syms().is_int(p) => {
            *kind = (*kind).max(1);
            Some(Vec::new())
        }
        Value::Float(_) => {
            *kind = 2;
            Some(Vec::new())
        }
        Value::Tuple(_) | Value::Ref(_) if depth < 8 && array_of(st, v).is_none() => {
            let items = cx.iterate(st, v, Span::default())?;
            if items.len() > 4096 {
                return None;
            }
            let mut inner: Option<Vec<i128>> = None;
            for it in &items {
                let s = literal(cx, st, it, depth + 1, kind)?;
                match &inner {
                    None => inner = Some(s),
                    Some(p) if *p == s => {}
                    Some(_) => return None,
                }
            }
            let mut out = vec![items.len() as i128];
            out.extend(inner.unwrap_or_default());
            Some(out)
        }
        _ => None,
    }
}

/// The dtype argument of a NumPy call (`dtype=np.float32`, `dtype="float32"`, `dtype=float`):
/// `None` when absent, `Some(None)` when not known.
fn dtype_arg(v: Option<&Value>) -> Option<Option<DType>> {
    match v? {
        Value::None => None,
        Value::DType(d) => Some(Some(*d)),
        Value::Str(Some(s)) => Some(dtype_named(s)),
        Value::Builtin("float") => Some(Some(DType::Double)),
        Value::Builtin("int") => Some(Some(DType::Long)),
        Value::Builtin("bool") => Some(Some(DType::Bool)),
        _ => Some(None),
    }
}

/// `np.array(obj)`/`np.asarray(obj)`: an array of a literal of numbers, of an array, or of a
/// tensor (its dtype); Unknown otherwise.
fn array(cx: &mut dyn ModelCtx, mut st: State, obj: &Value, dtype: Option<Option<DType>>, span: Span) -> Vals {
    let (shape, own) = if let Some(a) = array_of(&st, obj) {
        (a.shape.clone(), a.dtype)
    } else if let Value::Tensor(t) = obj {
        // (a tensor on an accelerator raises: SHP201)
        if !crate::models::torch::device::to_numpy(cx, &st, "np.array", t, span) {
            return Vec::new();
        }
        (t.shape.clone(), t.dtype)
    } else if let Some((shape, own)) = array_items(cx, &mut st, obj) {
        // a list of arrays (of NumPy scalars: 0-d arrays) of one shape: stacked
        (shape, own)
    } else {
        let mut kind = 0u8;
        let Some(dims) = literal(cx, &mut st, obj, 0, &mut kind) else { return vec![(st, Value::Unknown)] };
        let d = [DType::Bool, DType::Long, DType::Double][kind as usize];
        (Shape::known(dims.into_iter().map(Dim::konst).collect()), Some(d))
    };
    let d = match dtype {
        Some(d) => d,
        None => own,
    };
    let v = new_array(&mut st, shape, d);
    vec![(st, v)]
}

/// `[a, b, ...]` of arrays of one known shape: `[n, *shape]`, of their dtype when they share
/// one. `None` for anything else (a number among them, shapes that differ or are not known).
fn array_items(cx: &mut dyn ModelCtx, st: &mut State, obj: &Value) -> Option<(Shape, Option<DType>)> {
    if !matches!(obj, Value::Tuple(_) | Value::Ref(_)) || array_of(st, obj).is_some() {
        return None;
    }
    let items = cx.iterate(st, obj, Span::default())?;
    let first = array_of(st, items.first()?)?;
    let dims = st.resolve(&first.shape);
    if dims.prefix.is_some() || dims.dims.iter().any(|d| d.as_const().is_none()) {
        return None;
    }
    let consts = |s: &Shape| s.rank().map(|_| s.dims.iter().map(|d| d.as_const()).collect::<Vec<_>>());
    let want = consts(&dims);
    let mut dtype = first.dtype;
    for it in &items[1..] {
        let a = array_of(st, it)?;
        if consts(&st.resolve(&a.shape)) != want {
            return None;
        }
        if a.dtype != dtype {
            dtype = None;
        }
    }
    let mut out = vec![Dim::konst(items.len() as i128)];
    out.extend(dims.dims.iter().cloned());
    Some((Shape::known(out), dtype))
}

/// The number of values of `np.arange(start, stop, step)` when all are known ints.
fn arange_len(args: &[Value]) -> Option<i128> {
    let c: Vec<i128> = args.iter().map(|a| a.as_const_int()).collect::<Option<_>>()?;
    let (a, b, s) = match c[..] {
        [n] => (0, n, 1),
        [a, b] => (a, b, 1),
        [a, b, s] if s != 0 => (a, b, s),
        _ => return None,
    };
    Some(((b - a + s - s.signum()) / s).max(0))
}

/// A call of a NumPy function (`path` is `numpy.<...>`).
pub fn call(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    let kw = |k: &str| kwargs.iter().find(|(n, _)| &**n == k).map(|(_, v)| v);
    let f = path.strip_prefix("numpy.").unwrap_or(path);
    match f {
        "random.rand" | "random.randn" => {
            if !kwargs.is_empty() {
                return vec![(st, Value::Unknown)];
            }
            let shape = if args.is_empty() { None } else { Some(sizes(cx, &mut st, &args).map(Shape::known).unwrap_or_else(|| cx.any_shape())) };
            draw(st, shape, DType::Double)
        }
        "random.random" | "random.random_sample" | "random.sample" | "random.standard_normal" => {
            let shape = size_shape(cx, &mut st, args.first().or(kw("size")));
            draw(st, shape, DType::Double)
        }
        "random.uniform" | "random.normal" => {
            // (low, high, size) / (loc, scale, size); array parameters broadcast: not modelled
            if args.iter().take(2).chain(kwargs.iter().filter(|(k, _)| &**k != "size").map(|(_, v)| v)).any(|v| !matches!(v, Value::Int(_) | Value::Float(_))) {
                return vec![(st, Value::Unknown)];
            }
            let shape = size_shape(cx, &mut st, args.get(2).or(kw("size")));
            draw(st, shape, DType::Double)
        }
        "random.randint" => {
            let d = match dtype_arg(kw("dtype")) {
                None => Some(DType::Long),
                Some(d) => d,
            };
            let Some(d) = d else { return vec![(st, Value::Unknown)] };
            let shape = size_shape(cx, &mut st, args.get(2).or(kw("size")));
            draw(st, shape, d)
        }
        "random.seed" => vec![(st, Value::None)],
        "random.default_rng" => {
            let v = Value::Ref(st.alloc(Obj::Namespace { kind: Rc::from(GENERATOR), attrs: BTreeMap::new() }));
            vec![(st, v)]
        }
        "random.RandomState" => {
            let v = Value::Ref(st.alloc(Obj::Namespace { kind: Rc::from(RANDOM_STATE), attrs: BTreeMap::new() }));
            vec![(st, v)]
        }
        "zeros" | "ones" | "empty" | "full" => {
            let Some(size) = args.first().or(kw("shape")) else { return vec![(st, Value::Unknown)] };
            let shape = size_shape(cx, &mut st, Some(size)).unwrap_or_else(|| cx.any_shape());
            let fill = if f == "full" { args.get(1).or(kw("fill_value")) } else { None };
            let dtype = match dtype_arg(args.get(if f == "full" { 2 } else { 1 }).or(kw("dtype"))) {
                Some(d) => d,
                None => match fill {
                    None if f == "full" => None,
                    None => Some(DType::Double),
                    Some(Value::Float(_)) => Some(DType::Double),
                    Some(Value::Bool(_)) => Some(DType::Bool),
                    Some(Value::Int(p)) if p.as_const().is_some() => Some(DType::Long),
                    Some(_) => None,
                },
            };
            let v = new_array(&mut st, shape, dtype);
            vec![(st, v)]
        }
        "zeros_like" | "ones_like" | "empty_like" | "full_like" => {
            let Some(a) = args.first().and_then(|a| array_of(&st, a)) else { return vec![(st, Value::Unknown)] };
            let dtype = match dtype_arg(kw("dtype")) {
                Some(d) => d,
                None => a.dtype,
            };
            let v = new_array(&mut st, a.shape.clone(), dtype);
            vec![(st, v)]
        }
        "array" | "asarray" => {
            let Some(obj) = args.first().or(kw("object")).or(kw("a")) else { return vec![(st, Value::Unknown)] };
            array(cx, st, obj, dtype_arg(args.get(1).or(kw("dtype"))), span)
        }
        "arange" => {
            let float = args.iter().chain(kwargs.iter().filter(|(k, _)| &**k != "dtype").map(|(_, v)| v)).any(|v| matches!(v, Value::Float(_)));
            if !args.iter().all(|a| matches!(a, Value::Int(_) | Value::Float(_))) || kwargs.iter().any(|(k, _)| &**k != "dtype") {
                return vec![(st, Value::Unknown)];
            }
            let dtype = match dtype_arg(kw("dtype")) {
                Some(d) => d,
                None => Some(if float { DType::Double } else { DType::Long }),
            };
            let n = if float { None } else { arange_len(&args) };
            let dim = n.map(Dim::konst).unwrap_or_else(Dim::unknown);
            let v = new_array(&mut st, Shape::known(vec![dim]), dtype);
            vec![(st, v)]
        }
        "linspace" => {
            let num = args.get(2).or(kw("num")).cloned().unwrap_or(Value::int(50));
            // (`retstep=True` gives a tuple; a dtype positionally is rare: not modelled)
            if args.len() > 4 || kwargs.iter().any(|(k, _)| !matches!(&**k, "num" | "endpoint" | "dtype")) {
                return vec![(st, Value::Unknown)];
            }
            let dtype = match dtype_arg(kw("dtype")) {
                Some(d) => d,
                None => Some(DType::Double),
            };
            let dim = dim_of(&num).unwrap_or_else(Dim::unknown);
            let v = new_array(&mut st, Shape::known(vec![dim]), dtype);
            vec![(st, v)]
        }
        "stack" | "concatenate" | "vstack" | "hstack" => join(cx, st, f, &args, &kwargs, span),
        "loadtxt" | "genfromtxt" => {
            // numbers read from a text file: float64 unless a dtype is given; how many rows
            // and columns (1-D or 2-D) the file decides
            // (`dtype=np.float32` is the dtype of every number read; `dtype=None` lets
            // genfromtxt choose per column, a structured dtype makes records: not modelled)
            if args.len() > 1 || kwargs.iter().any(|(k, _)| matches!(&**k, "converters" | "unpack" | "names" | "usecols" | "ndmin" | "max_rows")) {
                return vec![(st, Value::Unknown)];
            }
            let dtype = match kwargs.iter().find(|(k, _)| &**k == "dtype") {
                None => Some(DType::Double),
                Some((_, v)) => match dtype_arg(Some(v)) {
                    Some(Some(d)) if d != DType::Other => Some(d),
                    _ => return vec![(st, Value::Unknown)],
                },
            };
            let shape = cx.any_shape();
            let v = new_array(&mut st, shape, dtype);
            vec![(st, v)]
        }
        "where" if kwargs.is_empty() => where_(cx, st, &args),
        "clip" => {
            // `np.clip(a, lo, hi)` with number bounds: a's shape; a floating array keeps its
            // dtype (Python numbers are weak), an integer one with float bounds does not
            let Some(a) = args.first().and_then(|a| array_of(&st, a)) else { return vec![(st, Value::Unknown)] };
            let bounds: Vec<&Value> = args.iter().skip(1).chain(kwargs.iter().filter(|(k, _)| matches!(&**k, "a_min" | "a_max" | "min" | "max")).map(|(_, v)| v)).collect();
            if args.len() > 3 || bounds.len() != 2 || kwargs.iter().any(|(k, _)| !matches!(&**k, "a_min" | "a_max" | "min" | "max")) || !bounds.iter().all(|v| matches!(v, Value::Int(_) | Value::Float(_) | Value::None)) {
                return vec![(st, Value::Unknown)];
            }
            let float_bound = bounds.iter().any(|v| matches!(v, Value::Float(_)));
            let dtype = match a.dtype {
                Some(d) if d.is_floating() => Some(d),
                Some(DType::Long | DType::Int | DType::Byte) if float_bound => Some(DType::Double),
                Some(d @ (DType::Long | DType::Int | DType::Byte)) => Some(d),
                Some(DType::Bool) if !float_bound => Some(DType::Long),
                _ => None,
            };
            let v = new_array(&mut st, a.shape.clone(), dtype);
            vec![(st, v)]
        }
        // of Python numbers: a NumPy float64 scalar, which is a Python float (a subclass)
        _ if args.len() == 1 && kwargs.is_empty() && let Some(v) = scalar_ufunc(f, &args[0]) => vec![(st, v)],
        "power" | "float_power" => {
            // of two Python numbers: a float64 when either is a float (`float_power`: always);
            // of ints, an int64 (not modelled)
            let v = match &args[..] {
                [a, b] if kwargs.is_empty() && is_number(a) && is_number(b) && (f == "float_power" || matches!(a, Value::Float(_)) || matches!(b, Value::Float(_))) => Value::Float(None),
                _ => Value::Unknown,
            };
            vec![(st, v)]
        }
        _ if let Some(kind) = ufunc_kind(f) => {
            // an elementwise function of one array: its shape, and the dtype NumPy gives
            let Some(a) = args.first().and_then(|a| array_of(&st, a)) else { return vec![(st, Value::Unknown)] };
            if args.len() != 1 || !kwargs.is_empty() {
                return vec![(st, Value::Unknown)];
            }
            let dtype = match (kind, a.dtype) {
                (_, Some(d)) if d.is_floating() => Some(d),
                // a transcendental function of integers: float64 (of bytes and bools: float16)
                (Ufunc::Float, Some(DType::Long | DType::Int)) => Some(DType::Double),
                (Ufunc::Float, Some(DType::Byte | DType::Bool)) => Some(DType::Half),
                (Ufunc::Same, Some(d @ (DType::Long | DType::Int | DType::Byte))) if !matches!(f, "floor" | "ceil" | "trunc") => Some(d),
                (Ufunc::Same, Some(DType::Bool)) if matches!(f, "abs" | "absolute") => Some(DType::Bool),
                // (`np.negative` of bools raises; `np.square` of them is int8; rounding of
                // integers gave float64 before NumPy 2.x keeps their dtype)
                _ => None,
            };
            let v = new_array(&mut st, a.shape.clone(), dtype);
            vec![(st, v)]
        }
        "eye" => {
            let Some(n) = args.first().and_then(dim_of) else { return vec![(st, Value::Unknown)] };
            let m = args.get(1).or(kw("M")).filter(|v| !matches!(v, Value::None)).map(|v| dim_of(v).unwrap_or_else(Dim::unknown)).unwrap_or_else(|| n.clone());
            let dtype = match dtype_arg(kw("dtype")) {
                Some(d) => d,
                None => Some(DType::Double),
            };
            let v = new_array(&mut st, Shape::known(vec![n, m]), dtype);
            vec![(st, v)]
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// `np.stack`/`np.concatenate`/`np.vstack`/`np.hstack` of a known sequence of arrays: as
/// torch joins tensors (the same shape rules, and both raise where they fail), of the arrays'
/// dtype when they share one. An empty 1-D array, which torch's cat skips and NumPy does not,
/// is not modelled.
fn join(cx: &mut dyn ModelCtx, mut st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let seq = args.first().or_else(|| kwargs.iter().find(|(k, _)| matches!(&**k, "arrays" | "tup")).map(|(_, v)| v));
    let axis = args.get(1).or_else(|| kwargs.iter().find(|(k, _)| &**k == "axis").map(|(_, v)| v));
    let extra = kwargs.iter().any(|(k, _)| !matches!(&**k, "arrays" | "tup" | "axis"));
    let Some(seq) = seq else { return vec![(st, Value::Unknown)] };
    if extra || args.len() > 2 || (matches!(f, "vstack" | "hstack") && axis.is_some()) {
        return vec![(st, Value::Unknown)];
    }
    let axis = match axis {
        None => Value::int(0),
        Some(v @ Value::Int(_)) => v.clone(),
        Some(_) => return vec![(st, Value::Unknown)],
    };
    let Some(items) = cx.iterate(&mut st, seq, span) else { return vec![(st, Value::Unknown)] };
    let mut tensors = Vec::new();
    for it in &items {
        let Some(a) = array_of(&st, it) else { return vec![(st, Value::Unknown)] };
        let s = st.resolve(&a.shape);
        if s.rank() == Some(1) && s.dims[0].as_const() == Some(0) {
            return vec![(st, Value::Unknown)];
        }
        tensors.push(a);
    }
    let dtype = match tensors.first() {
        Some(t0) if tensors.iter().all(|t| t.dtype == t0.dtype) => t0.dtype,
        _ => None,
    };
    let seq = Value::Tuple(Rc::new(tensors.iter().map(|t| Value::Tensor(t.clone())).collect()));
    let (name, kw): (&str, Vec<(Name, Value)>) = match f {
        "stack" => ("stack", vec![(Name::from("dim"), axis)]),
        "concatenate" => ("cat", vec![(Name::from("dim"), axis)]),
        other => (other, Vec::new()),
    };
    let out = match crate::models::torch::join::function(cx, st, name, &[seq], &kw, span) {
        Ok(out) => out,
        Err(st) => return vec![(st, Value::Unknown)],
    };
    out.into_iter()
        .map(|(mut st, v)| match v {
            Value::Tensor(t) => {
                let v = new_array(&mut st, t.shape.clone(), dtype);
                (st, v)
            }
            _ => (st, Value::Unknown),
        })
        .collect()
}

/// A method of an array (`a.astype(np.float32)`, `a.copy()`) or of a generator
/// (`rng.normal(size=(n, d))`).
pub fn method(cx: &mut dyn ModelCtx, st: State, id: ObjId, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    // a legacy `RandomState`'s draws are `np.random`'s (seeded by the object)
    if matches!(st.get(id), Obj::Namespace { kind, .. } if &**kind == RANDOM_STATE) {
        if !LEGACY_DRAWS.contains(&name) {
            return vec![(st, Value::Unknown)];
        }
        return call(cx, st, &format!("numpy.random.{name}"), args, kwargs, Span::default());
    }
    let kw = |k: &str| kwargs.iter().find(|(n, _)| &**n == k).map(|(_, v)| v);
    let recv = Value::Ref(id);
    if let Some(a) = array_of(&st, &recv) {
        return match name {
            "astype" => match dtype_arg(args.first().or(kw("dtype"))) {
                Some(d) => {
                    let v = new_array(&mut st, a.shape.clone(), d);
                    vec![(st, v)]
                }
                None => vec![(st, Value::Unknown)],
            },
            "copy" => {
                let v = new_array(&mut st, a.shape.clone(), a.dtype);
                vec![(st, v)]
            }
            "sum" | "mean" | "max" | "min" | "std" | "var" => reduce(cx, st, &a, name, &args, &kwargs),
            "reshape" | "flatten" | "ravel" | "transpose" => relayout(cx, st, &a, name, args, kwargs, span),
            _ => vec![(st, Value::Unknown)],
        };
    }
    match name {
        "random" | "standard_normal" => {
            if kw("out").is_some() || args.len() > 2 {
                return vec![(st, Value::Unknown)];
            }
            // `rng.random(size, dtype=np.float32)`: float64 unless the dtype says otherwise
            let shape = size_shape(cx, &mut st, args.first().or(kw("size")));
            match dtype_arg(args.get(1).or(kw("dtype"))) {
                None => draw(st, shape, DType::Double),
                Some(Some(d)) => draw(st, shape, d),
                Some(None) => match shape {
                    Some(s) => {
                        let v = new_array(&mut st, s, None);
                        vec![(st, v)]
                    }
                    None => vec![(st, Value::Unknown)],
                },
            }
        }
        "normal" | "uniform" => {
            if args.iter().take(2).chain(kwargs.iter().filter(|(k, _)| &**k != "size").map(|(_, v)| v)).any(|v| !matches!(v, Value::Int(_) | Value::Float(_))) {
                return vec![(st, Value::Unknown)];
            }
            let shape = size_shape(cx, &mut st, args.get(2).or(kw("size")));
            draw(st, shape, DType::Double)
        }
        "integers" => {
            let dtype = match dtype_arg(args.get(3).or(kw("dtype"))) {
                None => DType::Long,
                Some(Some(d @ (DType::Long | DType::Int | DType::Byte))) => d,
                Some(_) => return vec![(st, Value::Unknown)],
            };
            let shape = size_shape(cx, &mut st, args.get(2).or(kw("size")));
            draw(st, shape, dtype)
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// `a[index]` of an array: an array of its dtype when the result is certainly one (a slice or
/// a new axis among the index, an integer index of an array of rank 2 or more); Unknown
/// otherwise (a scalar, an index not known).
pub fn index(cx: &mut dyn ModelCtx, st: State, a: &Tensor, i: &Value, span: Span) -> Vals {
    let mut st = st;
    use crate::models::torch::indexing::{is_basic_item as basic, is_slice};
    let items: Vec<Value> = match i {
        Value::Tuple(items) if !is_slice(i) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    // one integer array (`x[ids]`, a minibatch of rows): rows of the index's shape, of the
    // array's dtype (indices out of range raise: not judged)
    if let [ix] = &items[..]
        && let Some(ids) = array_of(&st, ix)
        && matches!(ids.dtype, Some(DType::Long | DType::Int))
    {
        let (is, s) = (st.resolve(&ids.shape), st.resolve(&a.shape));
        let mut st = st;
        if is.prefix.is_some() || s.rank().is_none_or(|r| r == 0) {
            let shape = cx.any_shape();
            let v = new_array(&mut st, shape, a.dtype);
            return vec![(st, v)];
        }
        let mut dims = is.dims.clone();
        dims.extend(s.dims[1..].iter().cloned());
        let v = new_array(&mut st, Shape::known(dims), a.dtype);
        return vec![(st, v)];
    }
    // a basic index of ints, slices, new axes and `...` with something more than one int or
    // one slice: as torch indexes (the same rules; an index out of range raises in both)
    if (items.len() > 1 || items.first().is_some_and(is_slice)) && items.iter().all(basic) && items.iter().any(|v| !matches!(v, Value::Int(_))) {
        let out = crate::models::torch::tensor_index(cx, st.clone(), Value::Tensor(Rc::new(a.clone())), i.clone(), span);
        if let [(st2, Value::Tensor(t))] = &out[..]
            && st2.resolve(&t.shape).rank().is_none_or(|r| r > 0)
        {
            let mut st2 = st2.clone();
            let v = new_array(&mut st2, t.shape.clone(), a.dtype);
            return vec![(st2, v)];
        }
        // (a slice or a new axis keeps an array of its dtype, whatever its shape)
        if out.len() == 1 && items.iter().any(|v| is_slice(v) || matches!(v, Value::None)) {
            let mut st = st;
            let shape = cx.any_shape();
            let v = new_array(&mut st, shape, a.dtype);
            return vec![(st, v)];
        }
        return vec![(st, Value::Unknown)];
    }
    let keeps_array = items.iter().any(|v| is_slice(v) || matches!(v, Value::None));
    let ints = items.iter().filter(|v| matches!(v, Value::Int(_))).count();
    let rank = st.resolve(&a.shape).rank();
    // every dim indexed by an int: a NumPy scalar of the array's dtype (a 0-d array here: NumPy
    // 2 promotes both alike)
    if ints == items.len() && rank == Some(ints) {
        let mut st = st;
        let v = new_array(&mut st, Shape::known(Vec::new()), a.dtype);
        return vec![(st, v)];
    }
    let array = keeps_array && items.iter().all(|v| is_slice(v) || matches!(v, Value::None | Value::Int(_))) || (ints == items.len() && rank.is_some_and(|r| r > ints));
    // an index with a list or an array among its items (`xy[:, [-1]]`, `a[mask]`) is advanced
    // indexing: an array of the array's dtype, of a shape not followed here
    let listed = |v: &Value| matches!(v, Value::Ref(id) if matches!(st.get(*id), Obj::List(_))) || array_of(&st, v).is_some_and(|ix| matches!(ix.dtype, Some(DType::Long | DType::Int | DType::Bool)));
    if !array && items.iter().any(listed) && items.iter().all(|v| listed(v) || is_slice(v) || matches!(v, Value::None | Value::Int(_))) {
        let mut st = st;
        let shape = cx.any_shape();
        let v = new_array(&mut st, shape, a.dtype);
        return vec![(st, v)];
    }
    if !array {
        return vec![(st, Value::Unknown)];
    }
    // one int or one slice on an array of known rank: the rows' shape, or fewer rows
    let s = st.resolve(&a.shape);
    let shape = match (&items[..], s.rank()) {
        ([Value::Int(_)], Some(r)) if r >= 2 => Shape::known(s.dims[1..].to_vec()),
        ([v], Some(r)) if r >= 1 && is_slice(v) => Shape::known(std::iter::once(Dim::unknown()).chain(s.dims[1..].iter().cloned()).collect()),
        _ => cx.any_shape(),
    };
    let v = new_array(&mut st, shape, a.dtype);
    vec![(st, v)]
}

/// An operand of NumPy arithmetic: an array's dtype, or a Python scalar (which NumPy 2
/// promotes weakly: it decides only the kind).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Operand {
    Array(Option<DType>),
    Int,
    Float,
    Bool,
}

fn operand(st: &State, v: &Value) -> Option<(Operand, Option<Shape>)> {
    Some(match v {
        Value::Int(_) => (Operand::Int, None),
        Value::Float(_) => (Operand::Float, None),
        Value::Bool(_) => (Operand::Bool, None),
        _ => {
            let a = array_of(st, v)?;
            (Operand::Array(known_np(a.dtype)), Some(st.resolve(&a.shape)))
        }
    })
}

/// A dtype the promotion below tells apart.
fn known_np(d: Option<DType>) -> Option<DType> {
    d.filter(|d| !matches!(d, DType::Other | DType::BFloat16))
}

/// The kind of a dtype: bool, integer, floating.
fn level(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        DType::Byte | DType::Int | DType::Long => 1,
        _ => 2,
    }
}

/// NumPy's result dtype of two arrays (`np.result_type`, checked with NumPy 2.4).
fn promote_arrays(x: DType, y: DType) -> DType {
    use DType::*;
    if x == y {
        return x;
    }
    let (lo, hi) = if level(x) <= level(y) { (x, y) } else { (y, x) };
    match (level(lo), level(hi)) {
        // two floats: the wider
        (2, 2) => [Double, Float, Half].into_iter().find(|d| *d == x || *d == y).unwrap_or(Double),
        // a float and an integer: a float wide enough for the integer
        (_, 2) => match (hi, lo) {
            (Double, _) => Double,
            (Float | Half, Bool | Byte) => hi,
            _ => Double,
        },
        // two integers (or bool): the wider integer
        _ => [Long, Int, Byte, Bool].into_iter().find(|d| *d == x || *d == y).unwrap_or(Long),
    }
}

/// NumPy's result dtype of an arithmetic op; `true_div` makes integers float64.
fn promote(a: Operand, b: Operand, true_div: bool) -> Option<DType> {
    use Operand::*;
    let d = match (a, b) {
        (Array(Some(x)), Array(Some(y))) => promote_arrays(x, y),
        (Array(Some(x)), s) | (s, Array(Some(x))) => match s {
            Int if x == DType::Bool => DType::Long,
            Float if level(x) < 2 => DType::Double,
            Array(None) => return None,
            _ => x,
        },
        _ => return None,
    };
    Some(if true_div && level(d) < 2 { DType::Double } else { d })
}

/// The shape of an elementwise result: the array's when the other operand is a scalar or an
/// array of the same known shape; not known otherwise (NumPy's broadcasting is not checked).
fn elementwise_shape(cx: &mut dyn ModelCtx, sa: Option<Shape>, sb: Option<Shape>) -> Shape {
    match (sa, sb) {
        (Some(s), None) | (None, Some(s)) if s.prefix.is_none() => s,
        (Some(x), Some(y)) if x.prefix.is_none() && y.prefix.is_none() => {
            // broadcasting, aligned from the right: equal dims, or a 1 that stretches (dims
            // that may differ, or that NumPy refuses, leave the shape unknown: never reported)
            let n = x.dims.len().max(y.dims.len());
            let one = Dim::konst(1);
            let at = |s: &Shape, i: usize| if i + s.dims.len() >= n { s.dims[i + s.dims.len() - n].clone() } else { one.clone() };
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let (p, q) = (at(&x, i), at(&y, i));
                let d = match (p.as_const(), q.as_const()) {
                    (Some(1), _) => q,
                    (_, Some(1)) => p,
                    _ if p.v.is_some() && p.v == q.v => p,
                    _ => return cx.any_shape(),
                };
                out.push(d);
            }
            Shape::known(out)
        }
        _ => cx.any_shape(),
    }
}

/// `a <op> b` where one side is a NumPy array and neither a torch tensor: an array of NumPy's
/// promoted dtype (`@` of known 1-D/2-D shapes too).
/// Call only when [`involves_array`].
pub fn binop(cx: &mut dyn ModelCtx, st: State, op: crate::ir::BinOp, a: &Value, b: &Value) -> Vals {
    use crate::ir::BinOp;
    let mut st = st;
    let (Some((oa, sa)), Some((ob, sb))) = (operand(&st, a), operand(&st, b)) else { return vec![(st, Value::Unknown)] };
    let (dtype, shape) = match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Mod | BinOp::FloorDiv | BinOp::Pow | BinOp::Div => {
            // bool arrays: `-` raises, `+`/`*` are logical; not modelled beyond the dtype rules
            (promote(oa, ob, op == BinOp::Div), elementwise_shape(cx, sa, sb))
        }
        BinOp::MatMul => {
            let (Some(x), Some(y)) = (sa, sb) else { return vec![(st, Value::Unknown)] };
            let shape = match (x.rank(), y.rank()) {
                (Some(2), Some(1)) => Shape::known(vec![x.dims[0].clone()]),
                (Some(2), Some(2)) => Shape::known(vec![x.dims[0].clone(), y.dims[1].clone()]),
                (Some(1), Some(2)) => Shape::known(vec![y.dims[1].clone()]),
                _ => return vec![(st, Value::Unknown)],
            };
            (promote(oa, ob, false), shape)
        }
        _ => return vec![(st, Value::Unknown)],
    };
    let v = new_array(&mut st, shape, dtype);
    vec![(st, v)]
}

/// An elementwise comparison with a NumPy array (`a > 0.5`): a bool array. Call only when
/// [`involves_array`].
pub fn compare(cx: &mut dyn ModelCtx, st: State, a: &Value, b: &Value) -> Vals {
    let mut st = st;
    let (Some((_, sa)), Some((_, sb))) = (operand(&st, a), operand(&st, b)) else { return vec![(st, Value::Unknown)] };
    let shape = elementwise_shape(cx, sa, sb);
    let v = new_array(&mut st, shape, Some(DType::Bool));
    vec![(st, v)]
}

/// `a.reshape(...)`, `a.flatten()`, `a.ravel()`, `a.transpose(...)`: the array of torch's
/// `reshape`, `flatten()` and `permute` of the same dims (NumPy's rules for these are torch's:
/// `-1` inferred, the element count kept, or the call raises there), of the array's dtype. An
/// `order=`, or any other keyword, is Unknown.
fn relayout(cx: &mut dyn ModelCtx, st: State, a: &Rc<Tensor>, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    if !kwargs.is_empty() {
        return vec![(st, Value::Unknown)];
    }
    let rank = st.resolve(&a.shape).rank();
    let (method, args) = match name {
        "reshape" => ("reshape", args),
        "flatten" | "ravel" if args.is_empty() => ("flatten", Vec::new()),
        // no axes: reversed; axes one by one or as one tuple
        "transpose" => match (&args[..], rank) {
            ([], Some(r)) => ("permute", (0..r).rev().map(|k| Value::int(k as i128)).collect()),
            ([Value::Tuple(axes)], _) => ("permute", axes.as_ref().clone()),
            (axes, _) if !axes.is_empty() && axes.iter().all(|v| v.as_const_int().is_some()) => ("permute", axes.to_vec()),
            _ => return vec![(st, Value::Unknown)],
        },
        _ => return vec![(st, Value::Unknown)],
    };
    let dtype = a.dtype;
    crate::models::call_method(cx, st, Value::Tensor(a.clone()), method, args, Vec::new(), span)
        .into_iter()
        .map(|(mut st, v)| match v {
            Value::Tensor(t) => {
                let v = new_array(&mut st, t.shape.clone(), dtype);
                (st, v)
            }
            _ => (st, Value::Unknown),
        })
        .collect()
}

/// `np.where(condition, x, y)`: the broadcast shape of the three, of the dtype NumPy gives `x`
/// and `y` together (two Python floats: float64; two ints: int64). With one argument (the
/// indices where it holds) or a shape that does not broadcast: Unknown.
fn where_(cx: &mut dyn ModelCtx, st: State, args: &[Value]) -> Vals {
    let mut st = st;
    let [c, x, y] = args else { return vec![(st, Value::Unknown)] };
    let (Some((_, sc)), Some((ox, sx)), Some((oy, sy))) = (operand(&st, c), operand(&st, x), operand(&st, y)) else { return vec![(st, Value::Unknown)] };
    let dtype = match (ox, oy) {
        (Operand::Float, Operand::Float | Operand::Int) | (Operand::Int, Operand::Float) => Some(DType::Double),
        (Operand::Int, Operand::Int) => Some(DType::Long),
        (Operand::Bool, Operand::Bool) => Some(DType::Bool),
        (a, b) => promote(a, b, false),
    };
    // (the arrays among the three broadcast; Python numbers add no dim)
    let xy = if sx.is_none() && sy.is_none() { None } else { Some(elementwise_shape(cx, sx, sy)) };
    let shape = match (sc, xy) {
        (None, None) => return vec![(st, Value::Unknown)],
        (sc, xy) => elementwise_shape(cx, sc, xy),
    };
    let v = new_array(&mut st, shape, dtype);
    vec![(st, v)]
}

/// `a.sum(axis=k)`, `mean`, `max`, `min`, `std`, `var` over one known axis (or the whole array:
/// a NumPy scalar, Unknown): the dtype NumPy gives.
fn reduce(cx: &mut dyn ModelCtx, st: State, a: &Tensor, name: &str, args: &[Value], kwargs: &[(Name, Value)]) -> Vals {
    let mut st = st;
    if kwargs.iter().any(|(k, _)| &**k != "axis") || args.len() > 1 {
        return vec![(st, Value::Unknown)];
    }
    let axis = match args.first().or(kwargs.first().map(|(_, v)| v)) {
        // over every element: a NumPy scalar (a 0-d array here)
        None | Some(Value::None) => None,
        Some(v) => match v.as_const_int() {
            Some(k) => Some(k),
            None => return vec![(st, Value::Unknown)],
        },
    };
    let dtype = known_np(a.dtype).and_then(|d| match name {
        "sum" if d == DType::Byte => None, // uint64
        "sum" if level(d) < 2 => Some(DType::Long),
        "mean" | "std" | "var" if level(d) < 2 => Some(DType::Double),
        _ => Some(d),
    });
    let s = st.resolve(&a.shape);
    let Some(axis) = axis else {
        let v = new_array(&mut st, Shape::known(Vec::new()), dtype);
        return vec![(st, v)];
    };
    let shape = match s.rank() {
        Some(r) if r >= 1 => match super::torch::tensor::norm_dim(axis, r).filter(|k| *k < r) {
            Some(k) => Shape::known(s.dims.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, d)| d.clone()).collect()),
            None => return vec![(st, Value::Unknown)],
        },
        _ => cx.any_shape(),
    };
    let v = new_array(&mut st, shape, dtype);
    vec![(st, v)]
}
