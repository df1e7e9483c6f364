//! Pools: `nn.{Max,Avg}Pool{1,2,3}d`, `nn.Adaptive{Avg,Max}Pool{1,2,3}d` and their twins.

use super::conv::conv_out;
use super::{check_spatial, layer_name, ntuple, require_rank, spatial_names, Bound, Function, Module, Nn};
use crate::ir::Span;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::models::torch::tensor::tensor_value;
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerInputRankMismatch, OutputSizeTooSmall};
use crate::rules::Rule;
use crate::shape::{Poly, Tri};
use crate::value::*;

// `return_indices` is read: a tuple result is not modelled. `count_include_pad` changes values
// only; `divisor_override`'s only check is that it is not zero.
const MAX: &str = "kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False";
const AVG1: &str = "kernel_size, stride=None, padding=0, ceil_mode=False, ~count_include_pad=True";
const AVG: &str = "kernel_size, stride=None, padding=0, ceil_mode=False, ~count_include_pad=True, ~divisor_override=None";
const F_MAX: &str = "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False";
const F_AVG1: &str = "input, kernel_size, stride=None, padding=0, ceil_mode=False, ~count_include_pad=True";
const F_AVG: &str = "input, kernel_size, stride=None, padding=0, ceil_mode=False, ~count_include_pad=True, ~divisor_override=None";
const CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::layer_input_rank_mismatch::RULE, &r::output_size_too_small::RULE];
const ADAPTIVE_CHECKS: &[&Rule] = &[&r::layer_input_rank_mismatch::RULE];

const fn pool(dims: usize, max: bool) -> Module {
    Module::Pool { dims, max }
}
const fn f_pool(dims: usize, max: bool) -> Function {
    Function::Pool { dims, max }
}
const fn adaptive(dims: usize, max: bool) -> Module {
    Module::AdaptivePool { dims, max }
}
const fn f_adaptive(dims: usize, max: bool) -> Function {
    Function::AdaptivePool { dims, max }
}

