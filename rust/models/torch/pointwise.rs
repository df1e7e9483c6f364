//! Pointwise ops: unary math, broadcasting binary ops and comparisons, their in-place forms
//! (`x.add_(y)`, `x += y`), and torch's dtype promotion for them.
//!
//! One table per family names the ops; the shape semantics are the family's: a unary op keeps
//! the shape, a binary op broadcasts, and an in-place op additionally needs the broadcast shape
//! to be the shape of `self` (torch raises "output with shape [4] doesn't match the broadcast
//! shape [3, 4]"). The dtype follows `torch.result_type`, see [`promote`].

use super::tensor::{broadcast, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::value::*;
use crate::ir::{BinOp, Name, Span};
use crate::models::registry::Decl;
use crate::rules::Rule;
use crate::rules::shape::{self as r, BroadcastShapeMismatch};
use crate::shape::Tri;

/// The pointwise ops, one table per family. For each op: its name, the parameters after the
/// input (the same for `torch.f(input, ...)`, `Tensor.f(...)` and their in-place forms, `~` for
/// one that cannot change the shape, the dtype or whether torch raises), and the forms torch
/// has: `F` `torch.f`, `M` `Tensor.f`, `F_` `torch.f_`, `M_` `Tensor.f_`. Each table gives the
/// family's names (`unary`, `binary`, `handles`) and its declarations ([`APIS`]).
macro_rules! families {
    (@F $n:literal, $s:literal) => { Decl::function(concat!("torch.", $n), concat!("input, ", $s)) };
    (@M $n:literal, $s:literal) => { Decl::method(concat!("torch.Tensor.", $n), $s) };
    (@F_ $n:literal, $s:literal) => { Decl::function(concat!("torch.", $n, "_"), concat!("input, ", $s)) };
    (@M_ $n:literal, $s:literal) => { Decl::method(concat!("torch.Tensor.", $n, "_"), $s) };
    ($($(#[$doc:meta])* $family:ident $checks:ident [$($name:literal ($sig:literal) $($form:ident)+),* $(,)?])*) => {
        $($(#[$doc])* const $family: &[&str] = &[$($name),*];)*
        /// The pointwise APIs, for the registry (`models/registry.rs`).
        pub const APIS: &[Decl] = &[$($($(families!(@$form $name, $sig).checks($checks)),+),*),*];
    };
}

/// The rules a pointwise op checks: none for a unary op, the broadcast for the others (and,
/// in place, that the result keeps the shape of the tensor written to).
const NONE: &[&Rule] = &[];
const BROADCAST: &[&Rule] = &[&r::broadcast_shape_mismatch::RULE];

families! {
    /// Unary, the input's dtype.
    SAME NONE [
        "abs" ("") F M F_ M_,
        "absolute" ("") F M M_,
        "neg" ("") F M F_ M_,
        "negative" ("") F M F_ M_,
        "sign" ("") F M M_,
        "sgn" ("") F M M_,
        "square" ("") F M F_ M_,
        "relu" ("") F M F_ M_,
        "floor" ("") F M F_ M_,
        "ceil" ("") F M F_ M_,
        "round" ("*, ~decimals=0") F M F_ M_,
        "trunc" ("") F M F_ M_,
        "fix" ("") F M F_ M_,
        // (`memory_format=` is not read)
        "clone" ("") F M,
        "detach" ("") F M F_ M_,
        "contiguous" ("") M,
        "positive" ("") F M,
        "frac" ("") F M F_ M_,
        "nan_to_num" ("~nan=0.0, ~posinf=None, ~neginf=None") F M F_ M_,
        // tensor bounds broadcast: not modelled (Unknown)
        "clamp" ("min=None, max=None") F M F_ M_,
        "clip" ("min=None, max=None") F M F_ M_,
        "cpu" ("") M,
        "cuda" ("~device=None, ~non_blocking=False") M,
        "pin_memory" ("") M,
        "requires_grad_" ("~requires_grad=True") M,
        "retain_grad" ("") M,
        "share_memory_" ("") M,
        "zero_" ("") F M,
        // a tensor value: not modelled (Unknown)
        "fill_" ("value") F M,
        // the distribution's parameters change values only
        "normal_" ("~mean=0, ~std=1, *, ~generator=None") M,
        "uniform_" ("~from=0, ~to=1, *, ~generator=None") M,
        "exponential_" ("~lambd=1, *, ~generator=None") M,
        "random_" ("~from=0, ~to=None, *, ~generator=None") M,
        "cauchy_" ("~median=0, ~sigma=1, *, ~generator=None") M,
        "log_normal_" ("~mean=1, ~std=2, *, ~generator=None") M,
        "geometric_" ("~p, *, ~generator=None") M,
        "conj" ("") F M,
        "resolve_conj" ("") F M,
        "resolve_neg" ("") F M,
    ]
    /// Unary, floating: integer and bool inputs give the default float dtype.
    FLOATING NONE [
        "exp" ("") F M F_ M_,
        "exp2" ("") F M F_ M_,
        "expm1" ("") F M F_ M_,
        "log" ("") F M F_ M_,
        "log2" ("") F M F_ M_,
        "log10" ("") F M F_ M_,
        "log1p" ("") F M F_ M_,
        "sqrt" ("") F M F_ M_,
        "rsqrt" ("") F M F_ M_,
        "sin" ("") F M F_ M_,
        "cos" ("") F M F_ M_,
        "tan" ("") F M F_ M_,
        "asin" ("") F M F_ M_,
        "arcsin" ("") F M F_ M_,
        "acos" ("") F M F_ M_,
        "arccos" ("") F M F_ M_,
        "atan" ("") F M F_ M_,
        "arctan" ("") F M F_ M_,
        "sinh" ("") F M F_ M_,
        "cosh" ("") F M F_ M_,
        "tanh" ("") F M F_ M_,
        "asinh" ("") F M F_ M_,
        "arcsinh" ("") F M F_ M_,
        "acosh" ("") F M F_ M_,
        "arccosh" ("") F M F_ M_,
        "atanh" ("") F M F_ M_,
        "arctanh" ("") F M F_ M_,
        "sigmoid" ("") F M F_ M_,
        "erf" ("") F M F_ M_,
        "erfc" ("") F M F_ M_,
        "erfinv" ("") F M M_,
        "reciprocal" ("") F M F_ M_,
        "lgamma" ("") F M M_,
        "digamma" ("") F M M_,
        "deg2rad" ("") F M F_ M_,
        "rad2deg" ("") F M F_ M_,
        "logit" ("~eps=None") F M F_ M_,
        "i0" ("") F M F_ M_,
        "sinc" ("") F M F_ M_,
        // a tensor `p` broadcasts: not modelled (Unknown)
        "bernoulli" ("p=None, *, ~generator=None") F M M_,
    ]
    /// Unary, bool.
    TO_BOOL NONE [
        "isnan" ("") F M,
        "isinf" ("") F M,
        "isfinite" ("") F M,
        "isposinf" ("") F M,
        "isneginf" ("") F M,
        "signbit" ("") F M,
        "logical_not" ("") F M M_,
        "isreal" ("") F M,
    ]
    /// Binary, the promoted dtype. (`alpha=` is not read: a float alpha with integer tensors
    /// raises.)
    ARITH BROADCAST [
        "add" ("other") F M M_,
        "sub" ("other") F M M_,
        "subtract" ("other") F M M_,
        "mul" ("other") F M M_,
        "multiply" ("other") F M M_,
        "maximum" ("other") F M,
        "minimum" ("other") F M,
        "fmax" ("other") F M,
        "fmin" ("other") F M,
        "remainder" ("other") F M M_,
        "fmod" ("other") F M M_,
        "floor_divide" ("other") F M M_,
        "pow" ("exponent") F M M_,
        "rsub" ("other") F,
        "clamp_min" ("min") F M F_ M_,
        "clamp_max" ("max") F M F_ M_,
    ]
    /// Binary, the promoted dtype, floating: integer operands give the default float dtype
    /// (`div` with a `rounding_mode` keeps integer dtypes).
    TRUE_DIV BROADCAST [
        "div" ("other, *, rounding_mode=None") F M M_,
        "divide" ("other, *, rounding_mode=None") F M M_,
        "true_divide" ("other") F M M_,
        "atan2" ("other") F M M_,
        "arctan2" ("other") F M M_,
        "hypot" ("other") F M M_,
        "xlogy" ("other") F M F_ M_,
        "copysign" ("other") F M M_,
    ]
    /// Binary, bool.
    COMPARE BROADCAST [
        "eq" ("other") F M M_,
        "ne" ("other") F M M_,
        "lt" ("other") F M M_,
        "le" ("other") F M M_,
        "gt" ("other") F M M_,
        "ge" ("other") F M M_,
        "greater" ("other") F M M_,
        "less" ("other") F M M_,
        "greater_equal" ("other") F M M_,
        "less_equal" ("other") F M M_,
        "not_equal" ("other") F M M_,
        "logical_and" ("other") F M M_,
        "logical_or" ("other") F M M_,
        "logical_xor" ("other") F M M_,
    ]
    /// Binary, the promoted dtype, integral or bool only (floats raise).
    BITWISE BROADCAST [
        "bitwise_and" ("other") F M M_,
        "bitwise_or" ("other") F M M_,
        "bitwise_xor" ("other") F M M_,
    ]
    /// Ternary: all three broadcast (`lerp(a, b, weight)`, `addcmul(a, b, c)`); the first's
    /// dtype. (`value=` scales values only.)
    TERNARY BROADCAST [
        "lerp" ("end, weight") F M M_,
        "addcmul" ("tensor1, tensor2, *, ~value=1") F M M_,
        "addcdiv" ("tensor1, tensor2, *, ~value=1") F M M_,
    ]
    /// `dst.copy_(src)`: src broadcasts to dst's shape.
    COPY BROADCAST [
        "copy" ("src, ~non_blocking=False") M_,
    ]
}

/// The result dtype of a unary op.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unary {
    /// the input's dtype (`abs`, `neg`, `floor`, ...)
    Same,
    /// floating: integer and bool inputs give the default float dtype (`exp`, `sqrt`, ...)
    Floating,
    /// bool (`isnan`, `logical_not`, ...)
    ToBool,
}

fn unary(name: &str) -> Option<Unary> {
    Some(if SAME.contains(&name) {
        Unary::Same
    } else if FLOATING.contains(&name) {
        Unary::Floating
    } else if TO_BOOL.contains(&name) {
        Unary::ToBool
    } else {
        return None;
    })
}

/// The result dtype of a binary op.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Binary {
    /// the promoted dtype (`add`, `mul`, `remainder`, ...)
    Arith,
    /// the promoted dtype, floating: integer operands give the default float dtype (`div`)
    TrueDiv,
    /// bool (`eq`, `lt`, `logical_and`, ...)
    ToBool,
    /// the promoted dtype, integral or bool only (`bitwise_and`); floats raise
    Bitwise,
}

fn binary(name: &str) -> Option<Binary> {
    Some(if ARITH.contains(&name) {
        Binary::Arith
    } else if TRUE_DIV.contains(&name) {
        Binary::TrueDiv
    } else if COMPARE.contains(&name) {
        Binary::ToBool
    } else if BITWISE.contains(&name) {
        Binary::Bitwise
    } else {
        return None;
    })
}

/// The family of an operator.
fn binop_kind(op: BinOp) -> Option<Binary> {
    match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Mod | BinOp::FloorDiv | BinOp::Pow => Some(Binary::Arith),
        BinOp::Div => Some(Binary::TrueDiv),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => Some(Binary::Bitwise),
        BinOp::LShift | BinOp::RShift | BinOp::MatMul => None,
    }
}

/// Whether `name` (a `torch.` function or a Tensor method, maybe in-place) is pointwise.
pub fn handles(name: &str) -> bool {
    let base = name.strip_suffix('_').unwrap_or(name);
    unary(name).is_some()
        || binary(name).is_some()
        || unary(base).is_some()
        || binary(base).is_some()
        || TERNARY.contains(&name)
        || TERNARY.contains(&base)
        || (base != name && COPY.contains(&base))
}

/// An operand of a pointwise op, for dtype promotion.
#[derive(Debug, Clone, Copy)]
enum Operand {
    /// a tensor: its dtype, and whether it is 0-dim (0-dim tensors rank below dimensioned ones)
    Tensor(Option<DType>, Option<bool>),
    Int,
    Float,
    Bool,
}

fn operand(st: &State, v: &Value) -> Option<Operand> {
    match v {
        Value::Tensor(t) => Some(Operand::Tensor(t.dtype, st.resolve(&t.shape).rank().map(|r| r == 0))),
        Value::Int(_) => Some(Operand::Int),
        Value::Float(_) => Some(Operand::Float),
        Value::Bool(_) => Some(Operand::Bool),
        _ => None,
    }
}

fn category(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        DType::Int | DType::Long | DType::Byte => 1,
        DType::Half | DType::BFloat16 | DType::Float | DType::Double => 2,
        DType::Other => 3,
    }
}

/// The wider of two dtypes of one category.
fn wider(a: DType, b: DType) -> Option<DType> {
    use DType::*;
    Some(match (a, b) {
        _ if a == b => a,
        (Int | Byte, Long) | (Long, Int | Byte) => Long,
        (Byte, Int) | (Int, Byte) => Int,
        (Double, _) | (_, Double) => Double,
        (Float, _) | (_, Float) | (Half, BFloat16) | (BFloat16, Half) => Float,
        _ => return None,
    })
}

/// `torch.result_type` for two operands: a higher category (bool < integral < floating) wins;
/// within the same category dimensioned tensors outrank 0-dim ones, which outrank Python
/// scalars; a Python scalar only decides the category (a float scalar with an integral tensor
/// gives the default dtype, float32). `None` when not known.
fn promote(a: Operand, b: Operand) -> Option<DType> {
    use Operand::*;
    match (a, b) {
        (Tensor(Some(x), za), Tensor(Some(y), zb)) => {
            if category(x) == 3 || category(y) == 3 {
                return None;
            }
            if category(x) != category(y) {
                return Some(if category(x) > category(y) { x } else { y });
            }
            match (za, zb) {
                (Some(za), Some(zb)) if za == zb => wider(x, y),
                (Some(true), Some(false)) => Some(y),
                (Some(false), Some(true)) => Some(x),
                _ => if x == y { Some(x) } else { None },
            }
        }
        (Tensor(Some(x), _), s) | (s, Tensor(Some(x), _)) => match s {
            Int if x == DType::Bool => Some(DType::Long),
            Float if category(x) < 2 => Some(DType::Float),
            Tensor(..) => None,
            _ if category(x) == 3 => None,
            _ => Some(x),
        },
        _ => None,
    }
}

fn result_dtype(kind: Binary, a: Operand, b: Operand) -> Option<DType> {
    match kind {
        Binary::ToBool => Some(DType::Bool),
        Binary::Arith => promote(a, b),
        Binary::TrueDiv => promote(a, b).map(|d| if category(d) < 2 { DType::Float } else { d }),
        Binary::Bitwise => promote(a, b).filter(|d| category(*d) < 2),
    }
}

fn shape_of(v: &Value) -> Option<Shape> {
    match v {
        Value::Tensor(t) => Some(t.shape.clone()),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => Some(Shape::known(Vec::new())),
        _ => None,
    }
}

/// An in-place op writes the broadcast result into `target`: the broadcast shape must be
/// `target`'s shape. False: torch raises (recorded).
pub(super) fn fits_in_place(cx: &mut dyn ModelCtx, st: &State, target: &Shape, out: &Shape, span: Span, what: &str) -> bool {
    let (t, o) = (st.resolve(target), st.resolve(out));
    let violated = match (t.rank(), o.rank()) {
        (Some(rt), Some(ro)) if ro > rt => Tri::True,
        (Some(rt), Some(ro)) => {
            let mut v = Tri::False;
            for (x, y) in t.dims[rt - ro..].iter().zip(&o.dims) {
                match cx.dim_eq(st, x, y) {
                    Tri::False => {
                        v = Tri::True;
                        break;
                    }
                    Tri::Unknown => v = Tri::Unknown,
                    Tri::True => {}
                }
            }
            v
        }
        _ => Tri::Unknown,
    };
    cx.check(st, span, violated, |cx| {
        let (ts, os) = (cx.show_shape(st, &t), cx.show_shape(st, &o));
        (BroadcastShapeMismatch::InPlace { op: what.into(), target: ts, result: os }, Vec::new())
    })
}

/// Where a binary op's result goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    /// a new tensor
    New,
    /// into `a` (`a.add_(b)`, `a += b`): `a` must hold the result's dtype
    InPlace,
    /// into `a`, cast to its dtype (`a.copy_(b)`)
    Copy,
}

