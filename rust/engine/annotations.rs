//! Input specs from annotations: a `forward` parameter annotated in the jaxtyping style
//! (`Float[Tensor, "batch 3 32 32"]`) or the torchtyping style (`TensorType["batch", 3, 32,
//! 32]`) is, when `forward` is checked as an entry point, a tensor of that shape instead of a
//! tensor of unknown shape.
//!
//! The annotation is read as written (the engine does not resolve third-party imports): the
//! subscripted name is one of jaxtyping's dtype names with `Tensor`/`torch.Tensor` first, or
//! `TensorType`. A dim is a number, a name (the same name in two parameters of one call is the
//! same size, as jaxtyping checks), `_` (any size) or, first only, a variadic `...`/`*name`.
//! Anything else (`#name` broadcasting, `name=...`, arithmetic, a variadic in the middle, a
//! string annotation) leaves the parameter a tensor of unknown shape.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::ir::{Const, Expr, ExprKind};
use crate::models::torch::tensor::tensor_value;
use super::interp::Interp;
use crate::value::*;

/// The dims named so far in one call's annotations: a name is one size across parameters.
#[derive(Default)]
pub struct Named {
    dims: BTreeMap<String, Dim>,
    variadic: BTreeMap<String, u32>,
}

/// jaxtyping's dtype annotations, with the dtype each fixes (None: a family of dtypes).
const JAXTYPING: &[(&str, Option<DType>)] = &[
    ("Float", None),
    ("Float16", Some(DType::Half)),
    ("BFloat16", Some(DType::BFloat16)),
    ("Float32", Some(DType::Float)),
    ("Float64", Some(DType::Double)),
    ("Int", None),
    ("Int32", Some(DType::Int)),
    ("Int64", Some(DType::Long)),
    ("Integer", None),
    ("UInt8", Some(DType::Other)),
    ("Bool", Some(DType::Bool)),
    ("Shaped", None),
    ("Num", None),
    ("Real", None),
    ("Inexact", None),
];

fn last_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Name(n) => Some(n),
        ExprKind::Attr(_, n) => Some(n),
        _ => None,
    }
}

/// The tensor `ann` describes, for parameter `param`; None when it is no shape annotation
/// this reads.
pub fn input_of(interp: &mut Interp, ann: &Expr, param: &str, named: &mut Named) -> Option<Value> {
    let ExprKind::Subscript(head, idx) = &ann.kind else { return None };
    let head = last_name(head)?;
    let items: Vec<&Expr> = match &idx.kind {
        ExprKind::Tuple(items) => items.iter().collect(),
        _ => vec![&**idx],
    };
    // jaxtyping: Float[Tensor, "b c h w"]
    if let Some((_, dtype)) = JAXTYPING.iter().find(|(n, _)| *n == head) {
        let [array, spec] = items.as_slice() else { return None };
        if last_name(array) != Some("Tensor") {
            return None;
        }
        let ExprKind::Const(Const::Str(spec)) = &spec.kind else { return None };
        let tokens: Vec<Token> = spec.split_whitespace().map(token).collect::<Option<_>>()?;
        return shape_of(interp, &tokens, param, named).map(|s| tensor_value(s, *dtype));
    }
    // torchtyping: TensorType["batch", 3, ...] (dtype items such as `float` are left out)
    if head == "TensorType" {
        let mut tokens = Vec::new();
        for e in items {
            match &e.kind {
                ExprKind::Const(Const::Str(s)) => tokens.push(token(s)?),
                ExprKind::Const(Const::Int(n)) if *n >= 0 => tokens.push(Token::Size(*n as i128)),
                ExprKind::Const(Const::Ellipsis) => tokens.push(Token::Variadic(None)),
                ExprKind::Name(_) | ExprKind::Attr(..) => {} // a dtype (`float`, `torch.float32`)
                _ => return None,
            }
        }
        return shape_of(interp, &tokens, param, named).map(|s| tensor_value(s, None));
    }
    None
}

enum Token {
    Size(i128),
    Name(String),
    Any,
    Variadic(Option<String>),
}

fn token(t: &str) -> Option<Token> {
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_') && !s.starts_with(|c: char| c.is_ascii_digit());
    Some(match t {
        "_" => Token::Any,
        "..." => Token::Variadic(None),
        t if t.chars().all(|c| c.is_ascii_digit()) => Token::Size(t.parse().ok()?),
        t if t.starts_with('*') && ident(&t[1..]) => Token::Variadic(Some(t[1..].to_string())),
        t if ident(t) => Token::Name(t.to_string()),
        _ => return None,
    })
}

fn shape_of(interp: &mut Interp, tokens: &[Token], param: &str, named: &mut Named) -> Option<Shape> {
    let mut prefix = None;
    let mut dims = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Token::Size(n) => dims.push(Dim::konst(*n)),
            Token::Any => dims.push(Dim::known(interp.syms.fresh("_", 1), None)),
            Token::Name(n) => {
                if !named.dims.contains_key(n) {
                    let d = Dim::known(interp.syms.fresh(n, 1), Some(Rc::from(format!("{n} in the annotation of {param}"))));
                    named.dims.insert(n.clone(), d);
                }
                dims.push(named.dims[n].clone());
            }
            Token::Variadic(name) if i == 0 => {
                prefix = Some(match name {
                    Some(n) => match named.variadic.get(n) {
                        Some(v) => *v,
                        None => {
                            let v = interp.fresh_shape_var();
                            named.variadic.insert(n.clone(), v);
                            v
                        }
                    },
                    None => interp.fresh_shape_var(),
                });
            }
            Token::Variadic(_) => return None,
        }
    }
    Some(Shape { prefix, dims })
}
