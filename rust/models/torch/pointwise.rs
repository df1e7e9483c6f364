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
use crate::rules::shape as r;
use crate::shape::Tri;

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
    Some(match name {
        "abs" | "absolute" | "neg" | "negative" | "sign" | "sgn" | "square" | "relu" | "floor" | "ceil" | "round" | "trunc"
        | "fix" | "clone" | "detach" | "contiguous" | "positive" | "frac" | "nan_to_num" | "clamp" | "clip" | "cpu" | "cuda" | "pin_memory" | "requires_grad_" | "retain_grad" | "share_memory_" | "zero_" | "fill_"
        | "normal_" | "uniform_" | "exponential_" | "random_" | "cauchy_" | "log_normal_" | "geometric_" | "conj" | "resolve_conj"
        | "resolve_neg" => Unary::Same,
        "exp" | "exp2" | "expm1" | "log" | "log2" | "log10" | "log1p" | "sqrt" | "rsqrt" | "sin" | "cos" | "tan" | "asin"
        | "arcsin" | "acos" | "arccos" | "atan" | "arctan" | "sinh" | "cosh" | "tanh" | "asinh" | "arcsinh" | "acosh"
        | "arccosh" | "atanh" | "arctanh" | "sigmoid" | "erf" | "erfc" | "erfinv" | "reciprocal" | "lgamma" | "digamma"
        | "deg2rad" | "rad2deg" | "logit" | "i0" | "sinc" | "bernoulli" => Unary::Floating,
        "isnan" | "isinf" | "isfinite" | "isposinf" | "isneginf" | "signbit" | "logical_not" | "isreal" => Unary::ToBool,
        _ => return None,
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
    Some(match name {
        "add" | "sub" | "subtract" | "mul" | "multiply" | "maximum" | "minimum" | "fmax" | "fmin" | "remainder" | "fmod"
        | "floor_divide" | "pow" | "rsub" | "clamp_min" | "clamp_max" => Binary::Arith,
        "div" | "divide" | "true_divide" | "atan2" | "arctan2" | "hypot" | "xlogy" | "copysign" => Binary::TrueDiv,
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "greater" | "less" | "greater_equal" | "less_equal" | "not_equal"
        | "logical_and" | "logical_or" | "logical_xor" => Binary::ToBool,
        "bitwise_and" | "bitwise_or" | "bitwise_xor" => Binary::Bitwise,
        _ => return None,
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
        || matches!(name, "lerp" | "lerp_" | "addcmul" | "addcmul_" | "addcdiv" | "addcdiv_" | "copy_")
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
        DType::Int | DType::Long => 1,
        DType::Half | DType::BFloat16 | DType::Float | DType::Double => 2,
        DType::Other => 3,
    }
}

/// The wider of two dtypes of one category.
fn wider(a: DType, b: DType) -> Option<DType> {
    use DType::*;
    Some(match (a, b) {
        _ if a == b => a,
        (Int, Long) | (Long, Int) => Long,
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
fn fits_in_place(cx: &mut dyn ModelCtx, st: &State, target: &Shape, out: &Shape, span: Span, what: &str) -> bool {
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
    let (ts, os) = (cx.show_shape(st, &t), cx.show_shape(st, &o));
    cx.check(st, span, violated, &r::broadcast_shape_mismatch::RULE, |_| {
        (format!("{what}: the in-place result must keep the shape {ts} of the tensor written to, but broadcasting gives {os}"), Vec::new())
    })
}

/// A binary op on two values, at least one a tensor: broadcast the shapes, promote the dtypes;
/// `in_place`: the result is written into `a`.
#[allow(clippy::too_many_arguments)]
fn apply_binary(cx: &mut dyn ModelCtx, st: State, kind: Binary, a: &Value, b: &Value, span: Span, what: &str, in_place: bool) -> Vals {
    let (Some(sa), Some(sb), Some(oa), Some(ob)) = (shape_of(a), shape_of(b), operand(&st, a), operand(&st, b)) else {
        return vec![(st, Value::Unknown)];
    };
    let Some(out) = broadcast(cx, &st, &sa, &sb, span, what) else { return Vec::new() };
    if in_place {
        if !fits_in_place(cx, &st, &sa, &out, span, what) {
            return Vec::new();
        }
        return vec![(st, a.clone())];
    }
    let dtype = result_dtype(kind, oa, ob);
    vec![(st, tensor_value(out, dtype))]
}

/// `a <op> b` (and `a <op>= b` when `in_place`) with a tensor operand.
pub fn operator(cx: &mut dyn ModelCtx, st: State, op: BinOp, a: Value, b: Value, span: Span, in_place: bool) -> Vals {
    let Some(kind) = binop_kind(op) else { return vec![(st, Value::Unknown)] };
    let in_place = in_place && matches!(a, Value::Tensor(_));
    apply_binary(cx, st, kind, &a, &b, span, &format!("operator {}{}", op.symbol(), if in_place { "=" } else { "" }), in_place)
}

/// A comparison operator (`==`, `<`, ...) with a tensor operand: broadcast, bool result.
pub fn comparison(cx: &mut dyn ModelCtx, st: State, a: Value, b: Value, span: Span) -> Vals {
    apply_binary(cx, st, Binary::ToBool, &a, &b, span, "comparison", false)
}

/// A pointwise op called as `torch.name(args...)` or `recv.name(args...)` (then `recv` is the
/// first of `args`). Call only when [`handles`] says so.
pub fn call(cx: &mut dyn ModelCtx, st: State, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span, method: bool) -> Vals {
    let what = if method { format!("Tensor.{name}") } else { format!("torch.{name}") };
    let base = name.strip_suffix('_').filter(|b| unary(name).is_none() && binary(name).is_none() && (unary(b).is_some() || binary(b).is_some()));
    let (op, in_place) = match base {
        Some(b) => (b, true),
        None => (name, false),
    };
    let Some(first) = args.first() else { return vec![(st, Value::Unknown)] };
    if name == "copy_" {
        // `dst.copy_(src)`: src broadcasts to dst's shape
        return match args.get(1) {
            Some(src) => apply_binary(cx, st, Binary::Arith, first, src, span, &what, true),
            None => vec![(st, Value::Unknown)],
        };
    }
    if let Some(kind) = unary(op) {
        let Value::Tensor(t) = first else { return vec![(st, Value::Unknown)] };
        // tensor-valued extra arguments (`clamp(x, min=t)`) broadcast: not modelled
        if args[1..].iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| matches!(v, Value::Tensor(_))) {
            return vec![(st, Value::Unknown)];
        }
        if in_place {
            return vec![(st, first.clone())];
        }
        let dtype = match (kind, t.dtype) {
            (Unary::ToBool, _) => Some(DType::Bool),
            (Unary::Same, d) => d,
            (Unary::Floating, Some(d)) if category(d) < 2 => Some(DType::Float),
            (Unary::Floating, d) => d,
        };
        return vec![(st, tensor_value(t.shape.clone(), dtype))];
    }
    if let Some(kind) = binary(op) {
        let other = args.get(1).or_else(|| kwargs.iter().find(|(k, _)| &**k == "other" || &**k == "exponent").map(|(_, v)| v));
        let Some(other) = other else { return vec![(st, Value::Unknown)] };
        // `div(..., rounding_mode=...)` keeps integer dtypes
        let kind = if kind == Binary::TrueDiv && kwargs.iter().any(|(k, v)| &**k == "rounding_mode" && !matches!(v, Value::None)) { Binary::Arith } else { kind };
        return apply_binary(cx, st, kind, first, other, span, &what, in_place);
    }
    // lerp(a, b, weight), addcmul(a, b, c), addcdiv(a, b, c): all three broadcast
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
    fn in_place_names() {
        assert!(handles("add_") && handles("exp_") && handles("lerp") && handles("addcmul_"));
        assert!(!handles("view") && !handles("sum"));
    }
}
