//! `torch.fft`: the discrete Fourier transforms (`fft`, `ifft`, `rfft`, `irfft`, `hfft`,
//! `ihfft`, and their `2`/`n` forms), `fftshift`/`ifftshift` and `fftfreq`/`rfftfreq`.
//!
//! The value model has no complex dtype, so a complex result has an unknown dtype, and a
//! transform that needs a real input (`rfft`, `ihfft` and their `2`/`n` forms) is modelled only when
//! the input's dtype is known (and real). Half and bfloat16 inputs are unsupported on the CPU
//! (SHP202, `dtype::check_low_precision_on_cpu`) and Unknown elsewhere.

use super::spectral::float_vector;
use super::tensor::{check_dim, tensor_value};
use crate::ir::{Name, Span};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use super::layers::{bind, Bound};
use crate::models::registry::{self, Decl};
use crate::rules::shape::{self as r, DimOutOfRange, InvalidShapeArgument};
use crate::rules::Rule;
use crate::shape::{Formula, Poly, Rel, Tri};
use crate::value::*;

const FFT_CHECKS: &[&Rule] = &[&r::dim_out_of_range::RULE, &r::invalid_shape_argument::RULE];
const FREQ_CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE];

/// How a transform maps sizes: complex to complex, real to half-spectrum, half-spectrum to real.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    C2C,
    R2C,
    C2R,
}

fn kind_of(f: &str) -> Option<(Kind, bool)> {
    // (kind, one-dimensional)
    Some(match f {
        "fft" | "ifft" => (Kind::C2C, true),
        "rfft" | "ihfft" => (Kind::R2C, true),
        "irfft" | "hfft" => (Kind::C2R, true),
        "fft2" | "ifft2" | "fftn" | "ifftn" => (Kind::C2C, false),
        "rfft2" | "rfftn" | "ihfft2" | "ihfftn" => (Kind::R2C, false),
        "irfft2" | "irfftn" | "hfft2" | "hfftn" => (Kind::C2R, false),
        _ => return None,
    })
}

/// `torch.fft.f(...)`: resolved once in the registry; an undeclared name or an unread argument
/// is Unknown.
pub fn call(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Some(api) = registry::lookup_in("torch.fft", f).filter(|api| api.accepts(&args, &kwargs)) else { return vec![(st, Value::Unknown)] };
    let b = bind(&api.params, &args, &kwargs);
    let what = format!("torch.fft.{f}");
    match f {
        "fftfreq" | "rfftfreq" => return freq(cx, st, f == "rfftfreq", &b, &what, span),
        _ => {}
    }
    let Some(Value::Tensor(t)) = b.get("input").cloned() else { return vec![(st, Value::Unknown)] };
    match f {
        "fftshift" | "ifftshift" => shift(cx, st, &t, &b, &what, span),
        _ => match kind_of(f) {
            Some((kind, one)) => transform(cx, st, &t, kind, one, f, &b, &what, span),
            None => vec![(st, Value::Unknown)],
        },
    }
}

/// An int or a sequence of known ints (`dim=(0, 1)`, `s=[4, 6]`).
fn ints(cx: &mut dyn ModelCtx, st: &mut State, v: &Value, span: Span) -> Option<Vec<i128>> {
    match v {
        Value::Bool(_) => None,
        Value::Int(p) => Some(vec![p.as_const()?]),
        _ => cx.iterate(st, v, span)?.iter().map(|x| if matches!(x, Value::Bool(_)) { None } else { x.as_const_int() }).collect(),
    }
}

/// Check the dims of a transform against a known rank: in range, no repeats. The normalised
/// dims, or `Err(())` when torch raises (recorded), or `Ok(None)` when not known.
fn norm_dims(cx: &mut dyn ModelCtx, st: &State, s: &Shape, dims: &[i128], what: &str, span: Span) -> Result<Vec<usize>, ()> {
    let mut out = Vec::new();
    for d in dims {
        match check_dim(cx, st, s, *d, span, what) {
            Some(usize::MAX) | None => return Err(()),
            Some(i) => out.push(i),
        }
    }
    let mut sorted = out.clone();
    sorted.sort_unstable();
    sorted.dedup();
    let repeated = sorted.len() != out.len();
    if !cx.check(st, span, Tri::from_bool(repeated), |_| {
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "dim".into(), value: format!("{dims:?}"), should: "not name a dim twice".into() }, Vec::new())
    }) {
        return Err(());
    }
    Ok(out)
}