/// A binary op on two values, at least one a tensor: broadcast the shapes, promote the dtypes;
/// `write`: where the result goes.
#[allow(clippy::too_many_arguments)]
fn apply_binary(cx: &mut dyn ModelCtx, st: State, kind: Binary, a: &Value, b: &Value, span: Span, what: &str, write: Write) -> Vals {
    let in_place = write != Write::New;
    let (Some(sa), Some(sb), Some(oa), Some(ob)) = (shape_of(a), shape_of(b), operand(&st, a), operand(&st, b)) else {
        return vec![(st, Value::Unknown)];
    };
    let Some(out) = broadcast(cx, &st, &sa, &sb, span, what) else { return Vec::new() };
    let dtype = result_dtype(kind, oa, ob);
    // a bitwise op on floating operands: torch raises (`"bitwise_and_cpu" not implemented for
    // 'Float'`), SHP202 when a tensor operand is floating; a float scalar is not modelled
    if kind == Binary::Bitwise && dtype.is_none() && promote(oa, ob).is_some_and(|d| category(d) == 2) {
        if let Some(t) = [a, b].into_iter().find_map(|v| match v {
            Value::Tensor(t) if t.dtype.is_some_and(|d| d.is_floating()) => Some(t),
            _ => None,
        }) && !super::dtype::check_integral(cx, &st, what, t, span)
        {
            return Vec::new();
        }
        return vec![(st, Value::Unknown)];
    }
    if in_place {
        if !fits_in_place(cx, &st, &sa, &out, span, what) {
            return Vec::new();
        }
        // `self` must hold the result's dtype: a float result into an integer `self` raises
        // ("result type Float can't be cast to the desired output type Long", SHP202). A
        // comparison writes bools, which any dtype holds; `copy_` casts.
        if write == Write::InPlace
            && kind != Binary::ToBool
            && let (Value::Tensor(target), Some(rd)) = (a, dtype)
            && !super::dtype::check_in_place(cx, &st, what, target, rd, span)
        {
            return Vec::new();
        }
        return vec![(st, a.clone())];
    }
    vec![(st, tensor_value(out, dtype))]
}

