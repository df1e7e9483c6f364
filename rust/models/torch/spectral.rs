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

const STFT_FN: &str = "input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode=\"reflect\", ~normalized=False, onesided=None, return_complex=None, align_to_window=None";
const STFT_METHOD: &str = "n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode=\"reflect\", ~normalized=False, onesided=None, return_complex=None, align_to_window=None";
const STFT_CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::layer_input_rank_mismatch::RULE];
const WINDOW_CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE];

/// `torch.` functions modelled here; `Err(st)` gives the state back when `f` is not one of them.
pub fn function(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    Ok(match f {
        "hann_window" | "hamming_window" | "blackman_window" | "bartlett_window" | "kaiser_window" => window(cx, st, f, args, kwargs, span),
        "stft" => {
            let b = bind(STFT, args, kwargs);
            match b.get("input") {
                Some(Value::Tensor(t)) => stft(cx, st, &t.clone(), &b, "torch.stft", span),
                _ => vec![(st, Value::Unknown)],
            }
        }
        _ => return Err(st),
    })
}

/// `x.stft(...)`: `Err(st)` when `name` is not modelled here.
pub fn method(cx: &mut dyn ModelCtx, st: State, t: &Tensor, name: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Result<Vals, State> {
    Ok(match name {
        "stft" => stft(cx, st, t, &bind(&STFT[1..], args, kwargs), "Tensor.stft", span),
        _ => return Err(st),
    })
}

const STFT: &[&str] = &["input", "n_fft", "hop_length", "win_length", "window", "center", "pad_mode", "normalized", "onesided", "return_complex", "align_to_window"];

/// A known int argument, its default when absent or None; None when not known.
fn const_arg(b: &std::collections::BTreeMap<&str, Value>, name: &str, default: Option<i128>) -> Option<Option<i128>> {
    match b.get(name) {
        None | Some(Value::None) => Some(default),
        Some(Value::Bool(_)) => None,
        Some(v) => v.as_const_int().map(Some),
    }
}

/// `stft(input, n_fft, hop_length=n_fft//4, win_length=n_fft, window=None, center=True,
/// pad_mode="reflect", normalized=False, onesided=None, return_complex=None)` of a real 1-D
/// `[L]` or 2-D `[B, L]` signal: `[B?, n_fft // 2 + 1 (onesided; else n_fft), frames(, 2)]`
/// with `frames = 1 + (L' - n_fft) // hop_length`, `L' = L + 2 * (n_fft // 2)` when centered.
/// torch's checks: `return_complex` given, a floating 1-D/2-D input, reflect padding shorter
/// than the signal, `0 < n_fft <= L'`, `hop_length > 0`, `0 < win_length <= n_fft`, a 1-D
/// window of `win_length` values, `align_to_window` only without `center`. The complex result
/// has an unknown dtype; a complex input, `align_to_window` and the rarer pad modes are Unknown.
fn stft(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &std::collections::BTreeMap<&str, Value>, what: &str, span: Span) -> Vals {
    let unknown = |st| vec![(st, Value::Unknown)];
    let must = |name: &str, value: String, should: String| InvalidShapeArgument::ArgMust { op: what.into(), name: name.into(), value, should };
    let center = match b.get("center") {
        None => true,
        Some(Value::Bool(c)) => *c,
        Some(_) => return unknown(st),
    };
    let align = !matches!(b.get("align_to_window"), None | Some(Value::None));
    if !cx.check(&st, span, Tri::from_bool(center && align), |_| (must("align_to_window", "set".into(), "be None when center=True".into()), Vec::new())) {
        return Vec::new();
    }
    if align {
        return unknown(st);
    }
    let complex = match b.get("return_complex") {
        None | Some(Value::None) => None,
        Some(Value::Bool(c)) => Some(*c),
        Some(_) => return unknown(st),
    };
    let onesided = match b.get("onesided") {
        None | Some(Value::None) => None,
        Some(Value::Bool(c)) => Some(*c),
        Some(_) => return unknown(st),
    };
    let (Some(Some(n_fft)), Some(hop), Some(win)) = (const_arg(b, "n_fft", None), const_arg(b, "hop_length", None), const_arg(b, "win_length", None)) else { return unknown(st) };
    let mode = match b.get("pad_mode") {
        None => "reflect".to_string(),
        Some(v) => match v.as_str() {
            Some(m @ ("reflect" | "constant")) => m.to_string(),
            _ => return unknown(st),
        },
    };
    // the input: real floating (a complex one, of unknown dtype here, changes the default onesided)
    let in_dt = match t.dtype {
        Some(d @ (DType::Float | DType::Double)) => d,
        Some(DType::Half | DType::BFloat16) if !super::dtype::check_low_precision_on_cpu(cx, &st, "torch.stft", t, span) => return Vec::new(),
        Some(DType::Long | DType::Int | DType::Bool) => {
            cx.check(&st, span, Tri::True, |_| (must("input", dtype_name(t.dtype.unwrap()).into(), "be a floating point (or complex) tensor".into()), Vec::new()));
            return Vec::new();
        }
        _ => return unknown(st),
    };
    let window = match b.get("window") {
        None | Some(Value::None) => None,
        Some(Value::Tensor(w)) => match w.dtype {
            Some(DType::Float | DType::Double) => Some(w.clone()),
            _ => return unknown(st),
        },
        Some(_) => return unknown(st),
    };
    if !cx.check(&st, span, Tri::from_bool(complex.is_none()), |_| (must("return_complex", "None".into(), "be given for a real input (return_complex=True)".into()), Vec::new())) {
        return Vec::new();
    }
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return unknown(st) };
    if !cx.check(&st, span, Tri::from_bool(!(1..=2).contains(&rank)), |cx| {
        (r::LayerInputRankMismatch::Expected { prefix: format!("{what}: "), want: "1-D or 2-D".into(), rank: rank.to_string(), shape: cx.show_shape(&st, &s) }, Vec::new())
    }) {
        return Vec::new();
    }
    if rank == 2 && s.dims[0].as_const() == Some(0) {
        return unknown(st);
    }
    let Some(len) = s.dims[rank - 1].v.clone() else { return unknown(st) };
    let pad = if center { n_fft.div_euclid(2) } else { 0 };
    if mode == "reflect" && pad > 0 {
        let bad = Formula::cmp(&len, Rel::Le, &Poly::constant(pad));
        if !cx.check(&st, span, bad, |cx| {
            (InvalidShapeArgument::ReflectPad { op: format!("{what} (center=True)"), pad: pad.to_string(), size: len.display(cx.syms()), dim: (rank - 1).to_string(), input: cx.show_shape(&st, &s) }, Vec::new())
        }) {
            return Vec::new();
        }
    }
    let Some(padded) = len.add_const(2 * pad) else { return unknown(st) };
    let hop = hop.unwrap_or(n_fft.div_euclid(4));
    let win = win.unwrap_or(n_fft);
    if !cx.check(&st, span, Tri::from_bool(n_fft <= 0), |_| (InvalidShapeArgument::NotPositive { op: what.into(), name: "n_fft".into(), value: n_fft.to_string() }, Vec::new())) {
        return Vec::new();
    }
    if !cx.check(&st, span, Formula::cmp(&padded, Rel::Lt, &Poly::constant(n_fft)), |cx| {
        (must("n_fft", n_fft.to_string(), format!("be at most the length of the {}signal, {}", if center { "padded " } else { "" }, padded.display(cx.syms()))), Vec::new())
    }) {
        return Vec::new();
    }
    if !cx.check(&st, span, Tri::from_bool(hop <= 0), |_| (InvalidShapeArgument::NotPositive { op: what.into(), name: "hop_length".into(), value: hop.to_string() }, Vec::new())) {
        return Vec::new();
    }
    if !cx.check(&st, span, Tri::from_bool(win <= 0 || win > n_fft), |_| (must("win_length", win.to_string(), format!("be in 1..=n_fft ({n_fft})")), Vec::new())) {
        return Vec::new();
    }
    if let Some(w) = &window {
        let ws = st.resolve(&w.shape);
        let ok = match ws.rank() {
            Some(1) => match ws.dims[0].as_const() {
                Some(c) => Tri::from_bool(c == win),
                None => return unknown(st),
            },
            Some(_) => Tri::False,
            None => return unknown(st),
        };
        if !cx.check(&st, span, ok.not(), |cx| (must("window", cx.show_shape(&st, &ws), format!("be 1-D with win_length={win} values")), Vec::new())) {
            return Vec::new();
        }
    }
    let freqs = if onesided.unwrap_or(true) { n_fft / 2 + 1 } else { n_fft };
    let Some(frames) = padded.add_const(-n_fft).and_then(|p| p.floordiv(&Poly::constant(hop))).and_then(|p| p.add_const(1)) else { return unknown(st) };
    let mut dims: Vec<Dim> = s.dims[..rank - 1].to_vec();
    dims.push(Dim::konst(freqs));
    dims.push(Dim::known(frames, None));
    let dtype = if complex == Some(true) {
        None
    } else {
        dims.push(Dim::konst(2));
        // the real view of the complex result: the input's and the window's promoted dtype
        match &window {
            Some(w) if w.dtype != Some(in_dt) => Some(DType::Double),
            _ => Some(in_dt),
        }
    };
    vec![(st, tensor_value(Shape::known(dims), dtype))]
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
        DType::Byte => "torch.uint8",
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
    float_vector(cx, st, &format!("torch.{f}"), "window_length", n.clone(), dtype, span)
}

