//! Matrix products: `matmul` (and `@`), `einsum`. The rank requirements of `mm`, `bmm`, `mv`,
//! `dot`, `outer` and `addmm`/`baddbmm` are in shape_ops.rs, on top of `matmul`.

use std::rc::Rc;

use super::tensor::{broadcast, tensor_of, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::Span;
use crate::rules::shape::{self as r, InvalidShapeArgument, MatmulShapeMismatch};
use crate::shape::Tri;

/// `torch.` functions modelled here; `Err(st)` gives the state back when `f` is not one of them.
pub fn function(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], span: Span) -> Result<Vals, State> {
    Ok(match f {
        "einsum" => einsum(cx, st, args, span),
        "matmul" => {
            if let [a, b, ..] = args {
                return Ok(matmul(cx, st, f, a.clone(), b.clone(), span));
            }
            vec![(st, Value::Unknown)]
        }
        _ => return Err(st),
    })
}

/// Tensor methods modelled here; `Err(st)` gives the state back when `name` is not one of them.
pub fn method(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, name: &str, args: &[Value], span: Span) -> Result<Vals, State> {
    Ok(match name {
        "matmul" => match args.first() {
            Some(b) => matmul(cx, st, name, Value::Tensor(t.clone()), b.clone(), span),
            None => vec![(st, Value::Unknown)],
        },
        _ => return Err(st),
    })
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
        let n = term.chars().count();
        if !cx.check(&st, span, Tri::from_bool(n != rank), |cx| {
            let shown = cx.show_shape(&st, &s);
            (InvalidShapeArgument::EinsumRank { term: term.to_string(), count: n.to_string(), operand: k.to_string(), rank: rank.to_string(), shape: shown }, Vec::new())
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
                    if !cx.check(&st, span, violated, |cx| {
                        let (a, b) = (cx.show_dim(prev), cx.show_dim(d));
                        (MatmulShapeMismatch::Einsum { equation: eq.to_string(), subscript: c.to_string(), size: b, operand: k.to_string(), before: a }, Vec::new())
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
    let op = if f == "matmul" { "@".to_string() } else { format!("torch.{f}") };
    if !cx.check(&st, span, eq.not(), |cx| (MatmulShapeMismatch::Inner { op: op.clone(), lhs: shown_a, rhs: shown_b, da: cx.show_dim(ka), db: cx.show_dim(kb) }, Vec::new())) {
        return Vec::new();
    }
    // result shape
    if sa.prefix.is_some() || sb.prefix.is_some() {
        if sb.prefix.is_none() && nb == 2 && na >= 2 {
            let mut dims = sa.dims[..na - 1].to_vec();
            dims.push(sb.dims[1].clone());
            return vec![(st, tensor_value(Shape { prefix: sa.prefix, dims }, dtype))];
        }
        return vec![(st, tensor_value(cx.any_shape(), dtype))];
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
    let res = vec![(st, tensor_value(Shape::known(dims), dtype))];
    // the result of mm/bmm is contiguous (super::layout; a matrix or vector times a batch may
    // come back transposed in some torch versions: not known)
    if na >= 3 || nb <= 2 { super::layout::contiguous(res) } else { res }
}

/// The APIs this family models, for the registry (`models/registry.rs`).
pub const APIS: &[Decl] = &[
    Decl::function("torch.matmul", "input, other").checks(&[&r::matmul_shape_mismatch::RULE, &r::broadcast_shape_mismatch::RULE]),
    Decl::method("torch.Tensor.matmul", "other").checks(&[&r::matmul_shape_mismatch::RULE, &r::broadcast_shape_mismatch::RULE]),
    Decl::function("torch.einsum", "equation, *operands").checks(&[&r::invalid_shape_argument::RULE, &r::matmul_shape_mismatch::RULE]),
];