/// `a <op> b` (and `a <op>= b` when `in_place`) with a tensor operand.
pub fn operator(cx: &mut dyn ModelCtx, st: State, op: BinOp, a: Value, b: Value, span: Span, in_place: bool) -> Vals {
    let Some(kind) = binop_kind(op) else { return vec![(st, Value::Unknown)] };
    let in_place = in_place && matches!(a, Value::Tensor(_));
    // `x + k`, `k + x`, `x - k` with an integer constant shift known values (not in place:
    // the engine forgets the values an in-place op writes)
    let shift = match (op, &a, &b) {
        _ if in_place => None,
        (BinOp::Add | BinOp::Sub, Value::Tensor(t), Value::Int(k)) => t.values.clone().zip(k.as_const().map(|k| if op == BinOp::Sub { -k } else { k })),
        (BinOp::Add, Value::Int(k), Value::Tensor(t)) => t.values.clone().zip(k.as_const()),
        _ => None,
    };
    let what = format!("operator {}{}", op.symbol(), if in_place { "=" } else { "" });
    if op == BinOp::Sub && !super::dtype::check_not_bool_subtraction(cx, &st, &what, &[&a, &b], span) {
        return Vec::new();
    }
    let out = apply_binary(cx, st, kind, &a, &b, span, &what, if in_place { Write::InPlace } else { Write::New });
    let Some((bounds, k)) = shift else { return out };
    out.into_iter()
        .map(|(st, v)| match v {
            Value::Tensor(r) if r.values.is_none() && matches!(r.dtype, Some(DType::Long)) => (st, Value::Tensor(std::rc::Rc::new((*r).clone().with_values(bounds.shifted(k))))),
            v => (st, v),
        })
        .collect()
}