/// A new 1-D tensor of `len` values of the floating `dtype` (a window, `fftfreq`): torch raises
/// for a negative length (`name` in the message) and a non-floating dtype.
pub(super) fn float_vector(cx: &mut dyn ModelCtx, st: State, op: &str, name: &str, len: Poly, dtype: DType, span: Span) -> Vals {
    if !cx.check(&st, span, Formula::cmp(&len, Rel::Lt, &Poly::constant(0)), |cx| {
        (InvalidShapeArgument::Negative { op: op.into(), name: name.into(), value: len.display(cx.syms()) }, Vec::new())
    }) {
        return Vec::new();
    }
    if !cx.check(&st, span, Tri::from_bool(!dtype.is_floating()), |_| {
        (InvalidShapeArgument::ArgMust { op: op.into(), name: "dtype".into(), value: dtype_name(dtype).into(), should: "be a floating point dtype".into() }, Vec::new())
    }) {
        return Vec::new();
    }
    vec![(st, tensor_value(Shape::known(vec![Dim::known(len, None)]), Some(dtype)))]
}

/// The APIs this family models, for the registry (`models/registry.rs`). The window's `alpha`
/// and `beta` change its values only, but their presence picks torch's overload (read);
/// `layout`, `device`, `pin_memory` and `requires_grad` change neither shapes nor dtypes.
pub const APIS: &[Decl] = &[
    // `normalized` scales the values only
    Decl::function("torch.stft", STFT_FN).checks(STFT_CHECKS),
    Decl::method("torch.Tensor.stft", STFT_METHOD).checks(STFT_CHECKS),
    Decl::function("torch.hann_window", "window_length, periodic=True, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
    Decl::function("torch.hamming_window", "window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
    Decl::function("torch.blackman_window", "window_length, periodic=True, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
    Decl::function("torch.bartlett_window", "window_length, periodic=True, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
    Decl::function("torch.kaiser_window", "window_length, periodic=True, beta=12.0, *, dtype=None, ~layout=torch.strided, ~device=None, ~pin_memory=False, ~requires_grad=False").checks(WINDOW_CHECKS),
];