pub(super) const NN: &[Nn] = &[
    Nn::module(Decl::module("torch.nn.MaxPool1d", MAX, "input").twin("torch.nn.functional.max_pool1d").checks(CHECKS), pool(1, true)),
    Nn::module(Decl::module("torch.nn.MaxPool2d", MAX, "input").twin("torch.nn.functional.max_pool2d").checks(CHECKS), pool(2, true)),
    Nn::module(Decl::module("torch.nn.MaxPool3d", MAX, "input").twin("torch.nn.functional.max_pool3d").checks(CHECKS), pool(3, true)),
    Nn::module(Decl::module("torch.nn.AvgPool1d", AVG1, "input").twin("torch.nn.functional.avg_pool1d").checks(CHECKS), pool(1, false)),
    Nn::module(Decl::module("torch.nn.AvgPool2d", AVG, "input").twin("torch.nn.functional.avg_pool2d").checks(CHECKS), pool(2, false)),
    Nn::module(Decl::module("torch.nn.AvgPool3d", AVG, "input").twin("torch.nn.functional.avg_pool3d").checks(CHECKS), pool(3, false)),
    Nn::function(Decl::function("torch.nn.functional.max_pool1d", F_MAX).twin("torch.nn.MaxPool1d").checks(CHECKS), f_pool(1, true)),
    Nn::function(Decl::function("torch.nn.functional.max_pool2d", F_MAX).twin("torch.nn.MaxPool2d").checks(CHECKS), f_pool(2, true)),
    Nn::function(Decl::function("torch.nn.functional.max_pool3d", F_MAX).twin("torch.nn.MaxPool3d").checks(CHECKS), f_pool(3, true)),
    Nn::function(Decl::function("torch.nn.functional.avg_pool1d", F_AVG1).twin("torch.nn.AvgPool1d").checks(CHECKS), f_pool(1, false)),
    Nn::function(Decl::function("torch.nn.functional.avg_pool2d", F_AVG).twin("torch.nn.AvgPool2d").checks(CHECKS), f_pool(2, false)),
    Nn::function(Decl::function("torch.nn.functional.avg_pool3d", F_AVG).twin("torch.nn.AvgPool3d").checks(CHECKS), f_pool(3, false)),
    Nn::module(Decl::module("torch.nn.AdaptiveAvgPool1d", "output_size", "input").twin("torch.nn.functional.adaptive_avg_pool1d").checks(ADAPTIVE_CHECKS), adaptive(1, false)),
    Nn::module(Decl::module("torch.nn.AdaptiveAvgPool2d", "output_size", "input").twin("torch.nn.functional.adaptive_avg_pool2d").checks(ADAPTIVE_CHECKS), adaptive(2, false)),
    Nn::module(Decl::module("torch.nn.AdaptiveAvgPool3d", "output_size", "input").twin("torch.nn.functional.adaptive_avg_pool3d").checks(ADAPTIVE_CHECKS), adaptive(3, false)),
    Nn::module(Decl::module("torch.nn.AdaptiveMaxPool1d", "output_size, return_indices=False", "input").twin("torch.nn.functional.adaptive_max_pool1d").checks(ADAPTIVE_CHECKS), adaptive(1, true)),
    Nn::module(Decl::module("torch.nn.AdaptiveMaxPool2d", "output_size, return_indices=False", "input").twin("torch.nn.functional.adaptive_max_pool2d").checks(ADAPTIVE_CHECKS), adaptive(2, true)),
    Nn::module(Decl::module("torch.nn.AdaptiveMaxPool3d", "output_size, return_indices=False", "input").twin("torch.nn.functional.adaptive_max_pool3d").checks(ADAPTIVE_CHECKS), adaptive(3, true)),
    Nn::function(Decl::function("torch.nn.functional.adaptive_avg_pool1d", "input, output_size").twin("torch.nn.AdaptiveAvgPool1d").checks(ADAPTIVE_CHECKS), f_adaptive(1, false)),
    Nn::function(Decl::function("torch.nn.functional.adaptive_avg_pool2d", "input, output_size").twin("torch.nn.AdaptiveAvgPool2d").checks(ADAPTIVE_CHECKS), f_adaptive(2, false)),
    Nn::function(Decl::function("torch.nn.functional.adaptive_avg_pool3d", "input, output_size").twin("torch.nn.AdaptiveAvgPool3d").checks(ADAPTIVE_CHECKS), f_adaptive(3, false)),
    Nn::function(Decl::function("torch.nn.functional.adaptive_max_pool1d", "input, output_size, return_indices=False").twin("torch.nn.AdaptiveMaxPool1d").checks(ADAPTIVE_CHECKS), f_adaptive(1, true)),
    Nn::function(Decl::function("torch.nn.functional.adaptive_max_pool2d", "input, output_size, return_indices=False").twin("torch.nn.AdaptiveMaxPool2d").checks(ADAPTIVE_CHECKS), f_adaptive(2, true)),
    Nn::function(Decl::function("torch.nn.functional.adaptive_max_pool3d", "input, output_size, return_indices=False").twin("torch.nn.AdaptiveMaxPool3d").checks(ADAPTIVE_CHECKS), f_adaptive(3, true)),
];

/// `return_indices` (absent or False) and `ceil_mode` (absent or a bool) of a pool; None when
/// not modelled.
fn flags(ceil_mode: Option<&Value>, return_indices: Option<&Value>) -> Option<bool> {
    if !matches!(return_indices, None | Some(Value::Bool(false))) {
        return None;
    }
    match ceil_mode {
        None => Some(false),
        Some(Value::Bool(c)) => Some(*c),
        Some(_) => None,
    }
}

/// Calling an `nn.MaxPool*`/`nn.AvgPool*` layer.
pub(super) fn call(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, n: usize, max: bool, span: Span) -> Vals {
    let Some(ceil) = flags(l.args.get("ceil_mode"), l.args.get("return_indices")) else { return vec![(st, Value::Unknown)] };
    let d = if max { l.args.get("dilation") } else { None };
    let what = format!("{}{}", layer_name(l), l.kind);
    pool_with(cx, st, t, n, max, l.args.get("kernel_size"), l.args.get("stride"), l.args.get("padding"), d, ceil, &what, span)
}