/// A comparison operator (`==`, `<`, ...) with a tensor operand: broadcast, bool result.
pub fn comparison(cx: &mut dyn ModelCtx, st: State, a: Value, b: Value, span: Span) -> Vals {
    apply_binary(cx, st, Binary::ToBool, &a, &b, span, "comparison", Write::New)
}

/// A pointwise op called as `torch.name(args...)` or `recv.name(args...)` (then `recv` is the
/// first of `args`). Call only when [`handles`] says so.
pub fn call(cx: &mut dyn ModelCtx, st: State, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span, method: bool) -> Vals {
    let what = if method { format!("Tensor.{name}") } else { format!("torch.{name}") };
    let base = name.strip_suffix('_').filter(|b| unary(name).is_none() && binary(name).is_none() && (unary(b).is_some() || binary(b).is_some() || TERNARY.contains(b)));
    let (op, in_place) = match base {
        Some(b) => (b, true),
        None => (name, false),
    };
    let Some(first) = args.first() else { return vec![(st, Value::Unknown)] };
    if name == "copy_" {
        // `dst.copy_(src)`: src broadcasts to dst's shape
        return match args.get(1) {
            Some(src) => apply_binary(cx, st, Binary::Arith, first, src, span, &what, Write::Copy),
            None => vec![(st, Value::Unknown)],
        };
    }
    if let Some(kind) = unary(op) {
        let Value::Tensor(t) = first else { return vec![(st, Value::Unknown)] };
        if matches!(op, "neg" | "negative") && !super::dtype::check_not_bool_subtraction(cx, &st, &what, &[first], span) {
            return Vec::new();
        }
        // tensor-valued extra arguments (`clamp(x, min=t)`) broadcast: not modelled
        if args[1..].iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| matches!(v, Value::Tensor(_))) {
            return vec![(st, Value::Unknown)];
        }
        if in_place {
            // a floating op on an integer or bool `self`: torch raises "result type Float can't
            // be cast to the desired output type Long" (SHP202)
            if kind == Unary::Floating && !super::dtype::check_in_place(cx, &st, &what, t, DType::Float, span) {
                return Vec::new();
            }
            return vec![(st, first.clone())];
        }
        let dtype = match (kind, t.dtype) {
            (Unary::ToBool, _) => Some(DType::Bool),
            (Unary::Same, d) => d,
            (Unary::Floating, Some(d)) if category(d) < 2 => Some(DType::Float),
            (Unary::Floating, d) => d,
        };
        let res = vec![(st, tensor_value(t.shape.clone(), dtype))];
        // strides (super::layout): `contiguous()` makes them contiguous, some ops keep the input's
        return match op {
            "contiguous" => super::layout::contiguous(res),
            _ if super::layout::KEEPS_STRIDES.contains(&op) => super::layout::set(res, |_| t.layout.clone()),
            _ => res,
        };
    }
    if let Some(kind) = binary(op) {
        let other = args.get(1).or_else(|| kwargs.iter().find(|(k, _)| &**k == "other" || &**k == "exponent").map(|(_, v)| v));
        let Some(other) = other else { return vec![(st, Value::Unknown)] };
        if matches!(op, "sub" | "subtract" | "rsub") && !super::dtype::check_not_bool_subtraction(cx, &st, &what, &[first, other], span) {
            return Vec::new();
        }
        // `div(..., rounding_mode=...)` keeps integer dtypes
        let kind = if kind == Binary::TrueDiv && kwargs.iter().any(|(k, v)| &**k == "rounding_mode" && !matches!(v, Value::None)) { Binary::Arith } else { kind };
        return apply_binary(cx, st, kind, first, other, span, &what, if in_place { Write::InPlace } else { Write::New });
    }
    // lerp(a, b, weight), addcmul(a, b, c), addcdiv(a, b, c): all three broadcast (given as
    // keywords: not modelled)
    if args.len() < 3 {
        return vec![(st, Value::Unknown)];
    }
    let mut out = match shape_of(first) {
        Some(s) => s,
        None => return vec![(st, Value::Unknown)],
    };
    for v in args.iter().skip(1).take(2) {
        let Some(s) = shape_of(v) else { return vec![(st, Value::Unknown)] };
        match broadcast(cx, &st, &out, &s, span, &what) {
            Some(o) => out = o,
            None => return Vec::new(),
        }
    }
    if in_place {
        if let Some(s) = shape_of(first)
            && !fits_in_place(cx, &st, &s, &out, span, &what)
        {
            return Vec::new();
        }
        return vec![(st, first.clone())];
    }
    let dtype = match first {
        Value::Tensor(t) if args.iter().skip(1).take(2).all(|v| !matches!(v, Value::Tensor(u) if u.dtype != t.dtype)) => t.dtype,
        _ => None,
    };
    vec![(st, tensor_value(out, dtype))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::{Double, Float, Half, Int, Long};
    use Operand as O;

    #[test]
    fn promotion_follows_result_type() {
        // torch.result_type on the same operands (checked with torch 2.13)
        assert_eq!(promote(O::Tensor(Some(Long), Some(false)), O::Tensor(Some(Double), Some(true))), Some(Double));
        assert_eq!(promote(O::Tensor(Some(Float), Some(false)), O::Tensor(Some(Double), Some(true))), Some(Float));
        assert_eq!(promote(O::Tensor(Some(Long), Some(false)), O::Float), Some(Float));
        assert_eq!(promote(O::Tensor(Some(DType::Bool), Some(false)), O::Int), Some(Long));
        assert_eq!(promote(O::Tensor(Some(Half), Some(false)), O::Float), Some(Half));
        assert_eq!(promote(O::Tensor(Some(Int), Some(false)), O::Tensor(Some(Long), Some(false))), Some(Long));
        assert_eq!(result_dtype(Binary::TrueDiv, O::Tensor(Some(Long), Some(false)), O::Int), Some(Float));
        assert_eq!(result_dtype(Binary::Bitwise, O::Tensor(Some(Float), Some(false)), O::Int), None);
    }

    #[test]
    fn declared_ops_are_modelled() {
        for d in APIS {
            let short = d.name.rsplit('.').next().unwrap();
            assert!(handles(short), "{} is declared but not modelled", d.name);
        }
        for name in SAME.iter().chain(FLOATING).chain(TO_BOOL).chain(ARITH).chain(TRUE_DIV).chain(COMPARE).chain(BITWISE).chain(TERNARY) {
            assert!(APIS.iter().any(|d| d.name.ends_with(&format!(".{name}"))), "{name} is modelled but only in place");
        }
    }

    #[test]
    fn in_place_names() {
        assert!(handles("add_") && handles("exp_") && handles("lerp") && handles("addcmul_"));
        assert!(!handles("view") && !handles("sum"));
    }
}
