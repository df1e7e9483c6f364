//! Shape-preserving layers and small reshapes: elementwise activations, dropouts, `Identity`,
//! the softmax family, `GLU`, `PReLU`, `F.normalize`, `Flatten` and `Unflatten`.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{layer_name, number, require_rank, show_number, Function, Module, Nn};
use crate::ir::Span;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::models::torch::tensor::{check_dim, flatten, tensor_value};
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerChannelMismatch, LayerInputRankMismatch, ReshapeSizeMismatch};
use crate::rules::Rule;
use crate::shape::{Poly, Tri};
use crate::value::*;

/// A module that keeps its input's shape: constructor signature, functional twin.
const fn same(name: &'static str, sig: &'static str, twin: &'static str) -> Nn {
    Nn::module(Decl::module(name, sig, "input").twin(twin), Module::Elementwise)
}
/// A function that keeps its input's shape, and its module.
const fn f_same(name: &'static str, sig: &'static str, twin: &'static str) -> Nn {
    Nn::function(Decl::function(name, sig).twin(twin), Function::Elementwise)
}

const DIM_CHECKS: &[&Rule] = &[&r::dim_out_of_range::RULE];
const GLU_CHECKS: &[&Rule] = &[&r::layer_input_rank_mismatch::RULE, &r::dim_out_of_range::RULE, &r::invalid_shape_argument::RULE];
const HARDTANH_CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE];
const DROPOUT1D_CHECKS: &[&Rule] = &[&r::layer_input_rank_mismatch::RULE];

