//! Padding, pixel (un)shuffle and upsampling: `F.pad` and the padding modules,
//! `nn.PixelShuffle/PixelUnshuffle` and their twins, `nn.Upsample` and `F.interpolate`.

use super::layers::{layer_name, Bound, Function, Module, Nn};
use super::tensor::tensor_value;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::Span;
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerInputRankMismatch, OutputSizeTooSmall};
use crate::rules::Rule;
use crate::shape::{Poly, Rel, Tri};
use std::rc::Rc;

const PAD_CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::layer_input_rank_mismatch::RULE, &r::output_size_too_small::RULE];
const PIXEL_CHECKS: &[&Rule] = &[&r::layer_input_rank_mismatch::RULE, &r::invalid_shape_argument::RULE];
const UPSAMPLE: &str = "size=None, scale_factor=None, mode=\"nearest\", align_corners=None, recompute_scale_factor=None";
const INTERPOLATE: &str = "input, size=None, scale_factor=None, mode=\"nearest\", align_corners=None, recompute_scale_factor=None, antialias=False";
const UPSAMPLE_DEPRECATED: &str = "input, size=None, scale_factor=None, mode=\"nearest\", align_corners=None";
// nn.UpsamplingNearest2d / UpsamplingBilinear2d: F.interpolate with a fixed mode (bilinear: align_corners=True)
const UPSAMPLING_2D: &str = "size=None, scale_factor=None";

/// A padding module with `dims` padded dims and F.pad's `mode`.
const fn pad_module(name: &'static str, dims: usize, mode: &'static str) -> Nn {
    Nn::module(Decl::module(name, "padding", "input").twin("torch.nn.functional.pad").checks(PAD_CHECKS), Module::Pad { dims, mode })
}
/// A constant padding module: its fill `value` changes values only.
const fn constant_pad(name: &'static str, dims: usize) -> Nn {
    Nn::module(Decl::module(name, "padding, ~value", "input").twin("torch.nn.functional.pad").checks(PAD_CHECKS), Module::Pad { dims, mode: "constant" })
}

pub const NN: &[Nn] = &[
    pad_module("torch.nn.ZeroPad1d", 1, "constant"),
    pad_module("torch.nn.ZeroPad2d", 2, "constant"),
    pad_module("torch.nn.ZeroPad3d", 3, "constant"),
    constant_pad("torch.nn.ConstantPad1d", 1),
    constant_pad("torch.nn.ConstantPad2d", 2),
    constant_pad("torch.nn.ConstantPad3d", 3),
    pad_module("torch.nn.ReflectionPad1d", 1, "reflect"),
    pad_module("torch.nn.ReflectionPad2d", 2, "reflect"),
    pad_module("torch.nn.ReflectionPad3d", 3, "reflect"),
    pad_module("torch.nn.ReplicationPad1d", 1, "replicate"),
    pad_module("torch.nn.ReplicationPad2d", 2, "replicate"),
    pad_module("torch.nn.ReplicationPad3d", 3, "replicate"),
    pad_module("torch.nn.CircularPad1d", 1, "circular"),
    pad_module("torch.nn.CircularPad2d", 2, "circular"),
    pad_module("torch.nn.CircularPad3d", 3, "circular"),
    // the fill `value` changes values only
    Nn::function(Decl::function("torch.nn.functional.pad", "input, pad, mode=\"constant\", ~value=None").checks(PAD_CHECKS), Function::Pad),
    Nn::module(Decl::module("torch.nn.PixelShuffle", "upscale_factor", "input").twin("torch.nn.functional.pixel_shuffle").checks(PIXEL_CHECKS), Module::PixelShuffle { unshuffle: false }),
    Nn::module(Decl::module("torch.nn.PixelUnshuffle", "downscale_factor", "input").twin("torch.nn.functional.pixel_unshuffle").checks(PIXEL_CHECKS), Module::PixelShuffle { unshuffle: true }),
    Nn::function(Decl::function("torch.nn.functional.pixel_shuffle", "input, upscale_factor").twin("torch.nn.PixelShuffle").checks(PIXEL_CHECKS), Function::PixelShuffle { unshuffle: false }),
    Nn::function(Decl::function("torch.nn.functional.pixel_unshuffle", "input, downscale_factor").twin("torch.nn.PixelUnshuffle").checks(PIXEL_CHECKS), Function::PixelShuffle { unshuffle: true }),
    Nn::module(Decl::module("torch.nn.Upsample", UPSAMPLE, "input").twin("torch.nn.functional.interpolate").checks(PAD_CHECKS), Module::Upsample { mode: None }),
    Nn::module(Decl::module("torch.nn.UpsamplingNearest2d", UPSAMPLING_2D, "input").twin("torch.nn.functional.interpolate").checks(PAD_CHECKS), Module::Upsample { mode: Some("nearest") }),
    Nn::module(Decl::module("torch.nn.UpsamplingBilinear2d", UPSAMPLING_2D, "input").twin("torch.nn.functional.interpolate").checks(PAD_CHECKS), Module::Upsample { mode: Some("bilinear") }),
    Nn::function(Decl::function("torch.nn.functional.interpolate", INTERPOLATE).twin("torch.nn.Upsample").checks(PAD_CHECKS), Function::Interpolate),
    Nn::function(Decl::function("torch.nn.functional.upsample", UPSAMPLE_DEPRECATED).checks(PAD_CHECKS), Function::Interpolate),
];