/// `F.max_pool{n}d`, `F.avg_pool{n}d`.
#[allow(clippy::too_many_arguments)]
pub(super) fn functional(cx: &mut dyn ModelCtx, st: State, t: &Tensor, n: usize, max: bool, b: &Bound, what: &str, span: Span) -> Vals {
    let Some(ceil) = flags(b.get("ceil_mode"), b.get("return_indices")) else { return vec![(st, Value::Unknown)] };
    pool_with(cx, st, t, n, max, b.get("kernel_size"), b.get("stride"), b.get("padding"), b.get("dilation"), ceil, what, span)
}

#[allow(clippy::too_many_arguments)]
fn pool_with(cx: &mut dyn ModelCtx, st: State, t: &Tensor, n: usize, max: bool, k: Option<&Value>, s: Option<&Value>, p: Option<&Value>, d: Option<&Value>, ceil: bool, what: &str, span: Span) -> Vals {
    let Some(k) = ntuple(k, n, 1) else { return vec![(st, Value::Unknown)] };
    let s = match s {
        None | Some(Value::None) => Some(k.clone()),
        Some(v) => ntuple(Some(v), n, 1),
    };
    let Some(s) = s else { return vec![(st, Value::Unknown)] };
    let Some(p) = ntuple(p, n, 0) else { return vec![(st, Value::Unknown)] };
    let Some(d) = ntuple(d, n, 1) else { return vec![(st, Value::Unknown)] };
    // padding at most half the kernel size
    for i in 0..n {
        let (Some(kc), Some(pc)) = (k[i].as_const(), p[i].as_const()) else { continue };
        if !cx.check(&st, span, Tri::from_bool(pc > kc / 2), |_| {
            (InvalidShapeArgument::PoolPadding { op: what.into(), padding: pc.to_string(), kernel_size: kc.to_string() }, Vec::new())
        }) {
            return Vec::new();
        }
    }
    let mut out = Vec::new();
    for (st, sh) in require_rank(cx, st, t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{what}: ")) {
        let r = sh.dims.len();
        let spatial = &sh.dims[r - n..];
        if n == 3 && !max {
            // avg_pool3d: each input size at least the kernel size (padding aside)
            let small = spatial.iter().zip(&k).any(|(d, kk)| d.as_const().zip(kk.as_const()).is_some_and(|(a, b)| a < b));
            if !cx.check(&st, span, Tri::from_bool(small), |cx| {
                let shown = cx.show_shape(&st, &sh);
                (OutputSizeTooSmall::Kernel { op: what.into(), input: shown }, Vec::new())
            }) {
                continue;
            }
        }
        let outs: Vec<Option<Poly>> = (0..n)
            .map(|i| {
                let o = conv_out(spatial[i].v.as_ref()?, &k[i], &s[i], &p[i], &d[i], ceil)?;
                if ceil {
                    // the last window must start inside the input or left padding
                    return match (o.as_const(), spatial[i].as_const(), s[i].as_const(), p[i].as_const()) {
                        (Some(oc), Some(sz), Some(st_), Some(pd)) if (oc - 1) * st_ >= sz + pd => Some(Poly::constant(oc - 1)),
                        (Some(_), Some(_), Some(_), Some(_)) => Some(o),
                        _ => None,
                    };
                }
                Some(o)
            })
            .collect();
        if !check_spatial(cx, &st, &outs, spatial, what, span) {
            continue;
        }
        let mut dims = sh.dims[..r - n].to_vec();
        let by = super::made_by(what);
        dims.extend(outs.into_iter().enumerate().map(|(i, o)| Dim { why: o.as_ref().map(|_| crate::value::Origin::output(by.clone(), span, n - i, Some(&spatial[i]))), v: o }));
        out.push((st, tensor_value(Shape::known(dims), t.dtype)));
    }
    out
}