// Scalar hyper-parameters (`inplace`, `negative_slope`, `alpha`, a dropout's `p` and
// `training`, ...) are accepted unread: they change values, never shapes or dtypes; their
// only checks are on the value itself (`p` in [0, 1]), which the model does not judge.
pub(super) const NN: &[Nn] = &[
    // `Identity` ignores its constructor arguments
    Nn::module(Decl::module("torch.nn.Identity", "~*args, ~**kwargs", "input"), Module::Elementwise),
    same("torch.nn.ReLU", "~inplace=False", "torch.nn.functional.relu"),
    same("torch.nn.ReLU6", "~inplace=False", "torch.nn.functional.relu6"),
    same("torch.nn.GELU", "~approximate=\"none\"", "torch.nn.functional.gelu"),
    same("torch.nn.Tanh", "", "torch.nn.functional.tanh"),
    same("torch.nn.Sigmoid", "", "torch.nn.functional.sigmoid"),
    same("torch.nn.LeakyReLU", "~negative_slope=0.01, ~inplace=False", "torch.nn.functional.leaky_relu"),
    same("torch.nn.ELU", "~alpha=1.0, ~inplace=False", "torch.nn.functional.elu"),
    same("torch.nn.SELU", "~inplace=False", "torch.nn.functional.selu"),
    same("torch.nn.SiLU", "~inplace=False", "torch.nn.functional.silu"),
    same("torch.nn.Mish", "~inplace=False", "torch.nn.functional.mish"),
    same("torch.nn.Hardswish", "~inplace=False", "torch.nn.functional.hardswish"),
    same("torch.nn.Hardsigmoid", "~inplace=False", "torch.nn.functional.hardsigmoid"),
    same("torch.nn.Softplus", "~beta=1.0, ~threshold=20.0", "torch.nn.functional.softplus"),
    // Hardtanh's bounds are read: torch asserts `max_val > min_val` when it is built
    Nn::module(
        Decl::module("torch.nn.Hardtanh", "min_val=-1.0, max_val=1.0, ~inplace=False, min_value=None, max_value=None", "input").twin("torch.nn.functional.hardtanh").checks(HARDTANH_CHECKS),
        Module::Elementwise,
    ),
    same("torch.nn.LogSigmoid", "", "torch.nn.functional.logsigmoid"),
    same("torch.nn.Tanhshrink", "", "torch.nn.functional.tanhshrink"),
    same("torch.nn.Softsign", "", "torch.nn.functional.softsign"),
    same("torch.nn.CELU", "~alpha=1.0, ~inplace=False", "torch.nn.functional.celu"),
    same("torch.nn.Hardshrink", "~lambd=0.5", "torch.nn.functional.hardshrink"),
    same("torch.nn.Softshrink", "~lambd=0.5", "torch.nn.functional.softshrink"),
    same("torch.nn.Threshold", "~threshold, ~value, ~inplace=False", "torch.nn.functional.threshold"),
    same("torch.nn.RReLU", "~lower=0.125, ~upper=0.3333333333333333, ~inplace=False", "torch.nn.functional.rrelu"),
    same("torch.nn.Dropout", "~p=0.5, ~inplace=False", "torch.nn.functional.dropout"),
    // a wrong rank only warns for Dropout2d/3d, but their feature dropout raises in training
    // below 2 dims (Dropout3d first adds a batch dim to an input that is not 5-D): `p` is read
    Nn::module(Decl::module("torch.nn.Dropout2d", "p=0.5, ~inplace=False", "input").twin("torch.nn.functional.dropout2d").checks(DROPOUT1D_CHECKS), Module::FeatureDropout { dims: 2 }),
    Nn::module(Decl::module("torch.nn.Dropout3d", "p=0.5, ~inplace=False", "input").twin("torch.nn.functional.dropout3d").checks(DROPOUT1D_CHECKS), Module::FeatureDropout { dims: 3 }),
    same("torch.nn.AlphaDropout", "~p=0.5, ~inplace=False", "torch.nn.functional.alpha_dropout"),
    // no `nn.FeatureAlphaDropout`: in training (a module's default) it needs at least 2 dims
    Nn::module(Decl::module("torch.nn.Dropout1d", "~p=0.5, ~inplace=False", "input").twin("torch.nn.functional.dropout1d").checks(DROPOUT1D_CHECKS), Module::Dropout1d),
    Nn::module(Decl::module("torch.nn.Softmax", "dim=None", "input").twin("torch.nn.functional.softmax").checks(DIM_CHECKS), Module::Softmax),
    Nn::module(Decl::module("torch.nn.LogSoftmax", "dim=None", "input").twin("torch.nn.functional.log_softmax").checks(DIM_CHECKS), Module::Softmax),
    Nn::module(Decl::module("torch.nn.Softmin", "dim=None", "input").twin("torch.nn.functional.softmin").checks(DIM_CHECKS), Module::Softmax),
    Nn::module(Decl::module("torch.nn.GLU", "dim=-1", "input").twin("torch.nn.functional.glu").checks(GLU_CHECKS), Module::Glu),
    Nn::module(
        Decl::module("torch.nn.PReLU", "num_parameters=1, ~init=0.25, ~device=None", "input").checks(&[&r::layer_input_rank_mismatch::RULE, &r::layer_channel_mismatch::RULE]),
        Module::PReLU,
    ),
    Nn::module(Decl::module("torch.nn.Flatten", "start_dim=1, end_dim=-1", "input").checks(DIM_CHECKS), Module::Flatten),
    Nn::module(
        Decl::module("torch.nn.Unflatten", "dim, unflattened_size", "input").checks(&[&r::dim_out_of_range::RULE, &r::invalid_shape_argument::RULE, &r::reshape_size_mismatch::RULE]),
        Module::Unflatten,
    ),
    f_same("torch.nn.functional.relu", "input, ~inplace=False", "torch.nn.ReLU"),
    Nn::function(Decl::function("torch.nn.functional.relu_", "input"), Function::Elementwise),
    f_same("torch.nn.functional.relu6", "input, ~inplace=False", "torch.nn.ReLU6"),
    f_same("torch.nn.functional.gelu", "input, ~approximate=\"none\"", "torch.nn.GELU"),
    f_same("torch.nn.functional.silu", "input, ~inplace=False", "torch.nn.SiLU"),
    f_same("torch.nn.functional.elu", "input, ~alpha=1.0, ~inplace=False", "torch.nn.ELU"),
    Nn::function(Decl::function("torch.nn.functional.elu_", "input, ~alpha=1.0"), Function::Elementwise),
    f_same("torch.nn.functional.selu", "input, ~inplace=False", "torch.nn.SELU"),
    f_same("torch.nn.functional.celu", "input, ~alpha=1.0, ~inplace=False", "torch.nn.CELU"),
    f_same("torch.nn.functional.leaky_relu", "input, ~negative_slope=0.01, ~inplace=False", "torch.nn.LeakyReLU"),
    Nn::function(Decl::function("torch.nn.functional.leaky_relu_", "input, ~negative_slope=0.01"), Function::Elementwise),
    f_same("torch.nn.functional.sigmoid", "input", "torch.nn.Sigmoid"),
    f_same("torch.nn.functional.tanh", "input", "torch.nn.Tanh"),
    f_same("torch.nn.functional.hardswish", "input, ~inplace=False", "torch.nn.Hardswish"),
    f_same("torch.nn.functional.hardsigmoid", "input, ~inplace=False", "torch.nn.Hardsigmoid"),
    f_same("torch.nn.functional.mish", "input, ~inplace=False", "torch.nn.Mish"),
    f_same("torch.nn.functional.softplus", "input, ~beta=1, ~threshold=20", "torch.nn.Softplus"),
    // F.hardtanh raises when `min_val > max_val` (`hardtanh_`, in C++, does not check)
    Nn::function(Decl::function("torch.nn.functional.hardtanh", "input, min_val=-1.0, max_val=1.0, ~inplace=False").twin("torch.nn.Hardtanh").checks(HARDTANH_CHECKS), Function::Elementwise),
    Nn::function(Decl::function("torch.nn.functional.hardtanh_", "input, ~min_val=-1.0, ~max_val=1.0"), Function::Elementwise),
    f_same("torch.nn.functional.logsigmoid", "input", "torch.nn.LogSigmoid"),
    f_same("torch.nn.functional.softsign", "input", "torch.nn.Softsign"),
    f_same("torch.nn.functional.tanhshrink", "input", "torch.nn.Tanhshrink"),
    f_same("torch.nn.functional.hardshrink", "input, ~lambd=0.5", "torch.nn.Hardshrink"),
    f_same("torch.nn.functional.softshrink", "input, ~lambd=0.5", "torch.nn.Softshrink"),
    f_same("torch.nn.functional.rrelu", "input, ~lower=0.125, ~upper=0.3333333333333333, ~training=False, ~inplace=False", "torch.nn.RReLU"),
    f_same("torch.nn.functional.threshold", "input, ~threshold, ~value, ~inplace=False", "torch.nn.Threshold"),
    f_same("torch.nn.functional.dropout", "input, ~p=0.5, ~training=True, ~inplace=False", "torch.nn.Dropout"),
    Nn::function(Decl::function("torch.nn.functional.dropout2d", "input, p=0.5, training=True, ~inplace=False").twin("torch.nn.Dropout2d").checks(DROPOUT1D_CHECKS), Function::FeatureDropout { dims: 2 }),
    Nn::function(Decl::function("torch.nn.functional.dropout3d", "input, p=0.5, training=True, ~inplace=False").twin("torch.nn.Dropout3d").checks(DROPOUT1D_CHECKS), Function::FeatureDropout { dims: 3 }),
    f_same("torch.nn.functional.alpha_dropout", "input, ~p=0.5, ~training=False, ~inplace=False", "torch.nn.AlphaDropout"),
    // `training` is not declared: with it, torch needs at least 2 dims (a call that passes it is Unknown)
    Nn::function(Decl::function("torch.nn.functional.feature_alpha_dropout", "input, ~p=0.5"), Function::Elementwise),
    Nn::function(Decl::function("torch.nn.functional.dropout1d", "input, ~p=0.5, ~training=True, ~inplace=False").twin("torch.nn.Dropout1d").checks(DROPOUT1D_CHECKS), Function::Dropout1d),
    // `_stacklevel` only places a warning; `dtype` (not declared) would change the result's dtype
    Nn::function(Decl::function("torch.nn.functional.softmax", "input, dim=None, ~_stacklevel=3").twin("torch.nn.Softmax").checks(DIM_CHECKS), Function::Softmax),
    Nn::function(Decl::function("torch.nn.functional.log_softmax", "input, dim=None, ~_stacklevel=3").twin("torch.nn.LogSoftmax").checks(DIM_CHECKS), Function::Softmax),
    Nn::function(Decl::function("torch.nn.functional.softmin", "input, dim=None, ~_stacklevel=3").twin("torch.nn.Softmin").checks(DIM_CHECKS), Function::Softmax),
    Nn::function(Decl::function("torch.nn.functional.glu", "input, dim=-1").twin("torch.nn.GLU").checks(GLU_CHECKS), Function::Glu),
    Nn::function(Decl::function("torch.nn.functional.normalize", "input, ~p=2.0, dim=1, ~eps=1e-12").checks(DIM_CHECKS), Function::Normalize),
];