/// Calling a padding module (`nn.ReflectionPad2d(p)`): `dims` padded dims, F.pad's `mode`.
pub fn call_pad(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, dims: usize, mode: &str, span: Span) -> Vals {
    let Some(p) = module_padding(l.args.get("padding"), dims) else { return vec![(st, Value::Unknown)] };
    pad(cx, st, t, &p, mode, &format!("{}{}", layer_name(l), l.kind), span)
}

/// Calling an `nn.PixelShuffle`/`nn.PixelUnshuffle` layer.
pub fn call_pixel_shuffle(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, unshuffle: bool, span: Span) -> Vals {
    let key = if unshuffle { "downscale_factor" } else { "upscale_factor" };
    let Some(f) = l.args.get(key).cloned() else { return vec![(st, Value::Unknown)] };
    pixel_shuffle(cx, st, t, &f, unshuffle, &format!("{}{}", layer_name(l), l.kind), span)
}

/// `F.pixel_shuffle(input, upscale_factor)`, `F.pixel_unshuffle(input, downscale_factor)`.
pub fn functional_pixel_shuffle(cx: &mut dyn ModelCtx, st: State, t: &Tensor, unshuffle: bool, b: &Bound, what: &str, span: Span) -> Vals {
    let key = if unshuffle { "downscale_factor" } else { "upscale_factor" };
    let Some(f) = b.get(key).cloned() else { return vec![(st, Value::Unknown)] };
    pixel_shuffle(cx, st, t, &f, unshuffle, what, span)
}

/// Calling an `nn.Upsample` layer, or (`fixed` mode) `nn.UpsamplingNearest2d`/`UpsamplingBilinear2d`.
pub fn call_upsample(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, fixed: Option<&'static str>, span: Span) -> Vals {
    let (mode, align) = match fixed {
        Some(m) => (Some(Value::Str(Some(Rc::from(m)))), if m == "bilinear" { Some(Value::Bool(true)) } else { None }),
        None => (l.args.get("mode").cloned(), l.args.get("align_corners").cloned()),
    };
    let kind = fixed.map(|m| if m == "nearest" { "UpsamplingNearest2d" } else { "UpsamplingBilinear2d" }).unwrap_or("Upsample");
    let a = InterpolateArgs { size: l.args.get("size"), scale: l.args.get("scale_factor"), mode: mode.as_ref(), align: align.as_ref(), recompute: l.args.get("recompute_scale_factor"), antialias: None };
    interpolate(cx, st, t, a, &format!("{}{kind}", layer_name(l)), span)
}

/// `F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)`
/// (and the deprecated `F.upsample`).
pub fn functional_interpolate(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, what: &str, span: Span) -> Vals {
    let a = InterpolateArgs { size: b.get("size"), scale: b.get("scale_factor"), mode: b.get("mode"), align: b.get("align_corners"), recompute: b.get("recompute_scale_factor"), antialias: b.get("antialias") };
    interpolate(cx, st, t, a, what, span)
}

/// The padding of a `*Pad{n}d` module: an int (all sides) or a tuple of `2n` ints.
fn module_padding(v: Option<&Value>, n: usize) -> Option<Vec<i128>> {
    match v? {
        Value::Int(p) => Some(vec![p.as_const()?; 2 * n]),
        Value::Tuple(items) if items.len() == 2 * n => items.iter().map(|v| v.as_const_int()).collect(),
        _ => None,
    }
}

