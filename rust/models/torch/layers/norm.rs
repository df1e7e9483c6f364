//! Normalization: `nn.BatchNorm*`, `nn.InstanceNorm*`, `nn.LayerNorm`, `nn.RMSNorm`,
//! `nn.GroupNorm` and their twins.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{is_training, layer_name, number, optional_exact, show_number, require_rank, spatial_names, Bound, Function, Module, Nn};
use crate::ir::Span;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::models::torch::tensor::tensor_value;
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerChannelMismatch, LayerInputRankMismatch};
use crate::rules::Rule;
use crate::shape::{Poly, Tri};
use crate::value::*;

// `affine` and `track_running_stats` are read: without both, torch checks no channel count.
// Batch norm's `eps` is read: `F.batch_norm` wants it positive in training, non-negative else.
const BATCH: &str = "num_features, eps=1e-05, ~momentum=0.1, affine=True, track_running_stats=True, ~device=None, *, ~bias=True";
const INSTANCE: &str = "num_features, ~eps=1e-05, ~momentum=0.1, affine=False, track_running_stats=False, ~device=None, *, ~bias=True";
const BATCH_CHECKS: &[&Rule] = &[&r::layer_input_rank_mismatch::RULE, &r::layer_channel_mismatch::RULE, &r::invalid_shape_argument::RULE];
const LAYER_CHECKS: &[&Rule] = &[&r::layer_channel_mismatch::RULE];

pub(super) const NN: &[Nn] = &[
    Nn::module(Decl::module("torch.nn.BatchNorm1d", BATCH, "input").twin("torch.nn.functional.batch_norm").checks(BATCH_CHECKS), Module::BatchNorm { dims: 1 }),
    Nn::module(Decl::module("torch.nn.BatchNorm2d", BATCH, "input").twin("torch.nn.functional.batch_norm").checks(BATCH_CHECKS), Module::BatchNorm { dims: 2 }),
    Nn::module(Decl::module("torch.nn.BatchNorm3d", BATCH, "input").twin("torch.nn.functional.batch_norm").checks(BATCH_CHECKS), Module::BatchNorm { dims: 3 }),
    Nn::module(Decl::module("torch.nn.InstanceNorm1d", INSTANCE, "input").twin("torch.nn.functional.instance_norm").checks(BATCH_CHECKS), Module::InstanceNorm { dims: 1 }),
    Nn::module(Decl::module("torch.nn.InstanceNorm2d", INSTANCE, "input").twin("torch.nn.functional.instance_norm").checks(BATCH_CHECKS), Module::InstanceNorm { dims: 2 }),
    Nn::module(Decl::module("torch.nn.InstanceNorm3d", INSTANCE, "input").twin("torch.nn.functional.instance_norm").checks(BATCH_CHECKS), Module::InstanceNorm { dims: 3 }),
    Nn::module(
        Decl::module("torch.nn.LayerNorm", "normalized_shape, ~eps=1e-05, ~elementwise_affine=True, ~bias=True, ~device=None", "input").twin("torch.nn.functional.layer_norm").checks(LAYER_CHECKS),
        Module::LayerNorm,
    ),
    Nn::module(Decl::module("torch.nn.RMSNorm", "normalized_shape, ~eps=None, ~elementwise_affine=True, ~device=None", "x").checks(LAYER_CHECKS), Module::LayerNorm),
    // `affine` is read: without it torch does not check `num_channels` against the input
    Nn::module(
        Decl::module("torch.nn.GroupNorm", "num_groups, num_channels, ~eps=1e-05, affine=True, ~device=None, *, ~bias=True", "input").twin("torch.nn.functional.group_norm").checks(BATCH_CHECKS),
        Module::GroupNorm,
    ),
    // the optional tensors are modelled when they certainly have the expected shape
    Nn::function(
        Decl::function("torch.nn.functional.batch_norm", "input, running_mean, running_var, weight=None, bias=None, training=False, ~momentum=0.1, eps=1e-05")
            .checks(&[&r::layer_channel_mismatch::RULE, &r::invalid_shape_argument::RULE]),
        Function::BatchNorm,
    ),
    Nn::function(
        Decl::function("torch.nn.functional.instance_norm", "input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, ~momentum=0.1, ~eps=1e-05")
            .checks(&[&r::invalid_shape_argument::RULE]),
        Function::InstanceNorm,
    ),
    Nn::function(Decl::function("torch.nn.functional.layer_norm", "input, normalized_shape, weight=None, bias=None, ~eps=1e-05").twin("torch.nn.LayerNorm").checks(LAYER_CHECKS), Function::LayerNorm),
    Nn::function(
        Decl::function("torch.nn.functional.group_norm", "input, num_groups, weight=None, bias=None, ~eps=1e-05").twin("torch.nn.GroupNorm").checks(&[
            &r::layer_input_rank_mismatch::RULE,
            &r::layer_channel_mismatch::RULE,
            &r::invalid_shape_argument::RULE,
        ]),
        Function::GroupNorm,
    ),
];

