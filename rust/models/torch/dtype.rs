//! What tensors hold: the dtypes torch rejects (SHP202).
//!
//! Every tensor carries its dtype (`Tensor::dtype`, `None` when not known): set where it is
//! born (creation functions and `dtype=`, casts, `torch.from_numpy` of a NumPy array, the
//! datasets and their collation) and carried by every model, with torch's promotion rules
//! (`pointwise.rs`). The checks here are the ones torch makes on CPU tensors, each proven
//! against torch (`tests/test_dtypes.py`, the differential suite):
//! - a layer or a product whose operands have different dtypes (`check_weights`,
//!   `check_same`): `nn.Linear`, the convolutions, the recurrent layers, attention, `@`,
//!   `mm`/`bmm`/`matmul`/`einsum`/`addmm`/`F.linear`/`F.conv2d`...;
//! - a normalisation layer whose input does not fit its affine weights or running statistics
//!   (`check_norm`: float16 and bfloat16 inputs may meet float32 weights there);
//! - indices, masks and class indices of a dtype torch rejects (`check_indices`, `check_mask`,
//!   `check_loss`);
//! - reductions and activations torch implements only for floating dtypes (`mean`, `var`,
//!   `std`, `norm`, `softmax`), a loss's input, target and class weights (`check_loss`);
//! - an in-place op whose result torch cannot cast back into the tensor written to
//!   (`check_in_place`: `x /= 255` on a uint8 image).
//!
//! A dtype the core does not tell apart (`DType::Other`) and an unknown one are never
//! reported. Under `autocast` (`device::autocast`) the layers and products cast their inputs:
//! their checks are off.

use std::rc::Rc;

use crate::ir::{Name, Span};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::rules::device_dtype::DtypeMismatch;
use crate::shape::Tri;
use crate::value::*;

/// The name torch prints for a dtype (`torch.float64` without `torch.`).
pub fn name(d: DType) -> &'static str {
    match d {
        DType::Float => "float32",
        DType::Double => "float64",
        DType::Half => "float16",
        DType::BFloat16 => "bfloat16",
        DType::Long => "int64",
        DType::Int => "int32",
        DType::Bool => "bool",
        DType::Byte => "uint8",
        DType::Other => "?",
    }
}

/// The method that casts to a dtype (`.float()`), for the fix a message suggests.
fn cast(d: DType) -> String {
    match d {
        DType::Float => "`.float()`".into(),
        DType::Double => "`.double()`".into(),
        DType::Half => "`.half()`".into(),
        DType::BFloat16 => "`.bfloat16()`".into(),
        DType::Long => "`.long()`".into(),
        DType::Int => "`.int()`".into(),
        DType::Bool => "`.bool()`".into(),
        DType::Byte => "`.byte()`".into(),
        DType::Other => "`.to(...)`".into(),
    }
}

/// A dtype the checks can tell apart: known, and not `Other`.
fn known(d: Option<DType>) -> Option<DType> {
    d.filter(|d| *d != DType::Other)
}

fn integral_or_bool(d: DType) -> bool {
    matches!(d, DType::Long | DType::Int | DType::Byte | DType::Bool)
}

/// SHP202 for a layer with float weights (`nn.Linear`, a convolution, a recurrent layer,
/// attention, `nn.Bilinear`): the input must have their dtype (`mat1 and mat2 must have the
/// same dtype`, `Input type (double) and bias type (float) should be the same`, `RNN input
/// dtype (torch.float64) does not match weight dtype`).
pub fn check_weights(cx: &mut dyn ModelCtx, st: &State, op: &str, weights: Option<DType>, t: &Tensor, span: Span) -> bool {
    let (Some(w), Some(d)) = (known(weights), known(t.dtype)) else { return true };
    if w == d || super::device::autocast() {
        return true;
    }
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::Weights { op, shape: cx.show_shape(st, &t.shape), dtype: name(d).into(), weights: name(w).into(), fix: cast(w) }, Vec::new()))
}

