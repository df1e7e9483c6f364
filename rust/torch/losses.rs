//! Loss modules and their functional twins: input/target agreement (SHP108).

use super::tensor::{broadcast, tensor_value};
use crate::engine::interp::{Interp, Vals};
use crate::engine::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape as r;
use crate::shape::{Formula, Tri};

pub fn is_loss(kind: &str) -> bool {
    matches!(
        kind,
        "CrossEntropyLoss" | "NLLLoss" | "MSELoss" | "L1Loss" | "SmoothL1Loss" | "HuberLoss" | "BCELoss" | "BCEWithLogitsLoss"
    )
}

/// Map a functional name to its module kind.
pub fn functional_kind(f: &str) -> Option<&'static str> {
    Some(match f {
        "cross_entropy" => "CrossEntropyLoss",
        "nll_loss" => "NLLLoss",
        "mse_loss" => "MSELoss",
        "l1_loss" => "L1Loss",
        "smooth_l1_loss" => "SmoothL1Loss",
        "huber_loss" => "HuberLoss",
        "binary_cross_entropy" => "BCELoss",
        "binary_cross_entropy_with_logits" => "BCEWithLogitsLoss",
        _ => return None,
    })
}

fn reduction(v: Option<&Value>) -> Option<&str> {
    match v {
        None => Some("mean"),
        Some(Value::Str(Some(s))) => Some(match &**s {
            "none" => "none",
            "sum" => "sum",
            _ => "mean",
        }),
        _ => None,
    }
}

/// Check `loss(input, target)`; `red` is the reduction argument.
pub fn call_loss(interp: &mut Interp, st: State, kind: &str, input: &Value, target: &Value, red: Option<&Value>, who: &str, span: Span) -> Vals {
    let (Value::Tensor(x), Value::Tensor(y)) = (input, target) else { return vec![(st, Value::Unknown)] };
    let Some(red) = reduction(red) else { return vec![(st, Value::Unknown)] };
    let sx = st.resolve(&x.shape);
    let sy = st.resolve(&y.shape);
    let scalar = |st: State, shape: Shape| {
        let s = if red == "none" { shape } else { Shape::known(Vec::new()) };
        vec![(st, tensor_value(s, x.dtype))]
    };
    let (sxs, sys) = (interp.show_shape(&st, &sx), interp.show_shape(&st, &sy));
    match kind {
        "CrossEntropyLoss" | "NLLLoss" => {
            let (Some(rx), Some(ry)) = (sx.rank(), sy.rank()) else { return vec![(st, Value::Unknown)] };
            let is_index = matches!(y.dtype, Some(DType::Long | DType::Int));
            let is_float = matches!(y.dtype, Some(DType::Float | DType::Double | DType::Half | DType::BFloat16));
            if rx == 0 {
                return vec![(st, Value::Unknown)];
            }
            // class-index targets have the input's shape without the class dim
            if is_index || (!is_float && ry + 1 == rx) {
                if rx == 1 {
                    let bad = Tri::from_bool(ry != 0);
                    if !interp.check(&st, span, bad, &r::loss_target_mismatch::RULE, |_| {
                        (format!("{who}{kind}: unbatched input {sxs} expects a 0-D class-index target, got {sys}"), Vec::new())
                    }) {
                        return Vec::new();
                    }
                    return scalar(st, Shape::known(Vec::new()));
                }
                if ry + 1 != rx {
                    let msg = if rx == 2 && ry >= 2 {
                        format!("{who}{kind}: class-index target {sys} must be 1-D for input {sxs} (0D or 1D target tensor expected, multi-target not supported)")
                    } else {
                        format!("{who}{kind}: class-index target {sys} must have {} dims for input {sxs}", rx - 1)
                    };
                    if !interp.check(&st, span, Tri::from_bool(is_index), &r::loss_target_mismatch::RULE, |_| (msg, Vec::new())) {
                        return Vec::new();
                    }
                    return vec![(st, Value::Unknown)];
                }
                let mut expect = vec![sx.dims[0].clone()];
                expect.extend(sx.dims[2..].iter().cloned());
                for (k, (a, b)) in expect.iter().zip(sy.dims.iter()).enumerate() {
                    let eq = interp.dim_eq_f(a, b);
                    let (da, db) = (interp.show_dim(a), interp.show_dim(b));
                    let what = if k == 0 { format!("input batch size {da} does not match target batch size {db}") } else { format!("dim {k}: {da} vs {db}") };
                    if !interp.check(&st, span, eq.not(), &r::loss_target_mismatch::RULE, |_| {
                        (format!("{who}{kind}: {what} (input {sxs}, target {sys})"), Vec::new())
                    }) {
                        return Vec::new();
                    }
                }
                return scalar(st, Shape::known(expect));
            }
            if is_float && kind == "CrossEntropyLoss" && rx == ry {
                // class probabilities: same shape
                for (a, b) in sx.dims.iter().zip(sy.dims.iter()) {
                    let eq = interp.dim_eq_f(a, b);
                    if !interp.check(&st, span, eq.not(), &r::loss_target_mismatch::RULE, |_| {
                        (format!("{who}{kind}: probability target {sys} must have the input's shape {sxs}"), Vec::new())
                    }) {
                        return Vec::new();
                    }
                }
                return scalar(st, Shape::known(Vec::new()));
            }
            vec![(st, Value::Unknown)]
        }
        "BCELoss" | "BCEWithLogitsLoss" => {
            if sx.prefix.is_some() || sy.prefix.is_some() {
                return vec![(st, Value::Unknown)];
            }
            // the shapes must be equal
            let violated = if sx.dims.len() != sy.dims.len() {
                Formula::Const(true)
            } else {
                Formula::Or(sx.dims.iter().zip(sy.dims.iter()).map(|(a, b)| interp.dim_eq_f(a, b).not()).collect())
            };
            if !interp.check(&st, span, violated, &r::loss_target_mismatch::RULE, |_| {
                (format!("{who}{kind}: target size {sys} must be the same as input size {sxs}"), Vec::new())
            }) {
                return Vec::new();
            }
            scalar(st, sx)
        }
        _ => {
            // elementwise regression losses broadcast (torch warns when sizes differ)
            let Some(s) = broadcast(interp, &st, &sx, &sy, span, &format!("{who}{kind}")) else { return Vec::new() };
            scalar(st, s)
        }
    }
}

pub fn functional_loss(interp: &mut Interp, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Option<Vals> {
    let kind = functional_kind(f)?;
    let b = super::bind(&["input", "target"], args, kwargs);
    let (Some(x), Some(y)) = (b.get("input"), b.get("target")) else { return Some(vec![(st, Value::Unknown)]) };
    let red = kwargs.iter().find(|(k, _)| &**k == "reduction").map(|(_, v)| v);
    let who = format!("F.{f} ");
    Some(call_loss(interp, st, kind, x, y, red, &who, span))
}