/// A boolean constructor flag (`affine`): its default when absent, None when not a constant.
fn flag(l: &Layer, k: &str, default: bool) -> Option<bool> {
    match l.args.get(k) {
        None => Some(default),
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// The product of constant dims, if all are constant.
fn const_product(dims: &[Dim]) -> Option<i128> {
    dims.iter().try_fold(1i128, |acc, d| d.as_const().and_then(|c| acc.checked_mul(c)))
}

/// Batch statistics need more than one value per channel: `N * prod(spatial) > 1`.
fn batch_stats_check(cx: &mut dyn ModelCtx, st: &State, s: &Shape, span: Span, what: &str) -> bool {
    let mut dims = vec![s.dims[0].clone()];
    dims.extend(s.dims.get(2..).unwrap_or(&[]).iter().cloned());
    let Some(p) = const_product(&dims) else { return true };
    cx.check(st, span, Tri::from_bool(p == 1), |cx| {
        let shown = cx.show_shape(st, s);
        (InvalidShapeArgument::BatchStats { op: what.into(), input: shown }, Vec::new())
    })
}

/// Instance statistics need more than one spatial element.
fn spatial_stats_check(cx: &mut dyn ModelCtx, st: &State, spatial: &[Dim], s: &Shape, span: Span, what: &str) -> bool {
    let Some(p) = const_product(spatial) else { return true };
    cx.check(st, span, Tri::from_bool(p == 1), |cx| {
        let shown = cx.show_shape(st, s);
        (InvalidShapeArgument::InstanceStats { op: what.into(), input: shown }, Vec::new())
    })
}

/// `F.batch_norm`'s `eps` (after the batch statistics, before the C++ checks): positive in
/// training, non-negative otherwise. `training` is None when not known: then only a negative
/// eps is decided. An unknown eps is not judged. False when the path ends.
fn check_eps(cx: &mut dyn ModelCtx, st: &State, eps: Option<&Value>, training: Option<bool>, what: &str, span: Span) -> bool {
    let Some(v) = eps else { return true };
    let Some(e) = number(v) else { return true };
    let bad = if e < 0.0 {
        Tri::True
    } else if e == 0.0 {
        match training {
            Some(t) => Tri::from_bool(t),
            None => return true,
        }
    } else {
        Tri::False
    };
    let should = if training == Some(true) { "be positive in training" } else { "be non-negative" };
    cx.check(st, span, bad, |_| (InvalidShapeArgument::ArgMust { op: what.into(), name: "eps".into(), value: show_number(v), should: should.into() }, Vec::new()))
}

/// Calling an `nn.BatchNorm{n}d` layer: channels at dim 1, batch statistics in training.
pub(super) fn call_batch_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, n: usize, span: Span) -> Vals {
    let (who, kind) = (layer_name(l), &l.kind);
    let ranks: &[usize] = match n {
        1 => &[2, 3],
        2 => &[4],
        _ => &[5],
    };
    let Some(nf) = l.args.get("num_features").and_then(|v| v.as_int()).cloned() else { return vec![(st, Value::Unknown)] };
    // without weights and running statistics torch checks no channel count
    match (flag(l, "affine", true), flag(l, "track_running_stats", true)) {
        (Some(a), Some(s)) if a || s => {}
        _ => return vec![(st, Value::Unknown)],
    }
    // a module built in this very expression (and not switched to eval) is in training mode
    // without running statistics the batch statistics are used in eval mode too
    let training = is_training(l, span) || flag(l, "track_running_stats", true) == Some(false);
    let mut out = Vec::new();
    for (st, s) in require_rank(cx, st, t, ranks, &["N", "C", "D", "H", "W"][5 - ranks.iter().copied().max().unwrap_or(2).min(5)..], &[], span, &format!("{who}{kind}: ")) {
        // channels at dim 1; refine the fresh channel dim by this first use
        let c = s.dims[1].clone();
        if !cx.expect_dim(&st, span, &s, &c, &nf, Vec::new(), |input, channels, want| {
            LayerChannelMismatch::Channels { layer: format!("{who}{kind}"), param: "num_features".into(), want, input, channels }
        }) {
            continue;
        }
        if training && !batch_stats_check(cx, &st, &s, span, &format!("{who}{kind}")) {
            continue;
        }
        // eps==0 raises in training only: not decided when the mode is not known
        if !check_eps(cx, &st, l.args.get("eps"), if training { Some(true) } else { None }, &format!("{who}{kind}"), span) {
            continue;
        }
        out.push((st, tensor_value(s, t.dtype)));
    }
    out
}

/// Calling an `nn.InstanceNorm{n}d` layer (a channel mismatch only warns when affine=False).
pub(super) fn call_instance_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, n: usize, span: Span) -> Vals {
    let (who, kind) = (layer_name(l), &l.kind);
    let affine = matches!(l.args.get("affine"), Some(Value::Bool(true)));
    // instance statistics are used unless running stats are tracked (then: in training)
    let input_stats = if matches!(l.args.get("track_running_stats"), None | Some(Value::Bool(false))) { true } else { is_training(l, span) };
    let nf = l.args.get("num_features").and_then(|v| v.as_int()).cloned();
    let mut out = Vec::new();
    for (st, s) in require_rank(cx, st, t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{who}{kind}: ")) {
        let r = s.dims.len();
        if affine {
            let (Some(nf), c) = (nf.as_ref(), s.dims[r - n - 1].clone()) else { continue };
            if !cx.expect_dim(&st, span, &s, &c, nf, Vec::new(), |input, channels, num_features| {
                LayerChannelMismatch::AffineChannels { layer: format!("{who}{kind}"), num_features, input, channels }
            }) {
                continue;
            }
        }
        if input_stats && !spatial_stats_check(cx, &st, &s.dims[r - n..], &s, span, &format!("{who}{kind}")) {
            continue;
        }
        out.push((st, tensor_value(s, t.dtype)));
    }
    out
}