/// `norm`: None, "forward", "backward" or "ortho" (torch raises for another string). False
/// when torch raises (recorded) or the value is not known (`*unknown` set).
fn check_norm(cx: &mut dyn ModelCtx, st: &State, v: Option<&Value>, what: &str, span: Span, unknown: &mut bool) -> bool {
    let s = match v {
        None | Some(Value::None) => return true,
        Some(v) => match v.as_str() {
            Some(s) => s.to_string(),
            None => {
                *unknown = true;
                return false;
            }
        },
    };
    cx.check(st, span, Tri::from_bool(!matches!(s.as_str(), "forward" | "backward" | "ortho")), |_| {
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "norm".into(), value: format!("{s:?}"), should: "be \"forward\", \"backward\" or \"ortho\"".into() }, Vec::new())
    })
}

/// One transform (`fft`: `n`/`dim`; `fftn`: `s`/`dim`): the transformed dims get the signal
/// length (given, else the input's size; `C2R` default on the last dim: `2 * (size - 1)`), and
/// the last one of an `R2C` transform the half spectrum `n // 2 + 1`. Every signal length must
/// be at least 1.
#[allow(clippy::too_many_arguments)]
fn transform(cx: &mut dyn ModelCtx, st: State, t: &Tensor, kind: Kind, one: bool, f: &str, b: &Bound, what: &str, span: Span) -> Vals {
    let mut st = st;
    let in_dt = match t.dtype {
        // on the CPU torch raises "Unsupported dtype Half" (SHP202); elsewhere not modelled
        Some(DType::Half | DType::BFloat16) if !super::dtype::check_low_precision_on_cpu(cx, &st, what, t, span) => return Vec::new(),
        Some(DType::Half | DType::BFloat16 | DType::Other) => return vec![(st, Value::Unknown)],
        None if kind == Kind::R2C => return vec![(st, Value::Unknown)],
        d => d,
    };
    let mut unknown = false;
    if !check_norm(cx, &st, b.get("norm"), what, span, &mut unknown) {
        return if unknown { vec![(st, Value::Unknown)] } else { Vec::new() };
    }
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    // the requested lengths (None: the default) and dims
    let (lens, dims): (Vec<Option<i128>>, Vec<i128>) = if one {
        let n = match b.get("n") {
            None | Some(Value::None) => None,
            Some(Value::Int(p)) => match p.as_const() {
                Some(c) => Some(c),
                None => return vec![(st, Value::Unknown)],
            },
            Some(_) => return vec![(st, Value::Unknown)],
        };
        let d = match b.get("dim") {
            None => -1,
            Some(Value::Int(p)) => match p.as_const() {
                Some(c) => c,
                None => return vec![(st, Value::Unknown)],
            },
            Some(_) => return vec![(st, Value::Unknown)],
        };
        if rank == 0 {
            cx.check(&st, span, Tri::True, |_| (DimOutOfRange::Dim { op: what.into(), dim: d.to_string(), rank: "0".into(), shape: "[]".into(), lo: "-1".into(), hi: "0".into() }, Vec::new()));
            return Vec::new();
        }
        if let Some(n) = n
            && !cx.check(&st, span, Tri::from_bool(n < 1), |_| (InvalidShapeArgument::NotPositive { op: what.into(), name: "n".into(), value: n.to_string() }, Vec::new()))
        {
            return Vec::new();
        }
        (vec![n], vec![d])
    } else {
        if rank == 0 {
            return vec![(st, Value::Unknown)];
        }
        let sv = match b.get("s") {
            None | Some(Value::None) => None,
            Some(v) => match ints(cx, &mut st, v, span) {
                Some(v) => Some(v),
                None => return vec![(st, Value::Unknown)],
            },
        };
        let default_dims: Option<Vec<i128>> = if f.ends_with('2') { Some(vec![-2, -1]) } else { None };
        let dv = match b.get("dim") {
            None | Some(Value::None) => default_dims,
            Some(v) => match ints(cx, &mut st, v, span) {
                Some(v) => Some(v),
                None => return vec![(st, Value::Unknown)],
            },
        };
        let dims = match (&sv, dv) {
            (Some(sv), Some(dv)) => {
                if !cx.check(&st, span, Tri::from_bool(sv.len() != dv.len()), |_| {
                    (InvalidShapeArgument::ArgMust { op: what.into(), name: "s".into(), value: format!("{sv:?}"), should: format!("have as many values as dim {dv:?}") }, Vec::new())
                }) {
                    return Vec::new();
                }
                dv
            }
            (Some(sv), None) => {
                if !cx.check(&st, span, Tri::from_bool(sv.len() > rank), |cx| {
                    (InvalidShapeArgument::ArgMust { op: what.into(), name: "s".into(), value: format!("{sv:?}"), should: format!("have at most one value per dim of the {rank}-D input {}", cx.show_shape(&st, &s)) }, Vec::new())
                }) {
                    return Vec::new();
                }
                (rank - sv.len()..rank).map(|i| i as i128).collect()
            }
            (None, Some(dv)) => dv,
            (None, None) => (0..rank as i128).collect(),
        };
        if dims.is_empty() {
            return vec![(st, Value::Unknown)];
        }
        let lens: Vec<Option<i128>> = match sv {
            Some(sv) => {
                for n in &sv {
                    if !cx.check(&st, span, Tri::from_bool(*n < 1 && *n != -1), |_| (InvalidShapeArgument::NotPositive { op: what.into(), name: "s".into(), value: n.to_string() }, Vec::new())) {
                        return Vec::new();
                    }
                }
                sv.into_iter().map(|n| (n != -1).then_some(n)).collect()
            }
            None => vec![None; dims.len()],
        };
        (lens, dims)
    };
    let Ok(norm) = norm_dims(cx, &st, &s, &dims, what, span) else { return Vec::new() };
    let mut out = s.dims.clone();
    let last = norm.len() - 1;
    for (k, (i, n)) in norm.iter().zip(&lens).enumerate() {
        let size = s.dims[*i].v.clone();
        // the signal length: given, else the input's size (C2R's last dim: 2 * (size - 1))
        let len = match n {
            Some(n) => Some(Poly::constant(*n)),
            None if kind == Kind::C2R && k == last => size.as_ref().and_then(|m| m.add_const(-1)).and_then(|m| m.mul(&Poly::constant(2))),
            None => size.clone(),
        };
        if n.is_none()
            && let Some(l) = &len
            && !cx.check(&st, span, Formula::cmp(l, Rel::Lt, &Poly::constant(1)), |cx| {
                (InvalidShapeArgument::NotPositive { op: what.into(), name: format!("the number of data points along dim {i} of input {}", cx.show_shape(&st, &s)), value: l.display(cx.syms()) }, Vec::new())
            })
        {
            return Vec::new();
        }
        let new = if kind == Kind::R2C && k == last { len.and_then(|l| l.floordiv(&Poly::constant(2))).and_then(|h| h.add_const(1)) } else { len };
        out[*i] = Dim { v: new, why: None };
    }
    // an empty batch around a transform is an error of the CPU backend (MKL), not of torch's checks
    if out.iter().any(|d| d.as_const() == Some(0)) {
        return vec![(st, Value::Unknown)];
    }
    let dtype = match (kind, in_dt) {
        (Kind::C2R, Some(DType::Double)) => Some(DType::Double),
        (Kind::C2R, Some(DType::Float | DType::Long | DType::Int | DType::Bool)) => Some(DType::Float),
        _ => None,
    };
    vec![(st, tensor_value(Shape::known(out), dtype))]
}