/// `nn.Hardtanh(min_val, max_val)`: torch asserts `max_val > min_val` when it is built (the
/// deprecated `min_value`/`max_value` replace them when given). Unknown bounds are not judged.
pub(super) fn hardtanh_construct_checks(cx: &mut dyn ModelCtx, st: &State, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    let bound = |new: &str, old: &str, default: f64| match amap.get(old).filter(|v| !matches!(v, Value::None)).or(amap.get(new)) {
        None => Some((default, format!("{default:.1}"))),
        Some(v) => number(v).map(|x| (x, show_number(v))),
    };
    let (Some((lo, los)), Some((hi, his))) = (bound("min_val", "min_value", -1.0), bound("max_val", "max_value", 1.0)) else { return true };
    cx.check(st, span, Tri::from_bool(hi <= lo), |_| {
        (InvalidShapeArgument::ArgMust { op: "Hardtanh".into(), name: "max_val".into(), value: his, should: format!("be greater than min_val={los}") }, Vec::new())
    })
}

/// `F.hardtanh(input, min_val, max_val)`: torch raises when `min_val > max_val`. Unknown bounds
/// are not judged.
pub(super) fn hardtanh(cx: &mut dyn ModelCtx, st: State, t: Rc<Tensor>, min_val: Option<&Value>, max_val: Option<&Value>, span: Span) -> Vals {
    let bound = |v: Option<&Value>, default: f64| match v {
        None => Some((default, format!("{default:.1}"))),
        Some(v) => number(v).map(|x| (x, show_number(v))),
    };
    if let (Some((lo, los)), Some((hi, his))) = (bound(min_val, -1.0), bound(max_val, 1.0))
        && !cx.check(&st, span, Tri::from_bool(lo > hi), |_| {
            (InvalidShapeArgument::ArgMust { op: "F.hardtanh".into(), name: "min_val".into(), value: los, should: format!("not be greater than max_val={his}") }, Vec::new())
        }) {
            return Vec::new();
        }
    vec![(st, Value::Tensor(t))]
}