/// `F.batch_norm(input, running_mean, running_var, weight, bias, training)`, checked in torch's
/// order: batch statistics in training, `eps`, then the channels of the optional tensors.
pub(super) fn functional_batch_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    let Some(r) = s.rank() else { return vec![(st, Value::Unknown)] };
    if r < 2 {
        return vec![(st, Value::Unknown)];
    }
    let training = match b.get("training") {
        None | Some(Value::Bool(false)) => Some(false),
        Some(Value::Bool(true)) => Some(true),
        _ => None,
    };
    if training == Some(true) && !batch_stats_check(cx, &st, &s, span, "F.batch_norm") {
        return Vec::new();
    }
    if !check_eps(cx, &st, b.get("eps"), training, "F.batch_norm", span) {
        return Vec::new();
    }
    for key in ["running_mean", "running_var", "weight", "bias"] {
        let Some(Value::Tensor(m)) = b.get(key) else { continue };
        let ms = st.resolve(&m.shape);
        if ms.rank() != Some(1) {
            continue;
        }
        if !cx.expect_dim(&st, span, &s, &s.dims[1].clone(), &match ms.dims[0].v.clone() { Some(v) => v, None => continue }, Vec::new(), |input, channels, size| {
            LayerChannelMismatch::BatchNormStats { key: key.into(), size, input, channels }
        }) {
            return Vec::new();
        }
    }
    if training.is_none() {
        return vec![(st, Value::Unknown)];
    }
    vec![(st, tensor_value(s, t.dtype))]
}

