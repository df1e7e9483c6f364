//! Tensor creation, shape ops, elementwise broadcasting, matrix products and indexing.

use std::rc::Rc;

use crate::models::bind;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::value::*;
use crate::ir::{BinOp, Name, Span};
use crate::rules::shape as r;
use crate::shape::{Formula, Poly, Tri};

pub fn tensor_value(shape: Shape, dtype: Option<DType>) -> Value {
    Value::Tensor(Rc::new(Tensor { shape, dtype }))
}

fn dim_of(v: &Value) -> Option<Dim> {
    match v {
        Value::Int(p) => Some(Dim::known(p.clone(), None)),
        Value::Bool(b) => Some(Dim::konst(*b as i128)),
        _ => None,
    }
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

fn arg_dtype(kwargs: &[(Name, Value)]) -> Option<Option<DType>> {
    kwargs.iter().find(|(k, _)| &**k == "dtype").map(|(_, v)| dtype_of(v))
}

pub fn dtype_of(v: &Value) -> Option<DType> {
    v.as_dtype()
}

fn tensor_of(v: &Value) -> Option<&Rc<Tensor>> {
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
    let shown = cx.show_shape(st, s);
    if !cx.check(st, span, violated, &r::dim_out_of_range::RULE, |_| {
        let lo = -(rank.max(1) as i128);
        let hi = rank.max(1) as i128 - 1;
        (format!("{what}: dim {d} is out of range for a {rank}-D tensor {shown} (expected a dim in [{lo}, {hi}])"), Vec::new())
    }) {
        return Some(usize::MAX);
    }
    ok
}

pub fn torch_function(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    let dt = arg_dtype(&kwargs);
    if super::pointwise::handles(f) && args.iter().take(2).any(|a| matches!(a, Value::Tensor(_))) {
        return super::pointwise::call(cx, st, f, &args, &kwargs, span, false);
    }
    match f {
        "zeros" | "ones" | "empty" | "rand" | "randn" => {
            let size_kw = kwargs.iter().find(|(k, _)| &**k == "size").map(|(_, v)| vec![v.clone()]);
            let a = size_kw.unwrap_or(args);
            let Some(dims) = sizes(cx, &mut st, &a) else { return vec![(st, Value::Unknown)] };
            let dtype = dt.unwrap_or(Some(DType::Float));
            return vec![(st, tensor_value(Shape::known(dims), dtype))];
        }
        "full" => {
            let Some(dims) = args.first().and_then(|a| sizes(cx, &mut st, std::slice::from_ref(a))) else { return vec![(st, Value::Unknown)] };
            let dtype = dt.unwrap_or(match args.get(1) {
                Some(Value::Int(_)) => Some(DType::Long),
                Some(Value::Bool(_)) => Some(DType::Bool),
                Some(Value::Float(_)) => Some(DType::Float),
                _ => None,
            });
            return vec![(st, tensor_value(Shape::known(dims), dtype))];
        }
        "randint" => {
            let b = bind(&["low", "high", "size"], &args, &kwargs);
            let size = match (b.get("size"), args.len()) {
                (Some(s), _) => Some(s.clone()),
                (None, 2) => args.get(1).cloned(),
                _ => None,
            };
            let Some(dims) = size.and_then(|s| sizes(cx, &mut st, std::slice::from_ref(&s))) else { return vec![(st, Value::Unknown)] };
            return vec![(st, tensor_value(Shape::known(dims), dt.unwrap_or(Some(DType::Long))))];
        }
        "zeros_like" | "ones_like" | "rand_like" | "randn_like" | "empty_like" | "full_like" | "randint_like" => {
            return match args.first().and_then(tensor_of) {
                Some(t) => {
                    let dtype = dt.unwrap_or(t.dtype);
                    vec![(st, tensor_value(t.shape.clone(), dtype))]
                }
                None => vec![(st, Value::Unknown)],
            };
        }
        "linspace" | "logspace" => {
            let b = bind(&["start", "end", "steps"], &args, &kwargs);
            let Some(n) = b.get("steps").and_then(dim_of) else { return vec![(st, Value::Unknown)] };
            let bad = n.as_const().map(|c| c < 0).map(Tri::from_bool).unwrap_or(Tri::Unknown);
            if !cx.check(&st, span, bad, &r::invalid_shape_argument::RULE, |_| (format!("torch.{f}: the number of steps must be non-negative"), Vec::new())) {
                return Vec::new();
            }
            return vec![(st, tensor_value(Shape::known(vec![n]), dt.unwrap_or(Some(DType::Float))))];
        }
        "arange" => {
            let ints: Vec<Option<i128>> = args.iter().map(|a| a.as_const_int()).collect();
            let n = match ints.as_slice() {
                [Some(n)] => Some(*n),
                [Some(a), Some(b)] => Some(b - a),
                [Some(a), Some(b), Some(s)] if *s > 0 => Some((b - a + s - 1).div_euclid(*s)),
                _ => None,
            };
            let is_float = args.iter().any(|a| matches!(a, Value::Float(_)));
            if !cx.check(&st, span, Tri::from_bool(n.is_some_and(|n| n < 0)), &r::invalid_shape_argument::RULE, |_| {
                ("torch.arange: the end is before the start for a positive step (the range would have a negative length)".to_string(), Vec::new())
            }) {
                return Vec::new();
            }
            let dim = match (n, args.as_slice()) {
                (Some(n), _) => Dim::konst(n.max(0)),
                (None, [Value::Int(p)]) => Dim::known(p.clone(), None),
                _ => Dim::unknown(),
            };
            let dtype = dt.unwrap_or(if is_float { Some(DType::Float) } else { Some(DType::Long) });
            return vec![(st, tensor_value(Shape::known(vec![dim]), dtype))];
        }
        "einsum" => return einsum(cx, st, &args, span),
        "tensor" | "as_tensor" => return super::shape_ops::tensor_literal(cx, st, &args, &kwargs, span),
        "randperm" => {
            let Some(n) = args.first().and_then(dim_of) else { return vec![(st, Value::Unknown)] };
            return vec![(st, tensor_value(Shape::known(vec![n]), dt.unwrap_or(Some(DType::Long))))];
        }
        "eye" => {
            let n = args.first().and_then(dim_of);
            let m = args.get(1).and_then(dim_of).or_else(|| n.clone());
            return match (n, m) {
                (Some(n), Some(m)) => vec![(st, tensor_value(Shape::known(vec![n, m]), dt.unwrap_or(Some(DType::Float))))],
                _ => vec![(st, Value::Unknown)],
            };
        }
        "manual_seed" | "set_grad_enabled" | "set_num_threads" | "save" | "set_default_dtype" | "set_printoptions" => return vec![(st, Value::None)],
        "cat" | "concat" | "concatenate" | "stack" => return cat_stack(cx, st, f == "stack", args, kwargs, span),
        "hstack" | "vstack" | "row_stack" => {
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
            return cat_stack(cx, st, false, vec![list, Value::int(d)], Vec::new(), span);
        }
        "where" if args.len() == 3 => {
            // torch.where(cond, a, b): the three broadcast together
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
            return vec![(st, tensor_value(all, dtype))];
        }
        "matmul" => {
            if let [a, b, ..] = args.as_slice() {
                return matmul(cx, st, f, a.clone(), b.clone(), span);
            }
            return vec![(st, Value::Unknown)];
        }
        "no_grad" | "enable_grad" | "inference_mode" | "device" | "Size" => return vec![(st, Value::Unknown)],
        "is_tensor" => return vec![(st, Value::Bool(args.first().map(|a| matches!(a, Value::Tensor(_))).unwrap_or(false)))],
        _ => {}
    }
    // `torch.f(x, ...)` is `x.f(...)` for the tensor methods
    if let Some(first @ Value::Tensor(_)) = args.first().cloned() {
        return tensor_method(cx, st, first, f, args[1..].to_vec(), kwargs, span);
    }
    vec![(st, Value::Unknown)]
}

fn cat_stack(cx: &mut dyn ModelCtx, st: State, stack: bool, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    let b = bind(&["tensors", "dim"], &args, &kwargs);
    let d = match b.get("dim") {
        Some(v) => match v.as_const_int() {
            Some(d) => d,
            None => return vec![(st, Value::Unknown)],
        },
        None => 0,
    };
    let Some(items) = b.get("tensors").and_then(|v| cx.iterate(&mut st, v, span)) else { return vec![(st, Value::Unknown)] };
    let mut shapes = Vec::new();
    let mut dtype = None;
    for it in &items {
        match it {
            Value::Tensor(t) => {
                let s = st.resolve(&t.shape);
                if s.prefix.is_some() {
                    return vec![(st, Value::Unknown)];
                }
                dtype = t.dtype;
                shapes.push(s);
            }
            _ => return vec![(st, Value::Unknown)],
        }
    }
    if shapes.is_empty() {
        return vec![(st, Value::Unknown)];
    }
    let name = if stack { "torch.stack" } else { "torch.cat" };
    let rank0 = shapes[0].dims.len();
    // ranks must agree
    for (k, s) in shapes.iter().enumerate() {
        if s.dims.len() != rank0 {
            let a = cx.show_shape(&st, &shapes[0]);
            let bsh = cx.show_shape(&st, s);
            let n = s.dims.len();
            cx.check(&st, span, Tri::True, &r::concat_shape_mismatch::RULE, |_| {
                (format!("{name}: tensors must have the same number of dimensions: tensor 0 is {rank0}-D {a}, tensor {k} is {n}-D {bsh}"), Vec::new())
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
            let a = cx.show_shape(&st, &shapes[0]);
            let bsh = cx.show_shape(&st, s);
            if !cx.check(&st, span, cx.dim_eq_f(x, y).not(), &r::concat_shape_mismatch::RULE, |_| {
                let what = if stack { "stack expects each tensor to be equal size" } else { "sizes of tensors must match except in the concatenated dimension" };
                (format!("{name}: {what}: tensor 0 is {a}, tensor {k} is {bsh} (dim {j})"), Vec::new())
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
        out[di] = Dim { v: total, why: None };
    }
    vec![(st, tensor_value(Shape::known(out), dtype))]
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
                // torch raises when the sizes differ and neither is 1
                let violated = Formula::And(vec![cx.dim_eq_f(x, y).not(), cx.dim_eq_f(x, &one).not(), cx.dim_eq_f(y, &one).not()]);
                let (sa, sb) = (cx.show_shape(st, &a), cx.show_shape(st, &b));
                let (dx, dy) = (cx.show_dim(x), cx.show_dim(y));
                let pos = -(i as i64) - 1;
                if !cx.check(st, span, violated, &r::broadcast_shape_mismatch::RULE, |_| {
                    (format!("{what}: shapes {sa} and {sb} cannot be broadcast: {dx} vs {dy} at dim {pos}"), Vec::new())
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
    let prefix = if a.prefix.is_some() && b.prefix.is_some() && a.prefix != b.prefix { Some(u32::MAX) } else { prefix };
    Some(Shape { prefix: prefix.map(|p| if p == u32::MAX { interp_fresh(cx) } else { p }), dims: out })
}

fn interp_fresh(cx: &mut dyn ModelCtx) -> u32 {
    cx.fresh_shape_var()
}

pub fn binop(cx: &mut dyn ModelCtx, st: State, op: BinOp, a: Value, b: Value, span: Span, inplace: bool) -> Vals {
    if op == BinOp::MatMul {
        return matmul(cx, st, "matmul", a, b, span);
    }
    super::pointwise::operator(cx, st, op, a, b, span, inplace)
}

/// `torch.einsum(equation, *operands)` without `...`: each subscript letter names one size
/// across operands (sizes must agree, or be 1 and broadcast); the output keeps the letters
/// after `->`, or the letters seen once, sorted.
fn einsum(cx: &mut dyn ModelCtx, st: State, args: &[Value], span: Span) -> Vals {
    let mut st = st;
    let Some(eq) = args.first().and_then(|v| v.as_str()).map(|s| s.replace(' ', "")) else { return vec![(st, Value::Unknown)] };
    let ops: Vec<Value> = match &args[1..] {
        [one] if !matches!(one, Value::Tensor(_)) => match cx.iterate(&mut st, one, span) {
            Some(items) => items,
            None => return vec![(st, Value::Unknown)],
        },
        rest => rest.to_vec(),
    };
    if eq.contains("...") || !eq.chars().all(|c| c.is_ascii_alphabetic() || c == ',' || c == '-' || c == '>') {
        return vec![(st, Value::Unknown)];
    }
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != ops.len() {
        return vec![(st, Value::Unknown)];
    }
    let mut sizes: Vec<(char, Dim)> = Vec::new();
    let mut dtype = None;
    for (k, (term, op)) in terms.iter().zip(ops.iter()).enumerate() {
        let Value::Tensor(t) = op else { return vec![(st, Value::Unknown)] };
        dtype = t.dtype;
        let s = st.resolve(&t.shape);
        let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
        let shown = cx.show_shape(&st, &s);
        let n = term.chars().count();
        if !cx.check(&st, span, Tri::from_bool(n != rank), &r::invalid_shape_argument::RULE, |_| {
            (format!("einsum: subscripts '{term}' name {n} dims but operand {k} is {rank}-D {shown}"), Vec::new())
        }) {
            return Vec::new();
        }
        for (c, d) in term.chars().zip(s.dims.iter()) {
            match sizes.iter_mut().find(|(x, _)| *x == c) {
                None => sizes.push((c, d.clone())),
                Some((_, prev)) => {
                    let eqv = cx.dim_eq(&st, prev, d);
                    let p1 = cx.dim_eq(&st, prev, &Dim::konst(1));
                    let d1 = cx.dim_eq(&st, d, &Dim::konst(1));
                    let violated = if eqv == Tri::False && p1 == Tri::False && d1 == Tri::False { Tri::True } else if eqv == Tri::True || d1 == Tri::True { Tri::False } else { Tri::Unknown };
                    let (a, b) = (cx.show_dim(prev), cx.show_dim(d));
                    if !cx.check(&st, span, violated, &r::matmul_shape_mismatch::RULE, |_| {
                        (format!("einsum '{eq}': subscript {c} has size {b} for operand {k} but size {a} before"), Vec::new())
                    }) {
                        return Vec::new();
                    }
                    match (violated, p1) {
                        (Tri::False, Tri::True) => *prev = d.clone(),
                        (Tri::Unknown, _) => *prev = Dim::unknown(),
                        _ => {}
                    }
                }
            }
        }
    }
    let out: String = match rhs {
        Some(r) => r,
        None => {
            let all: String = terms.concat();
            let mut once: Vec<char> = all.chars().filter(|c| all.matches(*c).count() == 1).collect();
            once.sort();
            once.into_iter().collect()
        }
    };
    let mut dims = Vec::new();
    for c in out.chars() {
        match sizes.iter().find(|(x, _)| *x == c) {
            Some((_, d)) => dims.push(d.clone()),
            None => return vec![(st, Value::Unknown)],
        }
    }
    vec![(st, tensor_value(Shape::known(dims), dtype))]
}

/// Elementwise comparison (`x != pad`, `scores > 0`): a bool tensor of the broadcast shape.
pub fn compare(cx: &mut dyn ModelCtx, st: State, a: Value, b: Value, span: Span) -> Vals {
    super::pointwise::comparison(cx, st, a, b, span)
}

/// `torch.matmul` semantics (and `mm`, `bmm` with their rank requirements).
pub fn matmul(cx: &mut dyn ModelCtx, st: State, f: &str, a: Value, b: Value, span: Span) -> Vals {
    let (Some(x), Some(y)) = (tensor_of(&a), tensor_of(&b)) else { return vec![(st, Value::Unknown)] };
    let sa = st.resolve(&x.shape);
    let sb = st.resolve(&y.shape);
    let dtype = if x.dtype == y.dtype { x.dtype } else { None };
    let (na, nb) = (sa.dims.len(), sb.dims.len());
    if na == 0 || nb == 0 {
        return vec![(st, Value::Unknown)];
    }
    // inner dimensions: a's last vs b's second-to-last (or only) dim
    let ka = &sa.dims[na - 1];
    let kb = if sb.prefix.is_none() && nb == 1 { &sb.dims[0] } else if nb >= 2 { &sb.dims[nb - 2] } else { return vec![(st, Value::Unknown)] };
    let eq = cx.dim_eq_f(ka, kb);
    let (shown_a, shown_b) = (cx.show_shape(&st, &sa), cx.show_shape(&st, &sb));
    let (da, db) = (cx.show_dim(ka), cx.show_dim(kb));
    let mut trace = Vec::new();
    if let Some(w) = &ka.why {
        trace.push(format!("{da} came from {w}"));
    }
    if let Some(w) = &kb.why {
        trace.push(format!("{db} came from {w}"));
    }
    let op = if f == "matmul" { "@".to_string() } else { format!("torch.{f}") };
    if !cx.check(&st, span, eq.not(), &r::matmul_shape_mismatch::RULE, |_| {
        (format!("{op}: {shown_a} @ {shown_b}: inner dimensions differ ({da} vs {db})"), trace)
    }) {
        return Vec::new();
    }
    // result shape
    if sa.prefix.is_some() || sb.prefix.is_some() {
        if sb.prefix.is_none() && nb == 2 && na >= 2 {
            let mut dims = sa.dims[..na - 1].to_vec();
            dims.push(sb.dims[1].clone());
            return vec![(st, tensor_value(Shape { prefix: sa.prefix, dims }, dtype))];
        }
        let v = cx.fresh_shape_var();
        return vec![(st, tensor_value(Shape { prefix: Some(v), dims: Vec::new() }, dtype))];
    }
    let dims = match (na, nb) {
        (1, 1) => Vec::new(),
        (2, 1) => vec![sa.dims[0].clone()],
        (1, 2) => vec![sb.dims[1].clone()],
        (2, 2) => vec![sa.dims[0].clone(), sb.dims[1].clone()],
        _ => {
            // batched: broadcast the batch dims
            let ba = if na >= 2 { Shape::known(sa.dims[..na - 2].to_vec()) } else { Shape::known(Vec::new()) };
            let bb = if nb >= 2 { Shape::known(sb.dims[..nb - 2].to_vec()) } else { Shape::known(Vec::new()) };
            let Some(batch) = broadcast(cx, &st, &ba, &bb, span, &op) else { return Vec::new() };
            let mut dims = batch.dims;
            if na >= 2 {
                dims.push(sa.dims[na - 2].clone());
            }
            if nb >= 2 {
                dims.push(sb.dims[nb - 1].clone());
            }
            dims
        }
    };
    vec![(st, tensor_value(Shape::known(dims), dtype))]
}

fn numel(dims: &[Dim]) -> Option<Poly> {
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
        cx.check(&st, span, Tri::True, &r::reshape_size_mismatch::RULE, |_| (format!("{name}: only one dimension can be inferred (-1)"), Vec::new()));
        return Vec::new();
    }
    let total = if s.prefix.is_none() { numel(&s.dims) } else { None };
    let known: Vec<&Dim> = target.iter().filter(|d| d.as_const() != Some(-1)).collect();
    let prod_known = known.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(d.v.as_ref()?));
    let mut out = target.clone();
    if let (Some(total), Some(pk)) = (&total, &prod_known) {
        let shown = cx.show_shape(&st, &s);
        let tshow: Vec<String> = target.iter().map(|d| cx.show_dim(d)).collect();
        let tshow = format!("[{}]", tshow.join(", "));
        if minus.is_empty() {
            let eq = Formula::cmp(total, crate::shape::Rel::Eq, pk);
            let (tt, pp) = (total.display(cx.syms()), pk.display(cx.syms()));
            if !cx.check(&st, span, eq.not(), &r::reshape_size_mismatch::RULE, |_| {
                (format!("{name}: shape {tshow} is invalid for input of shape {shown} ({tt} elements, the new shape has {pp})"), Vec::new())
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
            let (tt, pp) = (total.display(cx.syms()), pk.display(cx.syms()));
            if !cx.check(&st, span, violated, &r::reshape_size_mismatch::RULE, |_| {
                (format!("{name}: shape {tshow} is invalid for input of shape {shown} ({tt} elements are not divisible by {pp})"), Vec::new())
            }) {
                return Vec::new();
            }
            out[minus[0]] = Dim { v: total.floordiv(pk), why: None };
        }
    } else if let Some(&i) = minus.first() {
        out[i] = Dim::unknown();
    }
    vec![(st, tensor_value(Shape::known(out), t.dtype))]
}

pub fn tensor_method(cx: &mut dyn ModelCtx, st: State, recv: Value, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Value::Tensor(t) = &recv else { return vec![(st, Value::Unknown)] };
    let t = t.clone();
    let s = st.resolve(&t.shape);
    let same = |st: State| vec![(st, Value::Tensor(t.clone()))];
    if super::pointwise::handles(name) {
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(recv.clone());
        all.extend(args);
        return super::pointwise::call(cx, st, name, &all, &kwargs, span, true);
    }
    let mut st = match super::shape_ops::method(cx, st, &t, name, &args, &kwargs, span) {
        Ok(v) => return v,
        Err(st) => st,
    };
    match name {
        "view" | "reshape" => {
            if let Some(Value::Str(_)) = args.first() {
                return vec![(st, Value::Unknown)]; // view(dtype)
            }
            reshape(cx, st, &t, &args, span, name)
        }
        // (the pointwise ops, incl. `clone`/`detach`/`contiguous`, are handled by pointwise.rs above)
        "dropout" | "gelu" | "silu" | "softplus" | "requires_grad" => same(st),
        "float" | "double" | "half" | "long" | "int" | "bool" | "bfloat16" => {
            let dt = match name {
                "float" => DType::Float,
                "double" => DType::Double,
                "half" => DType::Half,
                "long" => DType::Long,
                "int" => DType::Int,
                "bool" => DType::Bool,
                _ => DType::BFloat16,
            };
            vec![(st, tensor_value(t.shape.clone(), Some(dt)))]
        }
        "to" | "type" => {
            let dt = args.iter().chain(kwargs.iter().map(|(_, v)| v)).find_map(dtype_of);
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
                "dim" | "ndimension" => s.rank().map(|r| Value::int(r as i128)).unwrap_or(Value::Unknown),
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
        "item" => vec![(st, Value::Float(None))],
        "tolist" | "numpy" | "data_ptr" | "backward" | "register_hook" => vec![(st, if name == "backward" { Value::None } else { Value::Unknown })],
        "flatten" => {
            let b = bind(&["start_dim", "end_dim"], &args, &kwargs);
            let sd = b.get("start_dim").and_then(|v| v.as_const_int()).unwrap_or(0);
            let ed = b.get("end_dim").and_then(|v| v.as_const_int()).unwrap_or(-1);
            flatten(cx, st, &t, sd, ed, span, "flatten")
        }
        "unsqueeze" => {
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
        "squeeze" => {
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
        "transpose" | "swapaxes" | "swapdims" => {
            let (Some(a), Some(b)) = (args.first().and_then(|v| v.as_const_int()), args.get(1).and_then(|v| v.as_const_int())) else { return vec![(st, Value::Unknown)] };
            transpose(cx, st, &t, a, b, span)
        }
        "permute" => {
            let dims_arg: Vec<Value> = match args.as_slice() {
                [one] if !matches!(one, Value::Int(_)) => cx.iterate(&mut st, one, span).unwrap_or_default(),
                _ => args.clone(),
            };
            let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
            let perm: Option<Vec<i128>> = dims_arg.iter().map(|v| v.as_const_int()).collect();
            let Some(perm) = perm else { return vec![(st, Value::Unknown)] };
            let shown = cx.show_shape(&st, &s);
            let n = perm.len();
            if !cx.check(&st, span, Tri::from_bool(n != rank), &r::dim_out_of_range::RULE, |_| {
                (format!("permute: the permutation has {n} dims but the tensor {shown} has {rank}"), Vec::new())
            }) {
                return Vec::new();
            }
            let mut out = Vec::new();
            let mut seen = vec![false; rank];
            for p in perm {
                let Some(i) = check_dim(cx, &st, &s, p, span, "permute") else { return vec![(st, Value::Unknown)] };
                if i == usize::MAX {
                    return Vec::new();
                }
                if seen[i] {
                    cx.check(&st, span, Tri::True, &r::dim_out_of_range::RULE, |_| (format!("permute: dim {p} appears more than once"), Vec::new()));
                    return Vec::new();
                }
                seen[i] = true;
                out.push(s.dims[i].clone());
            }
            vec![(st, tensor_value(Shape::known(out), t.dtype))]
        }
        "softmax" | "log_softmax" | "cumsum" | "cumprod" | "argsort" | "logcumsumexp" | "cummax" | "cummin" => {
            let b = bind(&["dim"], &args, &kwargs);
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
        "sum" | "mean" | "prod" | "std" | "var" | "amax" | "amin" | "logsumexp" | "any" | "all" | "argmax" | "argmin" | "max" | "min"
        | "nansum" | "nanmean" | "norm" | "count_nonzero" | "median" | "nanmedian" | "mode" | "kthvalue" => {
            reduce(cx, st, &t, name, &args, &kwargs, span)
        }
        "chunk" | "split" | "tensor_split" | "unbind" => split(cx, st, &t, name, &args, &kwargs, span),
        "topk" | "sort" => {
            let b = if name == "topk" { bind(&["k", "dim", "largest", "sorted"], &args, &kwargs) } else { bind(&["dim", "descending"], &args, &kwargs) };
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
                    let shown = cx.show_shape(&st, &s);
                    let (ks, ns) = (k.display(cx.syms()), n.display(cx.syms()));
                    if !cx.check(&st, span, violated, &r::index_out_of_range::RULE, |_| {
                        (format!("topk: k={ks} is larger than dimension {i} of {shown} (size {ns})"), Vec::new())
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
        "flip" | "roll" => {
            let dims_arg = if name == "flip" { args.first().or(kwargs.iter().find(|(k, _)| &**k == "dims").map(|(_, v)| v)) } else { args.get(1).or(kwargs.iter().find(|(k, _)| &**k == "dims").map(|(_, v)| v)) };
            let ds: Option<Vec<i128>> = match dims_arg {
                None => Some(Vec::new()),
                Some(Value::Int(p)) => p.as_const().map(|c| vec![c]),
                Some(v) => cx.iterate(&mut st, v, span).and_then(|items| items.iter().map(|x| x.as_const_int()).collect()),
            };
            let Some(ds) = ds else { return same(st) };
            if s.rank().is_some() {
                for d in ds {
                    if check_dim(cx, &st, &s, d, span, name) == Some(usize::MAX) {
                        return Vec::new();
                    }
                }
            }
            same(st)
        }
        "masked_fill" | "masked_fill_" => match args.first().or(kwargs.iter().find(|(k, _)| &**k == "mask").map(|(_, v)| v)) {
            Some(Value::Tensor(m)) => {
                let m = m.clone();
                match broadcast(cx, &st, &t.shape, &m.shape, span, name) {
                    Some(sh) if name == "masked_fill" => vec![(st, tensor_value(sh, t.dtype))],
                    Some(_) => same(st),
                    None => Vec::new(),
                }
            }
            _ => same(st),
        },
        "index_select" => {
            let b = bind(&["dim", "index"], &args, &kwargs);
            let (Some(d), Some(Value::Tensor(idx))) = (b.get("dim").and_then(|v| v.as_const_int()), b.get("index")) else {
                return vec![(st, Value::Unknown)];
            };
            let is = st.resolve(&idx.shape);
            let Some(ir) = is.rank() else { return vec![(st, Value::Unknown)] };
            let shown = cx.show_shape(&st, &is);
            if !cx.check(&st, span, Tri::from_bool(ir > 1), &r::invalid_shape_argument::RULE, |_| {
                (format!("index_select: the index {shown} must be a vector (1-D), it is {ir}-D"), Vec::new())
            }) {
                return Vec::new();
            }
            let Some(i) = check_dim(cx, &st, &s, d, span, "index_select") else { return vec![(st, Value::Unknown)] };
            if i == usize::MAX {
                return Vec::new();
            }
            if ir != 1 || s.dims.is_empty() {
                return vec![(st, Value::Unknown)];
            }
            let mut dims = s.dims.clone();
            dims[i] = is.dims[0].clone();
            vec![(st, tensor_value(Shape::known(dims), t.dtype))]
        }
        "repeat" | "expand" => {
            let Some(target) = sizes(cx, &mut st, &args) else { return vec![(st, Value::Unknown)] };
            let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
            let shown = cx.show_shape(&st, &s);
            let n = target.len();
            if n < rank {
                let what = if name == "repeat" { "the number of repeat dims" } else { "the number of sizes" };
                cx.check(&st, span, Tri::True, &r::invalid_shape_argument::RULE, |_| {
                    (format!("{name}: {what} ({n}) is smaller than the number of dims of {shown} ({rank})"), Vec::new())
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
                            let (a, b2) = (cx.show_dim(sd), cx.show_dim(td));
                            if !cx.check(&st, span, violated, &r::broadcast_shape_mismatch::RULE, |_| {
                                (format!("expand: the expanded size {b2} must match the existing size {a} of {shown} (or the existing size must be 1)"), Vec::new())
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
        "narrow" => {
            let b = bind(&["dim", "start", "length"], &args, &kwargs);
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
            let shown = cx.show_shape(&st, &s);
            let (es, ns) = (end.display(cx.syms()), n.display(cx.syms()));
            if !cx.check(&st, span, violated, &r::index_out_of_range::RULE, |_| {
                (format!("narrow: start + length = {es} exceeds dimension {i} of size {ns} (tensor {shown})"), Vec::new())
            }) {
                return Vec::new();
            }
            let mut dims = s.dims.clone();
            dims[i] = Dim::known(len.clone(), None);
            vec![(st, tensor_value(Shape::known(dims), t.dtype))]
        }
        "matmul" => match args.first() {
            Some(b) => matmul(cx, st, name, recv.clone(), b.clone(), span),
            None => vec![(st, Value::Unknown)],
        },
        _ => vec![(st, Value::Unknown)],
    }
}

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
            n.as_const().filter(|k| *k <= 64).map(|k| vec![tensor_value(Shape { prefix, dims }, t.dtype); k as usize])
        }
        "chunk" => match (b.get("chunks").and_then(|v| v.as_const_int()), n.as_const()) {
            (Some(k), Some(nn)) if k > 0 && k <= 64 => {
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
                Some(k) if k > 0 && k <= 64 => Some((0..k).map(|j| with(Dim::konst(nn / k + i128::from(j < nn % k)))).collect()),
                _ => None,
            },
            (Some(v), Some(nn)) => {
                let v = v.clone();
                let idx: Option<Vec<i128>> = cx.iterate(&mut st, &v, span).and_then(|xs| xs.iter().map(|x| x.as_const_int().filter(|i| *i >= 0)).collect());
                idx.filter(|xs| xs.len() < 64).map(|xs| {
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
                (Some(sz), Some(nn)) if sz > 0 && nn / sz <= 64 => {
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
                                    if !cx.check(&st, span, eq.not(), &r::invalid_shape_argument::RULE, |_| {
                                        (format!("split: section sizes sum to {ts} but dimension {shown_dim} of {shown} has size {ns}"), Vec::new())
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
    match parts {
        Some(p) => vec![(st, Value::Tuple(Rc::new(p)))],
        None => vec![(st, Value::Unknown)],
    }
}

pub fn size_at(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, d: i128, span: Span) -> Vals {
    let mut st = st;
    let s = st.resolve(&t.shape);
    if let Some(rank) = s.rank() {
        return match check_dim(cx, &st, &s, d, span, "size") {
            Some(usize::MAX) => Vec::new(),
            Some(i) if i < rank => {
                let v = s.dims[i].v.clone().map(Value::Int).unwrap_or(Value::Unknown);
                vec![(st, v)]
            }
            _ => vec![(st, Value::Unknown)],
        };
    }
    // unknown rank
    if d < 0 && ((-d) as usize) <= s.dims.len() {
        let v = s.dims[s.dims.len() - (-d) as usize].v.clone().map(Value::Int).unwrap_or(Value::Unknown);
        return vec![(st, v)];
    }
    if d >= 0 && s.dims.is_empty() {
        // first use: the tensor has at least d+1 dims
        let var = s.prefix.unwrap();
        let rest = cx.fresh_shape_var();
        let names = ["B", "d1", "d2", "d3", "d4", "d5", "d6", "d7"];
        let mut dims = Vec::new();
        for k in 0..=(d as usize).min(7) {
            dims.push(cx.fresh_dim(names[k]));
        }
        let v = dims[d as usize].v.clone();
        st.bind_shape(var, Shape { prefix: Some(rest), dims });
        return vec![(st, v.map(Value::Int).unwrap_or(Value::Unknown))];
    }
    vec![(st, Value::Unknown)]
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
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
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
        cx.check(&st, span, Tri::True, &r::dim_out_of_range::RULE, |_| (format!("{what}: start_dim {sd} comes after end_dim {ed}"), Vec::new()));
        return Vec::new();
    }
    let mut dims = s.dims[..i].to_vec();
    dims.push(Dim { v: numel(&s.dims[i..=j]), why: None });
    dims.extend(s.dims[j + 1..].iter().cloned());
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
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
    let keep = match b.get("keepdim") {
        Some(Value::Bool(k)) => *k,
        None => false,
        _ => return vec![(st, Value::Unknown)],
    };
    let idx_dtype = matches!(name, "argmax" | "argmin" | "count_nonzero");
    let out_dtype = if idx_dtype { Some(DType::Long) } else if matches!(name, "any" | "all") { Some(DType::Bool) } else { t.dtype };
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
        other => match cx.iterate(&mut st, other, span) {
            Some(items) => match items.iter().map(|v| v.as_const_int()).collect::<Option<Vec<_>>>() {
                Some(d) => d,
                None => return vec![(st, Value::Unknown)],
            },
            None => return vec![(st, Value::Unknown)],
        },
    };
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    let mut idx = Vec::new();
    for d in &dims {
        match check_dim(cx, &st, &s, *d, span, name) {
            Some(usize::MAX) => return Vec::new(),
            Some(i) => idx.push(i),
            None => return vec![(st, Value::Unknown)],
        }
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
            let (shown, ks) = (cx.show_shape(&st, &s), k.display(cx.syms()));
            if !cx.check(&st, span, bad, &r::index_out_of_range::RULE, |_| (format!("kthvalue: k={ks} is out of range for {shown} along dim {i}"), Vec::new())) {
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

pub fn tensor_attr(cx: &mut dyn ModelCtx, st: State, o: Value, name: &Name, span: Span) -> Vals {
    let Value::Tensor(t) = &o else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    match &**name {
        "shape" => {
            if s.prefix.is_none() {
                let items = s.dims.iter().map(|d| d.v.clone().map(Value::Int).unwrap_or(Value::Unknown)).collect();
                return vec![(st, Value::Tuple(Rc::new(items)))];
            }
            vec![(st, Value::LibMethod(Box::new(o.clone()), Rc::from("<shape>")))]
        }
        "ndim" => vec![(st, s.rank().map(|r| Value::int(r as i128)).unwrap_or(Value::Unknown))],
        "T" | "mT" | "mH" | "data" | "real" => {
            if &**name == "data" {
                return vec![(st, o.clone())];
            }
            if &**name == "real" {
                return vec![(st, o.clone())];
            }
            tensor_method(cx, st, o.clone(), name, Vec::new(), Vec::new(), span)
        }
        "dtype" | "device" | "grad" | "is_cuda" | "requires_grad" | "grad_fn" => vec![(st, Value::Unknown)],
        _ => vec![(st, Value::LibMethod(Box::new(o.clone()), name.clone()))],
    }
}

/// `x[...]`: integers, slices, `None`, `...` on a tensor of known rank.
pub fn index(cx: &mut dyn ModelCtx, st: State, o: Value, i: Value, span: Span) -> Vals {
    let Value::Tensor(t) = &o else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    let items: Vec<Value> = match &i {
        Value::Tuple(items) if !(items.len() == 4 && items[0].as_str() == Some("<slice>")) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    let Some(rank) = s.rank() else {
        // unknown rank: only a leading run of plain slices / trailing ellipsis handled
        return vec![(st, Value::Unknown)];
    };
    let is_slice = |v: &Value| matches!(v, Value::Tuple(t) if t.len() == 4 && t[0].as_str() == Some("<slice>"));
    // integer/bool tensor indices: one of them at most (advanced indexing with several
    // broadcasts them together, not modelled)
    let tensor_items = items.iter().filter(|v| matches!(v, Value::Tensor(_))).count();
    let int_items = items.iter().filter(|v| matches!(v, Value::Int(_) | Value::Bool(_))).count();
    if tensor_items > 1 || (tensor_items == 1 && int_items > 0) {
        // ints then take part in advanced indexing, which moves dims around: not modelled
        return vec![(st, Value::Unknown)];
    }
    let mask_rank = |v: &Value| -> Option<usize> {
        match v {
            Value::Tensor(ix) if ix.dtype == Some(DType::Bool) => st.resolve(&ix.shape).rank(),
            _ => None,
        }
    };
    let consumed: usize = items
        .iter()
        .filter(|v| !matches!(v, Value::None) && v.as_str() != Some("<ellipsis>"))
        .map(|v| mask_rank(v).unwrap_or(1))
        .sum();
    let shown = cx.show_shape(&st, &s);
    if !cx.check(&st, span, Tri::from_bool(consumed > rank), &r::index_out_of_range::RULE, |_| {
        (format!("too many indices for tensor {shown}: {consumed} indices for {rank} dimensions"), Vec::new())
    }) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut k = 0usize;
    for it in &items {
        if it.as_str() == Some("<ellipsis>") {
            let skip = rank - consumed;
            out.extend(s.dims[k..k + skip].iter().cloned());
            k += skip;
            continue;
        }
        match it {
            Value::None => out.push(Dim::konst(1)),
            v if is_slice(v) => {
                let Value::Tuple(sl) = v else { unreachable!() };
                let d = &s.dims[k];
                let (lo, hi, step) = (&sl[1], &sl[2], &sl[3]);
                let new = if matches!(lo, Value::None) && matches!(hi, Value::None) && matches!(step, Value::None) {
                    d.clone()
                } else {
                    slice_len(cx, &st, d, lo, hi, step)
                };
                out.push(new);
                k += 1;
            }
            Value::Tensor(ix) => {
                let is = st.resolve(&ix.shape);
                match (ix.dtype, is.rank()) {
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
            Value::Int(_) | Value::Bool(_) => {
                let d = &s.dims[k];
                if let (Some(n), Some(c)) = (d.as_const(), it.as_const_int()) {
                    let shown = cx.show_shape(&st, &s);
                    let kk = k;
                    if !cx.check(&st, span, Tri::from_bool(c >= n || c < -n), &r::index_out_of_range::RULE, |_| {
                        (format!("index {c} is out of bounds for dimension {kk} with size {n} (tensor {shown})"), Vec::new())
                    }) {
                        return Vec::new();
                    }
                }
                k += 1;
            }
            _ => return vec![(st, Value::Unknown)],
        }
    }
    out.extend(s.dims[k.min(rank)..].iter().cloned());
    vec![(st, tensor_value(Shape::known(out), t.dtype))]
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
    let bound = |v: &Value, default: &Poly| -> Option<Poly> {
        match v {
            Value::None => Some(default.clone()),
            Value::Int(p) => match p.as_const() {
                Some(c) if c < 0 => {
                    let q = n.add_const(c)?;
                    match cx.poly_cmp(st, &q, crate::shape::Rel::Lt, &Poly::constant(0)) {
                        Tri::True => Some(Poly::constant(0)),
                        Tri::False => Some(q),
                        Tri::Unknown => None,
                    }
                }
                _ => clamp(p),
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

/// The APIs this family models, for the registry (`models/registry.rs`).
pub const APIS: &[crate::models::registry::Decl] = &[];