/// SHP202 for a normalisation layer holding tensors (affine weights, running statistics) and
/// for `nn.PReLU`: an integer or bool input (`"batch_norm" not implemented for 'Long'`), or a
/// floating one of another dtype than the weights (`mixed dtype (CPU): all inputs must share
/// same datatype`). With float32 weights a norm also takes float16 and bfloat16 inputs
/// (`low_precision_ok`); PReLU does not.
pub fn check_norm(cx: &mut dyn ModelCtx, st: &State, op: &str, weights: Option<DType>, t: &Tensor, low_precision_ok: bool, span: Span) -> bool {
    let (Some(w), Some(d)) = (known(weights), known(t.dtype)) else { return true };
    let fits = w == d || (low_precision_ok && w == DType::Float && matches!(d, DType::Half | DType::BFloat16));
    if fits || super::device::autocast() {
        return true;
    }
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::Weights { op, shape: cx.show_shape(st, &t.shape), dtype: name(d).into(), weights: name(w).into(), fix: cast(w) }, Vec::new()))
}

/// SHP202 for the operands of a product (`@`, `mm`, `bmm`, `matmul`, `einsum`, `addmm`,
/// `F.linear`, `F.conv2d`, ...): torch does not promote there, every operand must have one dtype
/// (`expected m1 and m2 to have the same dtype, but got: float != double`).
pub fn check_same(cx: &mut dyn ModelCtx, st: &State, op: &str, ts: &[(String, Rc<Tensor>)], span: Span) -> bool {
    if super::device::autocast() {
        return true;
    }
    let mut first: Option<(&str, &Rc<Tensor>, DType)> = None;
    for (k, t) in ts {
        let Some(d) = known(t.dtype) else { continue };
        match first {
            None => first = Some((k, t, d)),
            Some((a, ta, da)) if da != d => {
                let (op, a, b) = (op.to_string(), a.to_string(), k.to_string());
                return cx.check(st, span, Tri::True, |cx| {
                    (
                        DtypeMismatch::Operands { op, a: format!("{a} {}", cx.show_shape(st, &ta.shape)), a_dtype: name(da).into(), b: format!("{b} {}", cx.show_shape(st, &t.shape)), b_dtype: name(d).into() },
                        Vec::new(),
                    )
                });
            }
            Some(_) => {}
        }
    }
    true
}

/// SHP202 for indices: their dtype must be one of `allowed` (`gather(): Expected dtype
/// int32/int64 for index`, `one_hot is only applicable to index tensor of type LongTensor`).
pub fn check_indices(cx: &mut dyn ModelCtx, st: &State, op: &str, t: &Tensor, allowed: &[DType], span: Span) -> bool {
    let Some(d) = known(t.dtype) else { return true };
    if allowed.contains(&d) {
        return true;
    }
    let want = match allowed {
        [DType::Long] => "int64",
        _ => "an integer dtype",
    };
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::Indices { op, shape: cx.show_shape(st, &t.shape), dtype: name(d).into(), want: want.into() }, Vec::new()))
}

/// SHP202 for a mask (`masked_fill`): bool only (`masked_fill_ only supports boolean masks,
/// but got mask with dtype long int`).
pub fn check_mask(cx: &mut dyn ModelCtx, st: &State, op: &str, t: &Tensor, span: Span) -> bool {
    let Some(d) = known(t.dtype) else { return true };
    if d == DType::Bool {
        return true;
    }
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::Mask { op, shape: cx.show_shape(st, &t.shape), dtype: name(d).into() }, Vec::new()))
}

/// SHP202 for an op torch implements only for floating inputs (`mean(): could not infer output
/// dtype`, `std and var only support floating point and complex dtypes`, `"softmax_kernel_impl"
/// not implemented for 'Long'`): an integer or bool input.
pub fn check_floating(cx: &mut dyn ModelCtx, st: &State, op: &str, t: &Tensor, span: Span) -> bool {
    let Some(d) = known(t.dtype) else { return true };
    if !integral_or_bool(d) {
        return true;
    }
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::NotFloating { op, shape: cx.show_shape(st, &t.shape), dtype: name(d).into() }, Vec::new()))
}