/// `Dropout1d`/`F.dropout1d`: a 2-D or 3-D input.
pub(super) fn dropout1d(cx: &mut dyn ModelCtx, st: State, t: &Tensor, what: &str, span: Span) -> Vals {
    let mut out = Vec::new();
    for (st, s) in require_rank(cx, st, t, &[2, 3], &["N", "C", "L"], &[], span, &format!("{what}: ")) {
        out.push((st, tensor_value(s, t.dtype)));
    }
    out
}

/// `Dropout2d`/`Dropout3d` and their twins: the input's shape. In training with `0 < p < 1`
/// torch's feature dropout needs at least 2 dims ("Feature dropout requires at least 2
/// dimensions in the input"); Dropout3d adds a batch dim to an input that is not 5-D, so only a
/// 0-D input fails there. An empty input and `p` 0 or 1 take shortcuts. `training`: certainly
/// training, certainly not, or unknown (then a small input is Unknown).
#[allow(clippy::too_many_arguments)]
pub(super) fn feature_dropout(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, dims: usize, p: Option<&Value>, training: Option<bool>, what: &str, span: Span) -> Vals {
    let p = match p {
        None => Some(0.5),
        Some(Value::Float(f)) => *f,
        Some(v) => v.as_const_int().map(|i| i as f64),
    };
    // p outside [0, 1] raises a ValueError (not modelled); an unknown p is taken for a valid one
    if p.is_some_and(|p| !(0.0..=1.0).contains(&p)) {
        return vec![(st, Value::Unknown)];
    }
    let s = st.resolve(&t.shape);
    let need = if dims == 2 { 2 } else { 1 };
    let Some(rank) = s.rank() else { return vec![(st, Value::Tensor(t.clone()))] };
    if rank >= need || p == Some(0.0) || p == Some(1.0) || training == Some(false) {
        return vec![(st, Value::Tensor(t.clone()))];
    }
    let nonempty = s.dims.iter().all(|d| d.as_const().is_some_and(|c| c > 0));
    if training.is_none() || !nonempty || p.is_none() {
        return vec![(st, Value::Unknown)];
    }
    cx.check(&st, span, Tri::True, |cx| (LayerInputRankMismatch::AtLeast { op: what.into(), rank: need.to_string(), shape: cx.show_shape(&st, &s) }, Vec::new()));
    Vec::new()
}