/// `F.pad(input, pad, mode)`: `pad` lists (left, right) pairs from the last dim backwards.
/// Constant padding needs at most one pair per dim; the other modes pad the last 1-3 dims of a
/// batched or unbatched input (reflect: pad < size; circular: pad <= size).
fn pad(cx: &mut dyn ModelCtx, st: State, t: &Tensor, p: &[i128], mode: &str, what: &str, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(!p.len().is_multiple_of(2)), |_| {
        (InvalidShapeArgument::PadOdd { op: what.into(), len: p.len().to_string() }, Vec::new())
    }) {
        return Vec::new();
    }
    let k = p.len() / 2;
    if mode == "constant" {
        if !cx.check(&st, span, Tri::from_bool(k > rank), |cx| {
            (LayerInputRankMismatch::PadTooLong { op: what.into(), len: p.len().to_string(), input: cx.show_shape(&st, &s), rank: rank.to_string() }, Vec::new())
        }) {
            return Vec::new();
        }
    } else {
        if !matches!(mode, "reflect" | "replicate" | "circular") {
            return vec![(st, Value::Unknown)];
        }
        let ok = (1..=3).contains(&k) && (rank == k + 1 || rank == k + 2);
        if !cx.check(&st, span, Tri::from_bool(!ok), |cx| {
            let (dims, lo, hi) = (k.to_string(), (k + 1).to_string(), (k + 2).to_string());
            (LayerInputRankMismatch::PadRank { op: what.into(), mode: mode.into(), dims, lo, hi, input: cx.show_shape(&st, &s) }, Vec::new())
        }) {
            return Vec::new();
        }
        if p.iter().any(|x| *x < 0) {
            return vec![(st, Value::Unknown)];
        }
    }
    let mut dims = s.dims.clone();
    for (i, pair) in p.chunks(2).enumerate() {
        let d = &mut dims[rank - 1 - i];
        if let Some(size) = d.v.clone() {
            for side in pair {
                let rel = match mode {
                    "reflect" => Rel::Le,
                    "circular" => Rel::Lt,
                    _ => continue,
                };
                // violated: size <= pad (reflect), size < pad (circular)
                let bad = cx.poly_cmp(&st, &size, rel, &Poly::constant(*side));
                if !cx.check(&st, span, bad, |cx| {
                    let ss = size.display(cx.syms());
                    let (op, pad, size, dim, input) = (what.to_string(), side.to_string(), ss, (rank - 1 - i).to_string(), cx.show_shape(&st, &s));
                    let v = if mode == "reflect" { InvalidShapeArgument::ReflectPad { op, pad, size, dim, input } } else { InvalidShapeArgument::CircularPad { op, pad, size, dim, input } };
                    (v, Vec::new())
                }) {
                    return Vec::new();
                }
            }
        }
        let new = d.v.as_ref().and_then(|v| v.add_const(pair[0] + pair[1]));
        if let Some(c) = new.as_ref().and_then(|v| v.as_const())
            && !cx.check(&st, span, Tri::from_bool(c < 0), |cx| {
                (OutputSizeTooSmall::PadNegative { op: what.into(), pad: format!("{p:?}"), dim: (rank - 1 - i).to_string(), input: cx.show_shape(&st, &s) }, Vec::new())
            }) {
                return Vec::new();
            }
        let why = new.as_ref().map(|_| Origin::output(super::layers::made_by(what), span, i + 1, Some(d)));
        *d = Dim { v: new, why };
    }
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

/// `F.pad(input, pad, mode='constant', value=None)`.
pub fn functional_pad(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let Some(p) = b.get("pad").and_then(|p| match p {
        Value::Tuple(items) => items.iter().map(|v| v.as_const_int()).collect::<Option<Vec<i128>>>(),
        Value::Ref(id) => match st.get(*id) {
            Obj::List(items) => items.iter().map(|v| v.as_const_int()).collect::<Option<Vec<i128>>>(),
            _ => None,
        },
        _ => None,
    }) else {
        return vec![(st, Value::Unknown)];
    };
    let mode = match b.get("mode") {
        None => "constant".to_string(),
        Some(v) => match v.as_str() {
            Some(m) => m.to_string(),
            None => return vec![(st, Value::Unknown)],
        },
    };
    pad(cx, st, t, &p, &mode, "F.pad", span)
}