/// `fftshift`/`ifftshift(input, dim=None)`: the input's shape and dtype; the dims in range
/// (repeats are allowed); a 0-D input without dims raises (`shifts` required).
fn shift(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, what: &str, span: Span) -> Vals {
    let mut st = st;
    let s = st.resolve(&t.shape);
    let dims = match b.get("dim") {
        None | Some(Value::None) => None,
        Some(v) => match ints(cx, &mut st, v, span) {
            Some(v) => Some(v),
            None => return vec![(st, Value::Unknown)],
        },
    };
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    match dims {
        None if rank == 0 => return vec![(st, Value::Unknown)],
        None => {}
        Some(ds) => {
            if ds.is_empty() || rank == 0 {
                return vec![(st, Value::Unknown)];
            }
            for d in ds {
                match check_dim(cx, &st, &s, d, span, what) {
                    Some(usize::MAX) => return Vec::new(),
                    None => return vec![(st, Value::Unknown)],
                    Some(_) => {}
                }
            }
        }
    }
    vec![(st, tensor_value(t.shape.clone(), t.dtype))]
}

/// `fftfreq(n, d=1.0, *, dtype=None)`: `[n]` (`rfftfreq`: `[n // 2 + 1]`) of a floating dtype.
/// torch raises for a negative `n` (fftfreq) and an integer dtype.
fn freq(cx: &mut dyn ModelCtx, st: State, half: bool, b: &Bound, what: &str, span: Span) -> Vals {
    let Some(Value::Int(n)) = b.get("n") else { return vec![(st, Value::Unknown)] };
    let dtype = match b.get("dtype") {
        None | Some(Value::None) => DType::Float,
        Some(v) => match v.as_dtype() {
            Some(d) => d,
            None => return vec![(st, Value::Unknown)],
        },
    };
    if !matches!(b.get("d"), None | Some(Value::Float(_)) | Some(Value::Int(_))) {
        return vec![(st, Value::Unknown)];
    }
    let n = n.clone();
    let len = if half {
        // torch computes n / 2 + 1 in C++ (truncating, as Rust's `/` does)
        match n.as_const() {
            Some(c) => Poly::constant(c / 2 + 1),
            // floor division equals truncation when n is known to be non-negative
            None if cx.poly_cmp(&st, &n, Rel::Lt, &Poly::constant(0)) == Tri::False => match n.floordiv(&Poly::constant(2)).and_then(|h| h.add_const(1)) {
                Some(p) => p,
                None => return vec![(st, Value::Unknown)],
            },
            None => return vec![(st, Value::Unknown)],
        }
    } else {
        n.clone()
    };
    // the length is the size of a new tensor: torch raises for a negative one
    float_vector(cx, st, what, if half { "n // 2 + 1" } else { "n" }, len, dtype, span)
}