/// `F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats)`: the
/// optional tensors are modelled when they certainly have the input's channels.
pub(super) fn functional_instance_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    if !matches!(b.get("use_input_stats"), None | Some(Value::Bool(true))) {
        return vec![(st, Value::Unknown)];
    }
    let s = st.resolve(&t.shape);
    let Some(r) = s.rank() else { return vec![(st, Value::Unknown)] };
    if r < 2 {
        return vec![(st, Value::Unknown)];
    }
    let c = [s.dims[1].clone()];
    if !["running_mean", "running_var", "weight", "bias"].iter().all(|k| optional_exact(cx, &st, b.get(k), &c)) {
        return vec![(st, Value::Unknown)];
    }
    if !spatial_stats_check(cx, &st, &s.dims[2..], &s, span, "F.instance_norm") {
        return Vec::new();
    }
    vec![(st, tensor_value(s, t.dtype))]
}

/// `normalized_shape` of LayerNorm: an int, a tuple or a list of ints.
fn normalized_shape(st: &State, v: Option<&Value>) -> Option<Vec<Poly>> {
    match v {
        Some(Value::Int(p)) => Some(vec![p.clone()]),
        Some(Value::Tuple(items)) => items.iter().map(|v| v.as_int().cloned()).collect(),
        Some(Value::Ref(id)) => match st.get(*id) {
            Obj::List(items) => items.iter().map(|v| v.as_int().cloned()).collect(),
            _ => None,
        },
        _ => None,
    }
}

/// Calling an `nn.LayerNorm`/`nn.RMSNorm` layer.
pub(super) fn call_layer_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, span: Span) -> Vals {
    let Some(ns) = normalized_shape(&st, l.args.get("normalized_shape")) else { return vec![(st, Value::Unknown)] };
    layer_norm(cx, st, t, &ns, &format!("{}{}", layer_name(l), l.kind), span)
}

/// `F.layer_norm(input, normalized_shape, weight, bias)`: weight and bias are modelled when
/// they certainly have the normalized shape.
pub(super) fn functional_layer_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let Some(ns) = normalized_shape(&st, b.get("normalized_shape")) else { return vec![(st, Value::Unknown)] };
    let want: Vec<Dim> = ns.iter().map(|p| Dim::known(p.clone(), None)).collect();
    if !optional_exact(cx, &st, b.get("weight"), &want) || !optional_exact(cx, &st, b.get("bias"), &want) {
        return vec![(st, Value::Unknown)];
    }
    layer_norm(cx, st, t, &ns, "F.layer_norm: LayerNorm", span)
}

/// Layer norm: the input's trailing dims must be `ns`.
/// `who`: the module's label and kind (`ln (line 5): LayerNorm`), for messages.
fn layer_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, ns: &[Poly], who: &str, span: Span) -> Vals {
    let mut st = st;
    let mut s = st.resolve(&t.shape);
    if s.prefix.is_some() && s.dims.len() < ns.len() {
        // first use: the trailing dims are the normalized shape
        let var = s.prefix.unwrap();
        let rest = cx.refine_var(var);
        let dims: Vec<Dim> = ns[..ns.len() - s.dims.len()].iter().map(|p| Dim::known(p.clone(), None)).collect();
        st.bind_shape(var, Shape { prefix: Some(rest), dims });
        s = st.resolve(&t.shape);
    }
    let nshow: Vec<String> = ns.iter().map(|p| p.display(cx.syms())).collect();
    let nshow = nshow.join(", ");
    if s.dims.len() < ns.len() {
        cx.check(&st, span, Tri::True, |cx| {
            let shown = cx.show_shape(&st, &s);
            (LayerChannelMismatch::NormalizedRank { layer: who.into(), normalized: nshow, input: shown }, Vec::new())
        });
        return Vec::new();
    }
    let tail = &s.dims[s.dims.len() - ns.len()..];
    for (d, n) in tail.iter().zip(ns.iter()) {
        let eq = cx.dim_eq_f(d, &Dim::known(n.clone(), None));
        if !cx.check(&st, span, eq.not(), |cx| {
            let shown = cx.show_shape(&st, &s);
            (LayerChannelMismatch::NormalizedShape { layer: who.into(), normalized: nshow.clone(), input: shown }, Vec::new())
        }) {
            return Vec::new();
        }
    }
    vec![(st, tensor_value(t.shape.clone(), t.dtype))]
}