/// `pixel_shuffle(x, r)`: `[*, C*r^2, H, W] -> [*, C, H*r, W*r]`; `pixel_unshuffle` the inverse.
fn pixel_shuffle(cx: &mut dyn ModelCtx, st: State, t: &Tensor, factor: &Value, unshuffle: bool, what: &str, span: Span) -> Vals {
    let Some(f) = factor.as_const_int().filter(|f| *f > 0) else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(rank < 3), |cx| {
        let shown = cx.show_shape(&st, &s);
        (LayerInputRankMismatch::AtLeast { op: what.into(), rank: "3".into(), shape: shown.clone() }, Vec::new())
    }) {
        return Vec::new();
    }
    let (c, h, w) = (&s.dims[rank - 3], &s.dims[rank - 2], &s.dims[rank - 1]);
    let mut dims = s.dims[..rank - 3].to_vec();
    if unshuffle {
        for (d, name) in [(h, "height"), (w, "width")] {
            let Some(v) = d.as_const() else { continue };
            if !cx.check(&st, span, Tri::from_bool(v % f != 0), |cx| {
                (InvalidShapeArgument::Unshuffle { op: what.into(), name: name.into(), size: v.to_string(), input: cx.show_shape(&st, &s), factor: f.to_string() }, Vec::new())
            }) {
                return Vec::new();
            }
        }
        let div = |d: &Dim| Dim { v: d.as_const().map(|v| Poly::constant(v / f)), why: None };
        dims.push(Dim { v: c.v.as_ref().and_then(|v| v.mul(&Poly::constant(f * f))), why: None });
        dims.push(div(h));
        dims.push(div(w));
    } else {
        if let Some(v) = c.as_const()
            && !cx.check(&st, span, Tri::from_bool(v % (f * f) != 0), |cx| {
                (InvalidShapeArgument::Shuffle { op: what.into(), channels: cx.show_dim(c), input: cx.show_shape(&st, &s), factor2: (f * f).to_string() }, Vec::new())
            }) {
                return Vec::new();
            }
        dims.push(Dim { v: c.as_const().map(|v| Poly::constant(v / (f * f))), why: None });
        dims.push(Dim { v: h.v.as_ref().and_then(|v| v.mul(&Poly::constant(f))), why: None });
        dims.push(Dim { v: w.v.as_ref().and_then(|v| v.mul(&Poly::constant(f))), why: None });
    }
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

/// The arguments of `F.interpolate` that the model reads (absent: the default).
struct InterpolateArgs<'a> {
    size: Option<&'a Value>,
    scale: Option<&'a Value>,
    mode: Option<&'a Value>,
    align: Option<&'a Value>,
    recompute: Option<&'a Value>,
    antialias: Option<&'a Value>,
}

/// A flag argument's truth (`None` or absent: false); None when not known.
fn truthy(v: Option<&Value>) -> Option<bool> {
    match v {
        None | Some(Value::None) => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        Some(v) => v.as_const_int().map(|c| c != 0),
    }
}