const FFT1: &str = "input, n=None, dim=-1, norm=None";
const FFT2: &str = "input, s=None, dim=(-2, -1), norm=None";
const FFTN: &str = "input, s=None, dim=None, norm=None";
const FREQ: &str = "n, d=1.0, *, dtype=None, ~layout=torch.strided, ~device=None, ~requires_grad=False";

/// The APIs this family models, for the registry (`models/registry.rs`). `out=` is not read;
/// `layout`, `device` and `requires_grad` change neither shapes nor dtypes.
pub const APIS: &[Decl] = &[
    Decl::function("torch.fft.fft", FFT1).checks(FFT_CHECKS),
    Decl::function("torch.fft.ifft", FFT1).checks(FFT_CHECKS),
    Decl::function("torch.fft.rfft", FFT1).checks(FFT_CHECKS),
    Decl::function("torch.fft.irfft", FFT1).checks(FFT_CHECKS),
    Decl::function("torch.fft.hfft", FFT1).checks(FFT_CHECKS),
    Decl::function("torch.fft.ihfft", FFT1).checks(FFT_CHECKS),
    Decl::function("torch.fft.fft2", FFT2).checks(FFT_CHECKS),
    Decl::function("torch.fft.ifft2", FFT2).checks(FFT_CHECKS),
    Decl::function("torch.fft.rfft2", FFT2).checks(FFT_CHECKS),
    Decl::function("torch.fft.irfft2", FFT2).checks(FFT_CHECKS),
    Decl::function("torch.fft.fftn", FFTN).checks(FFT_CHECKS),
    Decl::function("torch.fft.ifftn", FFTN).checks(FFT_CHECKS),
    Decl::function("torch.fft.rfftn", FFTN).checks(FFT_CHECKS),
    Decl::function("torch.fft.irfftn", FFTN).checks(FFT_CHECKS),
    Decl::function("torch.fft.hfft2", FFT2).checks(FFT_CHECKS),
    Decl::function("torch.fft.ihfft2", FFT2).checks(FFT_CHECKS),
    Decl::function("torch.fft.hfftn", FFTN).checks(FFT_CHECKS),
    Decl::function("torch.fft.ihfftn", FFTN).checks(FFT_CHECKS),
    Decl::function("torch.fft.fftshift", "input, dim=None").checks(&[&r::dim_out_of_range::RULE]),
    Decl::function("torch.fft.ifftshift", "input, dim=None").checks(&[&r::dim_out_of_range::RULE]),
    Decl::function("torch.fft.fftfreq", FREQ).checks(FREQ_CHECKS),
    Decl::function("torch.fft.rfftfreq", FREQ).checks(FREQ_CHECKS),
];