/// SHP202 for a bitwise op (`~x`: `~ (operator.invert) is only implemented on integer and
/// Boolean-type tensors`; `a & b`: `"bitwise_and_cpu" not implemented for 'Float'`): an operand
/// of a known floating dtype. False when the path ends.
pub fn check_integral(cx: &mut dyn ModelCtx, st: &State, op: &str, t: &Tensor, span: Span) -> bool {
    let Some(d) = known(t.dtype).filter(|d| d.is_floating()) else { return true };
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::NotIntegral { op, shape: cx.show_shape(st, &t.shape), dtype: name(d).into() }, Vec::new()))
}

/// SHP202 for a subtraction or a negation with a bool operand (`1 - mask`: "Subtraction, the
/// `-` operator, with a bool tensor is not supported"; `-mask`: "Negation, the `-` operator, on
/// a bool tensor is not supported"; `x - True` too, the bool taken as a bool tensor): any of
/// `operands` a tensor known to be bool or a Python bool (the caller passes the operands of an
/// op on tensors). False when the path ends.
pub fn check_not_bool_subtraction(cx: &mut dyn ModelCtx, st: &State, op: &str, operands: &[&Value], span: Span) -> bool {
    let Some(v) = operands.iter().find(|v| matches!(v, Value::Bool(_)) || matches!(v, Value::Tensor(t) if t.dtype == Some(DType::Bool))) else {
        return true;
    };
    let v = (*v).clone();
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| {
        let operand = match &v {
            Value::Tensor(t) => format!("the tensor {}", cx.show_shape(st, &t.shape)),
            Value::Bool(b) => format!("`{}`", if *b { "True" } else { "False" }),
            _ => "an operand".to_string(),
        };
        (DtypeMismatch::BoolArithmetic { op, operand }, Vec::new())
    })
}

/// SHP202 for an op torch implements on the CPU only for float32 and float64 (`torch.fft.*`:
/// `Unsupported dtype Half`; `torch.stft`: `MKL FFT doesn't support tensors of type: Half`): a
/// float16 or bfloat16 input known to be on the CPU. False when the path ends.
pub fn check_low_precision_on_cpu(cx: &mut dyn ModelCtx, st: &State, op: &str, t: &Tensor, span: Span) -> bool {
    let Some(d) = t.dtype.filter(|d| matches!(d, DType::Half | DType::BFloat16)) else { return true };
    if t.device != Some(Device::Cpu) {
        return true;
    }
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::LowPrecisionOnCpu { op, shape: cx.show_shape(st, &t.shape), dtype: name(d).into() }, Vec::new()))
}

/// The losses whose dtypes torch checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossKind {
    /// `CrossEntropyLoss`, `NLLLoss`: class indices (int64 or uint8) or class probabilities.
    Class,
    /// `BCELoss`: a target of the input's dtype.
    Bce,
    /// `BCEWithLogitsLoss`: a floating target.
    BceWithLogits,
}