/// `F.interpolate(x, size, scale_factor, mode, ...)` / `nn.Upsample`: a 3-D to 5-D input whose
/// spatial dims become `size`, or `floor(size * scale)` (which must stay positive). Torch's
/// checks, in its order: `align_corners` set (not None) only for the interpolating modes; exactly
/// one of size and scale_factor, with one value per spatial dim; `recompute_scale_factor` not
/// true with a size; `antialias` only for bilinear/bicubic on a 4-D input; the mode's rank.
/// `align_corners`, `recompute_scale_factor` and `antialias` do not change the output's shape.
fn interpolate(cx: &mut dyn ModelCtx, st: State, t: &Tensor, a: InterpolateArgs, what: &str, span: Span) -> Vals {
    let size = a.size.filter(|v| !matches!(v, Value::None));
    let scale = a.scale.filter(|v| !matches!(v, Value::None));
    let mode = match a.mode {
        None | Some(Value::None) => "nearest".to_string(),
        Some(v) => match v.as_str() {
            Some(m) => m.to_string(),
            None => return vec![(st, Value::Unknown)],
        },
    };
    let need: Option<usize> = match mode.as_str() {
        "nearest" | "nearest-exact" | "area" => None,
        "linear" => Some(3),
        "bilinear" | "bicubic" => Some(4),
        "trilinear" => Some(5),
        _ => return vec![(st, Value::Unknown)],
    };
    let align_set = match a.align {
        None | Some(Value::None) => false,
        Some(Value::Bool(_)) => true,
        Some(v) if v.as_const_int().is_some() => true,
        Some(_) => return vec![(st, Value::Unknown)],
    };
    let (Some(recompute), Some(antialias)) = (truthy(a.recompute), truthy(a.antialias)) else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(align_set && need.is_none()), |_| {
        let value = match a.align { Some(Value::Bool(b)) => if *b { "True".into() } else { "False".into() }, Some(v) => v.as_const_int().map(|c| c.to_string()).unwrap_or_default(), None => String::new() };
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "align_corners".into(), value, should: format!("be None with mode='{mode}' (only linear, bilinear, bicubic and trilinear use it)") }, Vec::new())
    }) {
        return Vec::new();
    }
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(size.is_some() == scale.is_some()), |_| {
        (InvalidShapeArgument::SizeOrScale { op: what.into() }, Vec::new())
    }) {
        return Vec::new();
    }
    if !cx.check(&st, span, Tri::from_bool(recompute && size.is_some()), |_| {
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "recompute_scale_factor".into(), value: "True".into(), should: "not be given with an explicit size".into() }, Vec::new())
    }) {
        return Vec::new();
    }
    let aa_ok = matches!(mode.as_str(), "bilinear" | "bicubic") && rank == 4;
    if !cx.check(&st, span, Tri::from_bool(antialias && !aa_ok), |_| {
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "antialias".into(), value: "True".into(), should: format!("go with mode='bilinear' or 'bicubic' and a 4-D input (mode='{mode}', {rank}-D input)") }, Vec::new())
    }) {
        return Vec::new();
    }
    let ok = (3..=5).contains(&rank) && need.is_none_or(|n| n == rank);
    if !cx.check(&st, span, Tri::from_bool(!ok), |cx| {
        (LayerInputRankMismatch::InterpolateMode { op: what.into(), mode: mode.clone(), rank: rank.to_string(), input: cx.show_shape(&st, &s) }, Vec::new())
    }) {
        return Vec::new();
    }
    let n = rank - 2;
    let mut dims = s.dims[..2].to_vec();
    if let Some(sz) = size {
        let v: Option<Vec<Option<Poly>>> = match sz {
            Value::Int(p) => Some(vec![Some(p.clone()); n]),
            Value::Tuple(items) => {
                if !cx.check(&st, span, Tri::from_bool(items.len() != n), |cx| {
                    (InvalidShapeArgument::SpatialCount { op: what.into(), arg: "size".into(), count: items.len().to_string(), input: cx.show_shape(&st, &s), spatial: n.to_string() }, Vec::new())
                }) {
                    return Vec::new();
                }
                Some(items.iter().map(|v| v.as_int().cloned()).collect())
            }
            _ => None,
        };
        let Some(v) = v else { return vec![(st, Value::Unknown)] };
        let by = super::layers::made_by(what);
        dims.extend(v.into_iter().enumerate().map(|(i, p)| Dim { why: p.as_ref().map(|_| Origin::output(by.clone(), span, n - i, None)), v: p }));
    } else if let Some(sc) = scale {
        let num = |v: &Value| match v {
            Value::Float(Some(f)) => Some(*f),
            other => other.as_const_int().map(|c| c as f64),
        };
        let factors: Option<Vec<f64>> = match sc {
            Value::Tuple(items) => {
                if !cx.check(&st, span, Tri::from_bool(items.len() != n), |cx| {
                    (InvalidShapeArgument::SpatialCount { op: what.into(), arg: "scale_factor".into(), count: items.len().to_string(), input: cx.show_shape(&st, &s), spatial: n.to_string() }, Vec::new())
                }) {
                    return Vec::new();
                }
                items.iter().map(num).collect()
            }
            v => num(v).map(|f| vec![f; n]),
        };
        let Some(factors) = factors else { return vec![(st, Value::Unknown)] };
        let by = super::layers::made_by(what);
        for (i, (d, f)) in s.dims[2..].iter().zip(factors).enumerate() {
            let v = match (d.as_const(), f.fract() == 0.0) {
                (Some(c), _) => {
                    let o = ((c as f64) * f).floor() as i128;
                    if !cx.check(&st, span, Tri::from_bool(o < 1), |_| {
                        (OutputSizeTooSmall::Scaled { op: what.into(), size: c.to_string(), factor: f.to_string(), output: o.to_string() }, Vec::new())
                    }) {
                        return Vec::new();
                    }
                    Some(Poly::constant(o))
                }
                (None, true) if f >= 1.0 => d.v.as_ref().and_then(|p| p.mul(&Poly::constant(f as i128))),
                _ => None,
            };
            dims.push(Dim { why: v.as_ref().map(|_| Origin::output(by.clone(), span, n - i, Some(d))), v });
        }
    }
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}