/// The softmax family: `dim`, when a constant, must be a dim of the input.
pub(super) fn softmax(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, dim: Option<&Value>, what: &str, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    if let Some(d) = dim.and_then(|v| v.as_const_int())
        && check_dim(cx, &st, &s, d, span, what) == Some(usize::MAX) {
            return Vec::new();
        }
    vec![(st, Value::Tensor(t.clone()))]
}

/// `F.normalize(input, p, dim)`: `dim` (default 1), when a constant, must be a dim of the input.
pub(super) fn normalize(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, dim: Option<&Value>, span: Span) -> Vals {
    let d = match dim {
        None => Some(1),
        Some(v) => v.as_const_int(),
    };
    let s = st.resolve(&t.shape);
    if let Some(d) = d
        && check_dim(cx, &st, &s, d, span, "F.normalize") == Some(usize::MAX) {
            return Vec::new();
        }
    vec![(st, Value::Tensor(t.clone()))]
}

/// `GLU`/`F.glu` with `dim` (default -1).
pub(super) fn glu_dim(cx: &mut dyn ModelCtx, st: State, t: &Tensor, dim: Option<&Value>, what: &str, span: Span) -> Vals {
    let d = match dim {
        None => Some(-1),
        Some(v) => v.as_const_int(),
    };
    let Some(d) = d else { return vec![(st, Value::Unknown)] };
    glu(cx, st, t, d, what, span)
}

/// `glu(x, dim)`: the size along `dim` must be even, and halves.
fn glu(cx: &mut dyn ModelCtx, st: State, t: &Tensor, d: i128, what: &str, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(rank == 0), |_| (LayerInputRankMismatch::NoZeroD { op: what.into() }, Vec::new())) {
        return Vec::new();
    }
    let i = match check_dim(cx, &st, &s, d, span, what) {
        Some(usize::MAX) => return Vec::new(),
        Some(i) => i,
        None => return vec![(st, Value::Unknown)],
    };
    let Some(size) = s.dims[i].as_const() else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(size % 2 != 0), |cx| {
        let shown = cx.show_shape(&st, &s);
        (InvalidShapeArgument::GluOdd { op: what.into(), dim: d.to_string(), input: shown, size: size.to_string() }, Vec::new())
    }) {
        return Vec::new();
    }
    let mut dims = s.dims.clone();
    dims[i] = Dim::konst(size / 2);
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