/// SHP202 for a loss: its input floating; class indices of int64 (or uint8) and class weights
/// of the input's dtype (`expected scalar type Float but found Double`); a BCE target of the
/// input's dtype (`Found dtype Double but expected Float`); a floating BCE-with-logits target
/// (`result type Float can't be cast to the desired output type Long`).
pub fn check_loss(cx: &mut dyn ModelCtx, st: &State, op: &str, kind: LossKind, input: &Tensor, target: &Tensor, weight: Option<&Tensor>, span: Span) -> bool {
    let i = known(input.dtype);
    if let Some(d) = i
        && integral_or_bool(d)
    {
        let op = op.to_string();
        return cx.check(st, span, Tri::True, |cx| (DtypeMismatch::NotFloating { op, shape: cx.show_shape(st, &input.shape), dtype: name(d).into() }, Vec::new()));
    }
    let Some(g) = known(target.dtype) else { return true };
    let want = match kind {
        LossKind::Class => {
            // probability targets have the input's shape: a target of one dim less is class
            // indices; so is one of a shape the input's can never be (`[*, 4]` against `[8]`:
            // torch takes a target as probabilities only when the shapes are equal)
            let (si, sg) = (st.resolve(&input.shape), st.resolve(&target.shape));
            let indices = match (si.prefix, sg.prefix) {
                (None, None) => sg.dims.len() + 1 == si.dims.len(),
                _ => certainly_differ(&si, &sg),
            };
            if !indices {
                return true;
            }
            if !matches!(g, DType::Long | DType::Byte) {
                "int64 class indices".to_string()
            } else {
                let (Some(wt), Some(i)) = (weight, i) else { return true };
                let Some(w) = known(wt.dtype).filter(|w| *w != i) else { return true };
                let op = op.to_string();
                return cx.check(st, span, Tri::True, |cx| (DtypeMismatch::ClassWeights { op, shape: cx.show_shape(st, &wt.shape), dtype: name(w).into(), input: name(i).into() }, Vec::new()));
            }
        }
        LossKind::Bce => match i {
            Some(i) if i != g => format!("{}, the input's dtype", name(i)),
            _ => return true,
        },
        LossKind::BceWithLogits if integral_or_bool(g) => "a floating dtype".to_string(),
        LossKind::BceWithLogits => return true,
    };
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::Target { op, shape: cx.show_shape(st, &target.shape), dtype: name(g).into(), want }, Vec::new()))
}

/// Two shapes that can never be equal: of certainly different ranks, or with two constant
/// dims that differ where they are aligned from the right.
fn certainly_differ(a: &Shape, b: &Shape) -> bool {
    let (m, n) = (a.dims.len(), b.dims.len());
    let ranks = match (a.prefix, b.prefix) {
        (None, None) => m != n,
        // `[*, d...]` has at least its known dims
        (Some(_), None) => n < m,
        (None, Some(_)) => m < n,
        (Some(_), Some(_)) => false,
    };
    ranks || a.dims.iter().rev().zip(b.dims.iter().rev()).any(|(x, y)| matches!((x.as_const(), y.as_const()), (Some(x), Some(y)) if x != y))
}

/// Whether torch can write a result of dtype `result` into a tensor of dtype `target`
/// (`torch.can_cast`): not a floating result into an integer or bool tensor, nor an integer one
/// into a bool tensor.
pub fn can_cast(result: DType, target: DType) -> bool {
    let level = |d: DType| match d {
        DType::Bool => 0,
        DType::Long | DType::Int | DType::Byte => 1,
        _ => 2,
    };
    result == DType::Other || target == DType::Other || level(result) <= level(target)
}

/// SHP202 for an in-place op (`x /= 255`, `x.add_(y)`, `x.sqrt_()`) whose result torch cannot
/// cast into the tensor written to (`result type Float can't be cast to the desired output
/// type Byte`).
pub fn check_in_place(cx: &mut dyn ModelCtx, st: &State, op: &str, target: &Tensor, result: DType, span: Span) -> bool {
    let Some(t) = known(target.dtype) else { return true };
    if can_cast(result, t) {
        return true;
    }
    let op = op.to_string();
    cx.check(st, span, Tri::True, |cx| (DtypeMismatch::InPlace { op, target: cx.show_shape(st, &target.shape), dtype: name(t).into(), result: name(result).into() }, Vec::new()))
}

/// The products whose operands torch requires to have one dtype, by the name of the function
/// or method (`outer`, `ger` and `kron` promote).
const PRODUCTS: &[&str] = &[
    "mm", "bmm", "matmul", "mv", "dot", "vdot", "einsum", "addmm", "baddbmm", "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
];

