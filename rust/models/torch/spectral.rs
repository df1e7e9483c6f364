//! Signal processing: the window functions (`torch.hann_window`, `hamming_window`,
//! `blackman_window`, `bartlett_window`, `kaiser_window`) and the short-time Fourier transform
//! (`torch.stft`, `Tensor.stft`). The `torch.fft` module is `fft.rs`.

use super::tensor::{dtype_of, tensor_value};
use crate::ir::{Name, Span};
use crate::models::bind;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::rules::shape::{self as r, InvalidShapeArgument};
use crate::rules::Rule;
use crate::shape::{Formula, Poly, Rel, Tri};
use crate::value::*;

const WINDOW_CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE];

/// `torch.` functions modelled here; `Err(st)` gives the state back when `f` is not one of them.
pub fn function(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    Ok(match f {
        "hann_window" | "hamming_window" | "blackman_window" | "bartlett_window" | "kaiser_window" => window(cx, st, f, args, kwargs, span),
        _ => return Err(st),
    })
}

/// The name torch gives a dtype in messages.
pub(super) fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::Float => "torch.float32",
        DType::Double => "torch.float64",
        DType::Half => "torch.float16",
        DType::BFloat16 => "torch.bfloat16",
        DType::Long => "torch.int64",
        DType::Int => "torch.int32",
        DType::Bool => "torch.bool",
        DType::Other => "a non-floating dtype",
    }
}

/// `*_window(window_length, periodic=True, [alpha, beta | beta], *, dtype=None)`: a 1-D
/// `[window_length]` tensor of a floating dtype (default float32). Torch raises for a negative
/// length and a non-floating dtype. Its overloads take `alpha`/`beta` only after `periodic`
/// (hamming: `beta` only after `alpha`); any other combination is a TypeError: Unknown.
fn window(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let names: &[&str] = match f {
        "hamming_window" => &["window_length", "periodic", "alpha", "beta"],
        "kaiser_window" => &["window_length", "periodic", "beta"],
        _ => &["window_length", "periodic"],
    };
    let b = bind(names, args, kwargs);
    let Some(Value::Int(n)) = b.get("window_length") else { return vec![(st, Value::Unknown)] };
    if !matches!(b.get("periodic"), None | Some(Value::Bool(_))) {
        return vec![(st, Value::Unknown)];
    }
    let number = |v: Option<&Value>| matches!(v, None | Some(Value::Float(_)) | Some(Value::Int(_)));
    if !number(b.get("alpha")) || !number(b.get("beta")) {
        return vec![(st, Value::Unknown)];
    }
    let first_extra = if f == "hamming_window" { "alpha" } else { "beta" };
    let overload_ok = (!b.contains_key(first_extra) || b.contains_key("periodic")) && (f != "hamming_window" || !b.contains_key("beta") || b.contains_key("alpha"));
    if !overload_ok {
        return vec![(st, Value::Unknown)];
    }
    let dtype = match kwargs.iter().find(|(k, _)| &**k == "dtype").map(|(_, v)| v) {
        None | Some(Value::None) => DType::Float,
        Some(v) => match dtype_of(v) {
            Some(d) => d,
            None => return vec![(st, Value::Unknown)],
        },
    };
    let op = format!("torch.{f}");
    let n = n.clone();
    if !cx.check(&st, span, Formula::cmp(&n, Rel::Lt, &Poly::constant(0)), |cx| {
        (InvalidShapeArgument::Negative { op: op.clone(), name: "window_length".into(), value: n.display(cx.syms()) }, Vec::new())
    }) {
        return Vec::new();
    }
    let floating = matches!(dtype, DType::Float | DType::Double | DType::Half | DType::BFloat16);
    if !cx.check(&st, span, Tri::from_bool(!floating), |_| {
        (InvalidShapeArgument::ArgMust { op: op.clone(), name: "dtype".into(), value: dtype_name(dtype).into(), should: "be a floating point dtype".into() }, Vec::new())
    }) {
        return Vec::new();
    }
    vec![(st, tensor_value(Shape::known(vec![Dim::known(n, None)]), Some(dtype)))]
}

/// The APIs this family models, for the registry (`models/registry.rs`). The window's `alpha`
/// and `beta` change its values only, but their presence picks torch's overload (read);
/// `layout`, `device`, `pin_memory` and `requires_grad` change neither shapes nor dtypes.
pub const APIS: &[Decl] = &[
    Decl::function("torch.hann_window", "window_length, periodic=True, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
    Decl::function("torch.hamming_window", "window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
    Decl::function("torch.blackman_window", "window_length, periodic=True, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
    Decl::function("torch.bartlett_window", "window_length, periodic=True, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
    Decl::function("torch.kaiser_window", "window_length, periodic=True, beta=12.0, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
];