/// Calling an `nn.PReLU(num_parameters)` layer: more than one parameter needs that many
/// channels (dim 1, or 1 for a 1-D input).
pub(super) fn prelu(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, l: &Layer, span: Span) -> Vals {
    let who = layer_name(l);
    let n = match l.args.get("num_parameters") {
        None => Some(1),
        Some(v) => v.as_const_int(),
    };
    let Some(n) = n else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    if n != 1 {
        if !cx.check(&st, span, Tri::from_bool(rank == 0), |_| (LayerInputRankMismatch::ZeroD { layer: format!("{who}PReLU({n})") }, Vec::new())) {
            return Vec::new();
        }
        let c = if rank >= 2 { s.dims[1].clone() } else { Dim::konst(1) };
        if !cx.expect_dim(&st, span, &s, &c, &Poly::constant(n), Vec::new(), |input, channels, want| {
            LayerChannelMismatch::Channels { layer: format!("{who}PReLU"), param: "num_parameters".into(), want, input, channels }
        }) {
            return Vec::new();
        }
    }
    vec![(st, Value::Tensor(t.clone()))]
}

/// Calling an `nn.Flatten(start_dim, end_dim)` layer.
pub(super) fn call_flatten(cx: &mut dyn ModelCtx, st: State, t: &Rc<Tensor>, l: &Layer, span: Span) -> Vals {
    let sd = l.args.get("start_dim").and_then(|v| v.as_const_int()).unwrap_or(1);
    let ed = l.args.get("end_dim").and_then(|v| v.as_const_int()).unwrap_or(-1);
    flatten(cx, st, t, sd, ed, span, "nn.Flatten")
}

/// Calling an `nn.Unflatten(dim, unflattened_size)` layer.
pub(super) fn call_unflatten(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, span: Span) -> Vals {
    let (Some(d), Some(sizes)) = (l.args.get("dim").and_then(|v| v.as_const_int()), l.args.get("unflattened_size").cloned()) else { return vec![(st, Value::Unknown)] };
    unflatten(cx, st, t, d, &sizes, &format!("{}Unflatten", layer_name(l)), span)
}

/// `unflatten(dim, sizes)`: dim `d` becomes `sizes` (one may be -1), whose product must be
/// the dim's size.
fn unflatten(cx: &mut dyn ModelCtx, st: State, t: &Tensor, d: i128, sizes: &Value, what: &str, span: Span) -> Vals {
    let sizes: Option<Vec<i128>> = match sizes {
        Value::Tuple(items) => items.iter().map(|v| v.as_const_int()).collect(),
        Value::Ref(id) => match st.get(*id) {
            Obj::List(items) => items.iter().map(|v| v.as_const_int()).collect(),
            _ => None,
        },
        _ => None,
    };
    let Some(sizes) = sizes else { return vec![(st, Value::Unknown)] };
    let s = st.resolve(&t.shape);
    if s.rank().is_none() || s.dims.is_empty() {
        return vec![(st, Value::Unknown)];
    }
    let i = match check_dim(cx, &st, &s, d, span, what) {
        Some(usize::MAX) => return Vec::new(),
        Some(i) => i,
        None => return vec![(st, Value::Unknown)],
    };
    let holes = sizes.iter().filter(|x| **x == -1).count();
    if holes > 1 || sizes.iter().any(|x| *x < -1) {
        cx.check(&st, span, Tri::True, |_| (InvalidShapeArgument::UnflattenSizes { op: what.into(), sizes: format!("{sizes:?}") }, Vec::new()));
        return Vec::new();
    }
    let Some(size) = s.dims[i].as_const() else { return vec![(st, Value::Unknown)] };
    let known: i128 = sizes.iter().filter(|x| **x != -1).product();
    let bad = if holes == 1 { known == 0 || size % known != 0 } else { known != size };
    if !cx.check(&st, span, Tri::from_bool(bad), |cx| {
        let shown = cx.show_shape(&st, &s);
        (ReshapeSizeMismatch::Unflatten { op: what.into(), sizes: format!("{sizes:?}"), size: size.to_string(), dim: d.to_string(), input: shown }, Vec::new())
    }) {
        return Vec::new();
    }
    let mut dims = s.dims[..i].to_vec();
    dims.extend(sizes.iter().map(|x| Dim::konst(if *x == -1 { size / known } else { *x })));
    dims.extend(s.dims[i + 1..].iter().cloned());
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}