/// The dtype checks of a library call (a `torch.`/`F.` function, `functional` for `F.`, or a
/// tensor method with its receiver named `self` among `ts`), by its name and its tensor
/// arguments named by the registry's parameters. False when the path ends (torch raises).
pub fn check_call(cx: &mut dyn ModelCtx, st: &State, short: &str, functional: bool, ts: &[(String, Rc<Tensor>)], args: &[Value], kwargs: &[(Name, Value)], span: Span) -> bool {
    let by = |k: &str| ts.iter().find(|(n, _)| n == k).map(|(_, t)| t.clone());
    let op = if functional { format!("F.{short}") } else if by("self").is_some() { format!(".{short}()") } else { format!("torch.{short}") };
    let input = || by("self").or_else(|| by("input"));
    // a `dtype=` argument (by keyword, or a dtype value among the positional ones) casts first
    let cast_first = kwargs.iter().any(|(k, v)| &**k == "dtype" && !matches!(v, Value::None)) || args.iter().any(|a| matches!(a, Value::DType(_)));
    const INDEX: &[DType] = &[DType::Long, DType::Int];
    match short {
        _ if PRODUCTS.contains(&short) => {
            let operands: Vec<(String, Rc<Tensor>)> = ts.iter().filter(|(k, _)| k != "out").cloned().collect();
            check_same(cx, st, &op, &operands, span)
        }
        "gather" | "scatter" | "scatter_add" | "scatter_reduce" | "index_select" => match by("index") {
            Some(i) => check_indices(cx, st, &op, &i, INDEX, span),
            None => true,
        },
        "one_hot" if functional => match by("tensor") {
            Some(i) => check_indices(cx, st, &op, &i, &[DType::Long], span),
            None => true,
        },
        "masked_fill" | "masked_fill_" => match by("mask") {
            Some(m) => check_mask(cx, st, &op, &m, span),
            None => true,
        },
        "mean" | "nanmean" | "softmax" | "log_softmax" if !cast_first => match input() {
            Some(t) => check_floating(cx, st, &op, &t, span),
            None => true,
        },
        "var" | "std" | "norm" if !functional => match input() {
            Some(t) => check_floating(cx, st, &op, &t, span),
            None => true,
        },
        // the functional norms: a floating input, of their weights' dtype
        "layer_norm" | "batch_norm" | "group_norm" | "instance_norm" | "rms_norm" if functional => {
            let Some(t) = by("input") else { return true };
            let params: &[&str] = match short {
                "batch_norm" => &["weight", "bias", "running_mean", "running_var"],
                "rms_norm" => &[],
                _ => &["weight", "bias"],
            };
            let weights = params.iter().find_map(|k| by(k).and_then(|w| known(w.dtype)));
            check_floating(cx, st, &op, &t, span) && check_norm(cx, st, &op, weights, &t, true, span)
        }
        "cross_entropy" | "nll_loss" | "binary_cross_entropy" | "binary_cross_entropy_with_logits" if functional => {
            let kind = match short {
                "binary_cross_entropy" => LossKind::Bce,
                "binary_cross_entropy_with_logits" => LossKind::BceWithLogits,
                _ => LossKind::Class,
            };
            // (SHP308: probabilities where the loss applies softmax or sigmoid itself)
            let applies = match kind {
                LossKind::Class if short == "cross_entropy" => Some(super::activation::Applies::LogSoftmax),
                LossKind::Class => Some(super::activation::Applies::TakesLog),
                LossKind::BceWithLogits => Some(super::activation::Applies::Sigmoid),
                _ => None,
            };
            if let (Some(a), Some(i)) = (applies, by("input")) {
                super::activation::check_loss(cx, st, &op, a, &i, span);
            }
            match (by("input"), by("target")) {
                (Some(i), Some(g)) => check_loss(cx, st, &op, kind, &i, &g, by("weight").as_deref(), span),
                _ => true,
            }
        }
        _ => true,
    }
}