/// Calling an `nn.Adaptive*Pool*` layer.
pub(super) fn call_adaptive(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, n: usize, max: bool, span: Span) -> Vals {
    let Some(outs) = l.args.get("output_size") else { return vec![(st, Value::Unknown)] };
    if !matches!(l.args.get("return_indices"), None | Some(Value::Bool(false))) {
        return vec![(st, Value::Unknown)];
    }
    adaptive_with(cx, st, t, n, max, outs, &format!("{}{}", layer_name(l), l.kind), span)
}

/// `F.adaptive_{avg,max}_pool{n}d`.
#[allow(clippy::too_many_arguments)]
pub(super) fn functional_adaptive(cx: &mut dyn ModelCtx, st: State, t: &Tensor, n: usize, max: bool, b: &Bound, what: &str, span: Span) -> Vals {
    let Some(o) = b.get("output_size") else { return vec![(st, Value::Unknown)] };
    if !matches!(b.get("return_indices"), None | Some(Value::Bool(false))) {
        return vec![(st, Value::Unknown)];
    }
    adaptive_with(cx, st, t, n, max, o, what, span)
}

/// Adaptive pools: the spatial dims become `outs` (`None` keeps a size). Average pools with an
/// all-ones output take torch's `mean` shortcut, which accepts any rank >= n (>= n + 1 when
/// the output size is a tuple, checked in Python for the 2-D and 3-D pools).
#[allow(clippy::too_many_arguments)]
fn adaptive_with(cx: &mut dyn ModelCtx, st: State, t: &Tensor, n: usize, max: bool, outs: &Value, what: &str, span: Span) -> Vals {
    let sizes: Option<Vec<Option<Poly>>> = match outs {
        Value::Int(p) => Some(vec![Some(p.clone()); n]),
        Value::Tuple(items) if items.len() == n => items.iter().map(|v| if matches!(v, Value::None) { Some(None) } else { v.as_int().cloned().map(Some) }).collect(),
        _ => None,
    };
    let Some(sizes) = sizes else { return vec![(st, Value::Unknown)] };
    let tuple = matches!(outs, Value::Tuple(_)) && n > 1;
    let s = st.resolve(&t.shape);
    let rank = s.rank();
    if tuple
        && let Some(r) = rank {
            if !cx.check(&st, span, Tri::from_bool(r <= n), |cx| {
                let shown = cx.show_shape(&st, &s);
                (LayerInputRankMismatch::AdaptiveRank { op: what.into(), input: shown, rank: (n + 1).to_string() }, Vec::new())
            }) {
                return Vec::new();
            }
        }
    let ones = sizes.iter().all(|o| o.as_ref().is_some_and(|p| p.as_const() == Some(1)));
    if !max && ones && n > 1 {
        let Some(r) = rank else { return vec![(st, Value::Unknown)] };
        if !cx.check(&st, span, Tri::from_bool(r < n), |cx| {
            let shown = cx.show_shape(&st, &s);
            (LayerInputRankMismatch::FewerDims { op: what.into(), input: shown, rank: n.to_string() }, Vec::new())
        }) {
            return Vec::new();
        }
        let mut dims = s.dims[..r - n].to_vec();
        dims.extend((0..n).map(|_| Dim::konst(1)));
        return vec![(st, tensor_value(Shape::known(dims), t.dtype))];
    }
    let mut out = Vec::new();
    for (st, sh) in require_rank(cx, st, t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{what}: ")) {
        let r = sh.dims.len();
        let mut dims = sh.dims[..r - n].to_vec();
        for (i, o) in sizes.iter().enumerate() {
            dims.push(match o {
                Some(o) => Dim::known(o.clone(), None),
                None => sh.dims[r - n + i].clone(), // None keeps the input size
            });
        }
        out.push((st, tensor_value(Shape::known(dims), t.dtype)));
    }
    out
}
