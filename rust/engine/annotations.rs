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

use crate::ir::{Const, Expr, ExprKind, FuncDef};
use crate::models::ctx::ModelCtx;
use crate::shape::Tri;
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
    ("UInt8", Some(DType::Byte)),
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

/// The dims and dtype `ann` describes: a jaxtyping annotation (`jaxtyping` true) or a
/// torchtyping one; None when it is no shape annotation this reads.
fn spec_of(ann: &Expr) -> Option<(Vec<Token>, Option<DType>, bool)> {
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
        return Some((tokens, *dtype, true));
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
        return Some((tokens, None, false));
    }
    None
}

/// The tensor `ann` describes, for parameter `param`; None when it is no shape annotation
/// this reads.
pub fn input_of(interp: &mut Interp, ann: &Expr, param: &str, named: &mut Named) -> Option<Value> {
    let (tokens, dtype, _) = spec_of(ann)?;
    shape_of(interp, &tokens, param, named).map(|s| tensor_value(s, dtype))
}

/// Is this decorator a runtime type checker (`@jaxtyped(...)`, `@beartype`, `@typechecked`)?
/// It returns the function itself (`interp::stmt` keeps the function for it).
pub fn is_type_checker(d: &Expr) -> bool {
    let callee = match &d.kind {
        ExprKind::Call { func, .. } => &**func,
        _ => d,
    };
    matches!(last_name(callee), Some("jaxtyped" | "beartype" | "typechecked"))
}

/// Does a runtime checker check this function's jaxtyping annotations when it is called?
/// `@jaxtyped(typechecker=...)` (not None), or `@jaxtyped` with `@beartype`/`@typechecked`.
pub fn runtime_checked(def: &FuncDef) -> bool {
    let mut jaxtyped = false;
    let mut checker = false;
    for d in &def.decorators {
        let (callee, kwargs) = match &d.kind {
            ExprKind::Call { func, kwargs, .. } => (&**func, Some(kwargs)),
            _ => (d, None),
        };
        match last_name(callee) {
            Some("jaxtyped") => {
                jaxtyped = true;
                if let Some(kw) = kwargs
                    && kw.iter().any(|k| k.name.as_deref() == Some("typechecker") && !matches!(k.value.kind, ExprKind::Const(Const::None)))
                {
                    checker = true;
                }
            }
            Some("beartype" | "typechecked") => checker = true,
            _ => {}
        }
    }
    jaxtyped && checker
}

/// The first contradiction between a runtime-checked function's annotation `ann` and the
/// value `v` (a tensor), binding the names it meets in `bound`: `(the annotation's dims, why)`.
/// None when `v` certainly fits or may fit (an unknown rank or size, a value that is no
/// tensor: not judged).
pub fn contradiction(interp: &Interp, st: &State, ann: &Expr, v: &Value, bound: &mut BTreeMap<String, Dim>) -> Option<(String, String)> {
    let (tokens, _, true) = spec_of(ann)? else { return None };
    let Value::Tensor(t) = v else { return None };
    let s = st.resolve(&t.shape);
    if s.prefix.is_some() {
        return None;
    }
    let spec = tokens.iter().map(Token::show).collect::<Vec<_>>().join(" ");
    let variadic = matches!(tokens.first(), Some(Token::Variadic(_)));
    let fixed = &tokens[usize::from(variadic)..];
    let rank = s.dims.len();
    if (!variadic && rank != fixed.len()) || (variadic && rank < fixed.len()) {
        let want = if variadic { format!("at least {} dims", fixed.len()) } else { format!("{} dims", fixed.len()) };
        return Some((spec, format!("{rank} dims, the annotation has {want}")));
    }
    for (k, (tok, d)) in fixed.iter().zip(&s.dims[rank - fixed.len()..]).enumerate() {
        let at = rank - fixed.len() + k;
        match tok {
            Token::Size(n) if interp.dim_eq(st, d, &Dim::konst(*n)) == Tri::False => {
                return Some((spec, format!("dim {at} is {}, not {n}", interp.show_dim_in(st, d))));
            }
            Token::Name(n) => match bound.get(n) {
                Some(b) if interp.dim_eq(st, d, b) == Tri::False => {
                    return Some((spec, format!("dim {at} is {}, but {n} is {}", interp.show_dim_in(st, d), interp.show_dim_in(st, b))));
                }
                Some(_) => {}
                None => {
                    bound.insert(n.clone(), d.clone());
                }
            },
            _ => {}
        }
    }
    None
}

enum Token {
    Size(i128),
    Name(String),
    Any,
    Variadic(Option<String>),
}

impl Token {
    fn show(&self) -> String {
        match self {
            Token::Size(n) => n.to_string(),
            Token::Name(n) => n.clone(),
            Token::Any => "_".into(),
            Token::Variadic(None) => "...".into(),
            Token::Variadic(Some(n)) => format!("*{n}"),
        }
    }
}

fn token(t: &str) -> Option<Token> {
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_') && !s.starts_with(|c: char| c.is_ascii_digit());
    Some(match t {
        "_" => Token::Any,
        // jaxtyping checks no dim whose name starts with an underscore (`_n`): documentation only
        t if t.starts_with('_') && ident(t) => Token::Any,
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
                    let sym = interp.syms.fresh(n, 1);
                    interp.syms.set_param(&sym, crate::shape::Param { name: n.to_string(), kind: crate::shape::ParamKind::Input, default: None });
                    let d = Dim::known(sym, Some(crate::value::Origin::said(format!("{n} in the annotation of {param}"))));
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