/// Construction check of `nn.GroupNorm`: `num_channels` divisible by `num_groups`.
pub(super) fn group_norm_construct_checks(cx: &mut dyn ModelCtx, st: &State, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    let g = amap.get("num_groups").and_then(|v| v.as_const_int());
    let c = amap.get("num_channels").and_then(|v| v.as_const_int());
    match (g, c) {
        (Some(g), Some(c)) if g > 0 => cx.check(st, span, Tri::from_bool(c % g != 0), |_| {
            (InvalidShapeArgument::GroupNormChannels { channels: c.to_string(), groups: g.to_string() }, Vec::new())
        }),
        _ => true,
    }
}

/// Calling an `nn.GroupNorm` layer.
pub(super) fn call_group_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, span: Span) -> Vals {
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    let (Some(c), Some(g)) = (int("num_channels"), int("num_groups")) else { return vec![(st, Value::Unknown)] };
    if flag(l, "affine", true) != Some(true) {
        return vec![(st, Value::Unknown)];
    }
    group_norm(cx, st, t, &g, Some(&c), &format!("{}GroupNorm", layer_name(l)), span)
}

/// `F.group_norm(input, num_groups, weight, bias)`: weight and bias are modelled when they
/// certainly have the input's channels.
pub(super) fn functional_group_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let Some(g) = b.get("num_groups").and_then(|v| v.as_int().cloned()) else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    let affine_ok = match s.dims.get(1) {
        Some(c) if s.rank().is_some() => ["weight", "bias"].iter().all(|k| optional_exact(cx, &st, b.get(k), std::slice::from_ref(c))),
        _ => ["weight", "bias"].iter().all(|k| matches!(b.get(k), None | Some(Value::None))),
    };
    if !affine_ok {
        return vec![(st, Value::Unknown)];
    }
    group_norm(cx, st, t, &g, None, "F.group_norm", span)
}

/// Group norm: at least 2-D, channels (`c` when given) divisible by the groups, and more than
/// one value per group.
fn group_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, g: &Poly, c: Option<&Poly>, what: &str, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    let Some(r) = s.rank() else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(r < 2), |cx| {
        let shown = cx.show_shape(&st, &s);
        (LayerInputRankMismatch::AtLeast { op: what.into(), rank: "2".into(), shape: shown.clone() }, Vec::new())
    }) {
        return Vec::new();
    }
    let got = s.dims[1].clone();
    if let Some(c) = c
        && !cx.expect_dim(&st, span, &s, &got, c, Vec::new(), |input, channels, want| LayerChannelMismatch::Channels { layer: what.into(), param: "num_channels".into(), want, input, channels }) {
            return Vec::new();
        }
    if let (Some(n), Some(ch), Some(gc)) = (s.dims[0].as_const(), got.as_const(), g.as_const())
        && gc > 0 {
            let mut dims = vec![Dim::konst(n * ch / gc)];
            dims.extend(s.dims[2..].iter().cloned());
            if let Some(p) = const_product(&dims)
                && !cx.check(&st, span, Tri::from_bool(p == 1), |cx| (InvalidShapeArgument::GroupStats { op: what.into(), input: cx.show_shape(&st, &s) }, Vec::new())) {
                    return Vec::new();
                }
            if !cx.check(&st, span, Tri::from_bool(ch % gc != 0), |cx| {
                (LayerChannelMismatch::Groups { layer: what.into(), channels: ch.to_string(), input: cx.show_shape(&st, &s), groups: gc.to_string() }, Vec::new())
            }) {
                return Vec::new();
            }
        }
    vec![(st, tensor_value(t.shape.clone(), t.dtype))]
}
