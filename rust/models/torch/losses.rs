//! Loss modules and their functional twins: input/target agreement (SHP108).

use std::collections::BTreeMap;
use std::rc::Rc;

use super::layers::{layer_name, number, show_number, Bound, Function, Module, Nn};
use super::tensor::{broadcast, check_index_values, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::{Api, Decl};
use crate::value::*;
use crate::ir::Span;
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerChannelMismatch, LossTargetMismatch};
use crate::rules::Rule;
use crate::shape::{Formula, Tri};

/// Which loss; its module's name is the layer's kind (or the function's twin) in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    CrossEntropy,
    Nll,
    Mse,
    L1,
    SmoothL1,
    Huber,
    Bce,
    BceWithLogits,
    SoftMargin,
    KlDiv,
    CosineEmbedding,
    MarginRanking,
    TripletMargin,
    Ctc,
}

impl Loss {
    /// The number of tensors a call of the loss takes (its first parameters).
    fn arity(self) -> usize {
        match self {
            Loss::CosineEmbedding | Loss::MarginRanking | Loss::TripletMargin => 3,
            Loss::Ctc => 4,
            _ => 2,
        }
    }
}

// every loss checks its reduction string (SHP111); CrossEntropyLoss and NLLLoss their class weight (SHP107)
const CLASS: &[&Rule] = &[&r::loss_target_mismatch::RULE, &r::invalid_shape_argument::RULE, &r::layer_channel_mismatch::RULE];
const BROADCAST: &[&Rule] = &[&r::broadcast_shape_mismatch::RULE, &crate::rules::may_fail::loss_target_broadcast::RULE, &r::invalid_shape_argument::RULE];
const MATCHED: &[&Rule] = &[&r::loss_target_mismatch::RULE, &r::broadcast_shape_mismatch::RULE, &r::invalid_shape_argument::RULE];

const fn module(name: &'static str, sig: &'static str, call: &'static str, twin: &'static str, checks: &'static [&'static Rule], loss: Loss) -> Nn {
    Nn::module(Decl::module(name, sig, call).twin(twin).checks(checks), Module::Loss(loss))
}
const fn function(name: &'static str, sig: &'static str, twin: &'static str, checks: &'static [&'static Rule], loss: Loss) -> Nn {
    Nn::function(Decl::function(name, sig).twin(twin).checks(checks), Function::Loss(loss))
}

// `weight` (but CrossEntropyLoss's and NLLLoss's: one per class; BCELoss's and
// BCEWithLogitsLoss's, with `pos_weight`: a tensor of the input's dtype that broadcasts to the
// input), `pos_weight` and the legacy `size_average`/`reduce` are read: modelled only when
// absent (or None). `ignore_index` is read: the
// one class-index target exempt from the range check (a non-constant one: no check).
// `label_smoothing`, `margin`, `beta`, `delta`, `blank`, ... change the loss's value, not its
// shape; their only checks are on the value itself (a triplet loss's `margin` is read: torch
// raises for `margin <= 0`).
pub const NN: &[Nn] = &[
    module("torch.nn.CrossEntropyLoss", "weight=None, size_average=None, ignore_index=-100, reduce=None, reduction=\"mean\", ~label_smoothing=0.0", "input, target", "torch.nn.functional.cross_entropy", CLASS, Loss::CrossEntropy),
    module("torch.nn.NLLLoss", "weight=None, size_average=None, ignore_index=-100, reduce=None, reduction=\"mean\"", "input, target", "torch.nn.functional.nll_loss", CLASS, Loss::Nll),
    module("torch.nn.MSELoss", "size_average=None, reduce=None, reduction=\"mean\"", "input, target", "torch.nn.functional.mse_loss", BROADCAST, Loss::Mse),
    module("torch.nn.L1Loss", "size_average=None, reduce=None, reduction=\"mean\"", "input, target", "torch.nn.functional.l1_loss", BROADCAST, Loss::L1),
    module("torch.nn.SmoothL1Loss", "size_average=None, reduce=None, reduction=\"mean\", ~beta=1.0", "input, target", "torch.nn.functional.smooth_l1_loss", BROADCAST, Loss::SmoothL1),
    module("torch.nn.HuberLoss", "reduction=\"mean\", ~delta=1.0", "input, target", "torch.nn.functional.huber_loss", BROADCAST, Loss::Huber),
    module("torch.nn.BCELoss", "weight=None, size_average=None, reduce=None, reduction=\"mean\"", "input, target", "torch.nn.functional.binary_cross_entropy", CLASS, Loss::Bce),
    module("torch.nn.BCEWithLogitsLoss", "weight=None, size_average=None, reduce=None, reduction=\"mean\", pos_weight=None", "input, target", "torch.nn.functional.binary_cross_entropy_with_logits", CLASS, Loss::BceWithLogits),
    module("torch.nn.SoftMarginLoss", "size_average=None, reduce=None, reduction=\"mean\"", "input, target", "torch.nn.functional.soft_margin_loss", MATCHED, Loss::SoftMargin),
    module("torch.nn.KLDivLoss", "size_average=None, reduce=None, reduction=\"mean\", ~log_target=False", "input, target", "torch.nn.functional.kl_div", BROADCAST, Loss::KlDiv),
    module("torch.nn.CosineEmbeddingLoss", "~margin=0.0, size_average=None, reduce=None, reduction=\"mean\"", "input1, input2, target", "torch.nn.functional.cosine_embedding_loss", MATCHED, Loss::CosineEmbedding),
    module("torch.nn.MarginRankingLoss", "~margin=0.0, size_average=None, reduce=None, reduction=\"mean\"", "input1, input2, target", "torch.nn.functional.margin_ranking_loss", MATCHED, Loss::MarginRanking),
    module(
        "torch.nn.TripletMarginLoss",
        "margin=1.0, ~p=2.0, ~eps=1e-06, ~swap=False, size_average=None, reduce=None, reduction=\"mean\"",
        "anchor, positive, negative",
        "torch.nn.functional.triplet_margin_loss",
        MATCHED,
        Loss::TripletMargin,
    ),
    module("torch.nn.CTCLoss", "~blank=0, reduction=\"mean\", ~zero_infinity=False", "log_probs, targets, input_lengths, target_lengths", "torch.nn.functional.ctc_loss", CLASS, Loss::Ctc),
    function(
        "torch.nn.functional.cross_entropy",
        "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction=\"mean\", ~label_smoothing=0.0",
        "torch.nn.CrossEntropyLoss",
        CLASS,
        Loss::CrossEntropy,
    ),
    function("torch.nn.functional.nll_loss", "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction=\"mean\"", "torch.nn.NLLLoss", CLASS, Loss::Nll),
    function("torch.nn.functional.mse_loss", "input, target, size_average=None, reduce=None, reduction=\"mean\", weight=None", "torch.nn.MSELoss", BROADCAST, Loss::Mse),
    function("torch.nn.functional.l1_loss", "input, target, size_average=None, reduce=None, reduction=\"mean\", weight=None", "torch.nn.L1Loss", BROADCAST, Loss::L1),
    function("torch.nn.functional.smooth_l1_loss", "input, target, size_average=None, reduce=None, reduction=\"mean\", ~beta=1.0", "torch.nn.SmoothL1Loss", BROADCAST, Loss::SmoothL1),
    function("torch.nn.functional.huber_loss", "input, target, reduction=\"mean\", ~delta=1.0, weight=None", "torch.nn.HuberLoss", BROADCAST, Loss::Huber),
    function("torch.nn.functional.binary_cross_entropy", "input, target, weight=None, size_average=None, reduce=None, reduction=\"mean\"", "torch.nn.BCELoss", CLASS, Loss::Bce),
    function(
        "torch.nn.functional.binary_cross_entropy_with_logits",
        "input, target, weight=None, size_average=None, reduce=None, reduction=\"mean\", pos_weight=None",
        "torch.nn.BCEWithLogitsLoss",
        CLASS,
        Loss::BceWithLogits,
    ),
    function("torch.nn.functional.soft_margin_loss", "input, target, size_average=None, reduce=None, reduction=\"mean\"", "torch.nn.SoftMarginLoss", MATCHED, Loss::SoftMargin),
    function("torch.nn.functional.kl_div", "input, target, size_average=None, reduce=None, reduction=\"mean\", ~log_target=False", "torch.nn.KLDivLoss", BROADCAST, Loss::KlDiv),
    function(
        "torch.nn.functional.cosine_embedding_loss",
        "input1, input2, target, ~margin=0, size_average=None, reduce=None, reduction=\"mean\"",
        "torch.nn.CosineEmbeddingLoss",
        MATCHED,
        Loss::CosineEmbedding,
    ),
    function(
        "torch.nn.functional.margin_ranking_loss",
        "input1, input2, target, ~margin=0, size_average=None, reduce=None, reduction=\"mean\"",
        "torch.nn.MarginRankingLoss",
        MATCHED,
        Loss::MarginRanking,
    ),
    function(
        "torch.nn.functional.triplet_margin_loss",
        "anchor, positive, negative, margin=1.0, ~p=2, ~eps=1e-06, ~swap=False, size_average=None, reduce=None, reduction=\"mean\"",
        "torch.nn.TripletMarginLoss",
        MATCHED,
        Loss::TripletMargin,
    ),
    function(
        "torch.nn.functional.ctc_loss",
        "log_probs, targets, input_lengths, target_lengths, ~blank=0, reduction=\"mean\", ~zero_infinity=False",
        "torch.nn.CTCLoss",
        CLASS,
        Loss::Ctc,
    ),
];

/// Without `weight`, `pos_weight` and the legacy `size_average`/`reduce` (or with them None):
/// the only cases modelled.
/// CrossEntropyLoss and NLLLoss read `weight` (one value per class).
/// BCELoss and BCEWithLogitsLoss read `weight` and `pos_weight` (`bce_weights`).
fn plain<'a>(kind: Loss, get: impl Fn(&str) -> Option<&'a Value>) -> bool {
    let weighted = matches!(kind, Loss::CrossEntropy | Loss::Nll);
    let elementwise = matches!(kind, Loss::Bce | Loss::BceWithLogits);
    ["weight", "pos_weight", "size_average", "reduce"]
        .iter()
        .filter(|k| !(weighted && **k == "weight") && !(elementwise && matches!(**k, "weight" | "pos_weight")))
        .all(|k| matches!(get(k), None | Some(Value::None)))
}

/// The `weight` and `pos_weight` of a binary cross entropy, when each is absent or certainly
/// harmless: a tensor of the input's dtype whose shape broadcasts to the input's (torch
/// multiplies them into the loss in place: `output with shape [3, 4] doesn't match the
/// broadcast shape [2, 3, 4]`, `The size of tensor a (3) must match ...`). The loss then has
/// the shape it has without them. `false` when one is anything else (the call is not modelled).
fn bce_weights_fit(st: &State, input: &Value, weights: &[Option<&Value>]) -> bool {
    let Value::Tensor(x) = input else { return false };
    let sx = st.resolve(&x.shape);
    weights.iter().flatten().filter(|w| !matches!(w, Value::None)).all(|w| {
        let Value::Tensor(w) = w else { return false };
        let sw = st.resolve(&w.shape);
        let (Some(rw), Some(rx)) = (sw.rank(), sx.rank()) else { return false };
        x.dtype.is_some() && w.dtype == x.dtype && rw <= rx && sw.dims.iter().rev().zip(sx.dims.iter().rev()).all(|(dw, dx)| {
            match (dw.as_const(), &dw.v, &dx.v) {
                (Some(1), _, _) => true,
                (_, Some(a), Some(b)) => st.facts.normalize(a) == st.facts.normalize(b),
                _ => false,
            }
        })
    })
}

/// Calling a loss module: the call's tensors (`b`, bound to the call's parameters) and the
/// constructor's reduction.
pub fn call_module(cx: &mut dyn ModelCtx, st: State, kind: Loss, l: &Layer, api: &Api, b: &Bound, span: Span) -> Vals {
    if !plain(kind, |k| l.args.get(k)) {
        return vec![(st, Value::Unknown)];
    }
    let vals: Option<Vec<Value>> = api.call_params.iter().map(|p| b.get(p.name).cloned()).collect();
    let Some(vals) = vals else { return vec![(st, Value::Unknown)] };
    let args = Args { red: l.args.get("reduction"), weight: l.args.get("weight"), pos_weight: l.args.get("pos_weight"), ignore: l.args.get("ignore_index"), margin: None };
    run(cx, st, kind, &vals, args, &format!("{}{}", layer_name(l), l.kind), span)
}

/// `F.cross_entropy(input, target, ...)` and the other functional losses; `what` names the
/// call in messages (`F.cross_entropy CrossEntropyLoss`).
pub fn functional(cx: &mut dyn ModelCtx, st: State, kind: Loss, api: &Api, b: &Bound, what: &str, span: Span) -> Vals {
    if !plain(kind, |k| b.get(k)) {
        return vec![(st, Value::Unknown)];
    }
    let vals: Option<Vec<Value>> = api.params[..kind.arity()].iter().map(|p| b.get(p.name).cloned()).collect();
    let Some(vals) = vals else { return vec![(st, Value::Unknown)] };
    // `F.triplet_margin_loss` checks its margin after the reduction (the module, when built)
    let margin = if kind == Loss::TripletMargin { b.get("margin") } else { None };
    let args = Args { red: b.get("reduction"), weight: b.get("weight"), pos_weight: b.get("pos_weight"), ignore: b.get("ignore_index"), margin };
    run(cx, st, kind, &vals, args, what, span)
}

/// `margin <= 0`, which a triplet margin loss rejects; an unknown margin is not judged. False
/// when the path ends.
fn check_margin(cx: &mut dyn ModelCtx, st: &State, margin: Option<&Value>, what: &str, span: Span) -> bool {
    let Some(v) = margin else { return true };
    let Some(m) = number(v) else { return true };
    cx.check(st, span, Tri::from_bool(m <= 0.0), |_| {
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "margin".into(), value: show_number(v), should: "be greater than 0".into() }, Vec::new())
    })
}

/// `nn.TripletMarginLoss(margin)`: torch raises for `margin <= 0` when it is built.
pub fn triplet_construct_checks(cx: &mut dyn ModelCtx, st: &State, kind: &str, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    check_margin(cx, st, amap.get("margin"), kind, span)
}

/// The arguments of a loss other than its tensors: `reduction`, a class `weight`,
/// `ignore_index` and a functional triplet loss's `margin` (each `None` when not passed).
struct Args<'a> {
    red: Option<&'a Value>,
    weight: Option<&'a Value>,
    pos_weight: Option<&'a Value>,
    ignore: Option<&'a Value>,
    margin: Option<&'a Value>,
}

/// Call a loss with its tensors. A reduction string torch does not know raises ValueError
/// ("... is not a valid value for reduction", SHP111): 'none', 'mean', 'sum' (and the deprecated
/// 'elementwise_mean'), and 'batchmean' for kl_div.
fn run(cx: &mut dyn ModelCtx, st: State, kind: Loss, vals: &[Value], args: Args, what: &str, span: Span) -> Vals {
    let red = args.red;
    if let Some(Value::Str(Some(r))) = red {
        let ok = matches!(&**r, "none" | "mean" | "sum" | "elementwise_mean") || (&**r == "batchmean" && kind == Loss::KlDiv);
        if !cx.check(&st, span, Tri::from_bool(!ok), |_| (InvalidShapeArgument::Reduction { op: what.into(), value: r.to_string() }, Vec::new())) {
            return Vec::new();
        }
    }
    if !check_margin(cx, &st, args.margin, what, span) {
        return Vec::new();
    }
    let weight = args.weight.filter(|w| !matches!(w, Value::None));
    if matches!(kind, Loss::Bce | Loss::BceWithLogits) {
        // (checked after the target's size, as torch does: `call_loss` first, without them)
        if weight.is_some() || args.pos_weight.is_some_and(|w| !matches!(w, Value::None)) {
            let out = call_loss(cx, st, kind, &vals[0], &vals[1], red, None, args.ignore, what, span);
            return out.into_iter().map(|(st, v)| if bce_weights_fit(&st, &vals[0], &[weight, args.pos_weight]) { (st, v) } else { (st, Value::Unknown) }).collect();
        }
    }
    match kind {
        Loss::CosineEmbedding | Loss::MarginRanking | Loss::TripletMargin => three_way(cx, st, kind, vals, red, what, span),
        Loss::Ctc => ctc(cx, st, vals, red, what, span),
        _ => call_loss(cx, st, kind, &vals[0], &vals[1], red, weight, args.ignore, what, span),
    }
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

/// Class-index targets (`int64`) with known values: one certainly outside `[0, classes)` and
/// other than `ignore_index` (default -100) raises `IndexError: Target 7 is out of bounds.`,
/// whatever the reduction, weight or label smoothing; a non-constant `ignore_index` or class
/// count: no check. False when torch certainly raises.
#[allow(clippy::too_many_arguments)]
fn check_targets(cx: &mut dyn ModelCtx, st: &State, y: &Tensor, classes: &Dim, ignore: Option<&Value>, what: &str, span: Span) -> bool {
    let exempt = match ignore {
        None => Some(-100),
        Some(Value::Int(p)) => p.as_const(),
        _ => None,
    };
    let (Some(n), Some(exempt)) = (classes.as_const(), exempt) else { return true };
    if y.dtype != Some(DType::Long) {
        return true;
    }
    check_index_values(cx, st, y, Some(n), Some(exempt), span, what, |_| {
        if exempt == -100 { format!("{n} classes") } else { format!("{n} classes (ignore_index={exempt})") }
    })
}

/// Check `loss(input, target)`; `red` is the reduction argument.
#[allow(clippy::too_many_arguments)]
fn call_loss(cx: &mut dyn ModelCtx, st: State, kind: Loss, input: &Value, target: &Value, red: Option<&Value>, weight: Option<&Value>, ignore: Option<&Value>, what: &str, span: Span) -> Vals {
    // a target the core does not follow (data it cannot read): nothing is checked, but the loss
    // is a loss of the input: a scalar when reduced (of the input's dtype for a class loss), with
    // the input's graph (`autograd::unfollowed`: the target may carry one of its own)
    if let (Value::Tensor(x), Value::Unknown) = (input, target) {
        let v = match reduction(red) {
            Some("none") | None => tensor_value(cx.any_shape(), None),
            Some(_) => tensor_value(Shape::known(Vec::new()), if matches!(kind, Loss::CrossEntropy | Loss::Nll) { x.dtype } else { None }),
        };
        return vec![(st, v)];
    }
    let (Value::Tensor(x), Value::Tensor(y)) = (input, target) else { return vec![(st, Value::Unknown)] };
    let Some(red) = reduction(red) else { return vec![(st, Value::Unknown)] };
    let sx = st.resolve(&x.shape);
    let sy = st.resolve(&y.shape);
    let scalar = |st: State, shape: Shape| {
        let s = if red == "none" { shape } else { Shape::known(Vec::new()) };
        vec![(st, tensor_value(s, x.dtype))]
    };
    let (sxs, sys) = (cx.show_shape(&st, &sx), cx.show_shape(&st, &sy));
    match kind {
        Loss::CrossEntropy | Loss::Nll => {
            let (Some(rx), Some(ry)) = (sx.rank(), sy.rank()) else {
                // shapes of unknown rank: not judged; a reduced loss is a scalar of the
                // input's dtype (unreduced, its shape is not followed)
                return if red == "none" { vec![(st, Value::Unknown)] } else { scalar(st, Shape::known(Vec::new())) };
            };
            let is_index = matches!(y.dtype, Some(DType::Long | DType::Int | DType::Byte));
            let is_float = y.dtype.is_some_and(DType::is_floating);
            if rx == 0 {
                return vec![(st, Value::Unknown)];
            }
            // a class weight: one value per class (dim 1, or 0 unbatched); modelled for class
            // indices and a 1-D weight of the input's dtype
            if let Some(w) = weight {
                let Value::Tensor(wt) = w else { return vec![(st, Value::Unknown)] };
                let sw = st.resolve(&wt.shape);
                if !is_index || sw.rank() != Some(1) || wt.dtype.is_none() || wt.dtype != x.dtype {
                    return vec![(st, Value::Unknown)];
                }
                let c = &sx.dims[if rx == 1 { 0 } else { 1 }];
                if !cx.check(&st, span, cx.dim_eq_f(&sw.dims[0], c).not(), |cx| {
                    let (weight, classes) = (cx.show_shape(&st, &sw), cx.show_dim(c));
                    (LayerChannelMismatch::ClassWeight { loss: what.into(), weight, input: sxs.clone(), classes }, Vec::new())
                }) {
                    return Vec::new();
                }
            }
            // class-index targets have the input's shape without the class dim
            if is_index || (!is_float && ry + 1 == rx) {
                if rx == 1 {
                    let bad = Tri::from_bool(ry != 0);
                    if !cx.check(&st, span, bad, |_| (LossTargetMismatch::UnbatchedTarget { loss: what.into(), input: sxs, target: sys }, Vec::new())) {
                        return Vec::new();
                    }
                    if !check_targets(cx, &st, y, &sx.dims[0], ignore, what, span) {
                        return Vec::new();
                    }
                    return scalar(st, Shape::known(Vec::new()));
                }
                if ry + 1 != rx {
                    if !cx.check(&st, span, Tri::from_bool(is_index), |_| {
                        let (loss, target, input) = (what.to_string(), sys, sxs);
                        let v = if rx == 2 && ry >= 2 {
                            LossTargetMismatch::MultiTarget { loss, target, input }
                        } else {
                            LossTargetMismatch::TargetRank { loss, target, rank: (rx - 1).to_string(), input }
                        };
                        (v, Vec::new())
                    }) {
                        return Vec::new();
                    }
                    return vec![(st, Value::Unknown)];
                }
                let mut expect = vec![sx.dims[0].clone()];
                expect.extend(sx.dims[2..].iter().cloned());
                for (k, (a, b)) in expect.iter().zip(sy.dims.iter()).enumerate() {
                    let eq = cx.dim_eq_f(a, b);
                    if !cx.check(&st, span, eq.not(), |cx| {
                        let (da, db) = (cx.show_dim(a), cx.show_dim(b));
                        let (loss, input, target) = (what.to_string(), sxs.clone(), sys.clone());
                        let v = if k == 0 {
                            LossTargetMismatch::BatchSize { loss, input_batch: da, target_batch: db, input, target }
                        } else {
                            LossTargetMismatch::TargetDim { loss, dim: k.to_string(), input_size: da, target_size: db, input, target }
                        };
                        (v, Vec::new())
                    }) {
                        return Vec::new();
                    }
                }
                if !check_targets(cx, &st, y, &sx.dims[1], ignore, what, span) {
                    return Vec::new();
                }
                return scalar(st, Shape::known(expect));
            }
            if is_float && kind == Loss::CrossEntropy && rx == ry {
                // class probabilities: same shape
                for (a, b) in sx.dims.iter().zip(sy.dims.iter()) {
                    let eq = cx.dim_eq_f(a, b);
                    if !cx.check(&st, span, eq.not(), |_| {
                        (LossTargetMismatch::ProbabilityShape { loss: what.into(), target: sys.clone(), input: sxs.clone() }, Vec::new())
                    }) {
                        return Vec::new();
                    }
                }
                // one loss per sample (and position): the class dim (dim 1, or 0 unbatched) goes
                let mut per = sx.dims.clone();
                per.remove(if rx == 1 { 0 } else { 1 });
                return scalar(st, Shape::known(per));
            }
            vec![(st, Value::Unknown)]
        }
        Loss::Bce | Loss::BceWithLogits => {
            // shapes of unknown rank: not judged; the loss has the input's shape, or none
            if sx.prefix.is_some() || sy.prefix.is_some() {
                return scalar(st, sx);
            }
            // the shapes must be equal
            let violated = if sx.dims.len() != sy.dims.len() {
                Formula::Const(true)
            } else {
                Formula::Or(sx.dims.iter().zip(sy.dims.iter()).map(|(a, b)| cx.dim_eq_f(a, b).not()).collect())
            };
            if !cx.check(&st, span, violated, |_| (LossTargetMismatch::SameSize { loss: what.into(), target: sys, input: sxs }, Vec::new())) {
                return Vec::new();
            }
            scalar(st, sx)
        }
        Loss::SoftMargin => {
            // computed in a buffer of the input's shape: the target must broadcast to it
            let Some(b) = broadcast(cx, &st, &sx, &sy, span, what) else { return Vec::new() };
            let (Some(rb), Some(rx)) = (b.rank(), sx.rank()) else { return vec![(st, Value::Unknown)] };
            let mut violated = Tri::from_bool(rb != rx);
            if violated == Tri::False {
                for (a, c) in b.dims.iter().zip(&sx.dims) {
                    match cx.dim_eq(&st, a, c) {
                        Tri::False => violated = Tri::True,
                        Tri::Unknown if violated == Tri::False => violated = Tri::Unknown,
                        _ => {}
                    }
                }
            }
            if !cx.check(&st, span, violated, |_| (LossTargetMismatch::Broadcasts { loss: what.into(), target: sys, input: sxs }, Vec::new())) {
                return Vec::new();
            }
            scalar(st, sx)
        }
        _ => {
            // elementwise regression losses broadcast (torch warns when sizes differ)
            // (SHP901, a target that broadcasts to a different shape, is a rule of its own:
            // rules/may_fail/loss_target_broadcast.rs)
            let Some(s) = broadcast(cx, &st, &sx, &sy, span, what) else { return Vec::new() };
            scalar(st, s)
        }
    }
}

/// Known-rank shapes of tensor values, with the first tensor's dtype.
fn shapes(st: &State, vals: &[Value]) -> Option<(Vec<Shape>, Option<DType>)> {
    let mut out = Vec::new();
    let mut dtype = None;
    for (i, v) in vals.iter().enumerate() {
        let Value::Tensor(t) = v else { return None };
        let s = st.resolve(&t.shape);
        s.rank()?;
        if i == 0 {
            dtype = t.dtype;
        }
        out.push(s);
    }
    Some((out, dtype))
}

/// Cosine embedding, margin ranking and triplet margin losses.
/// - cosine embedding: inputs `[N, D]` with target `[N]`, or `[D]` with a 0-D target; the
///   inputs broadcast, and their similarity (`[N]`) broadcasts with the target.
/// - margin ranking: three tensors of the same rank that broadcast together.
/// - triplet margin: three tensors of the same rank; the distances (last dim reduced) broadcast.
fn three_way(cx: &mut dyn ModelCtx, st: State, kind: Loss, vals: &[Value], red: Option<&Value>, what: &str, span: Span) -> Vals {
    let Some(red) = reduction(red) else { return vec![(st, Value::Unknown)] };
    let Some((sh, dtype)) = shapes(&st, vals) else { return vec![(st, Value::Unknown)] };
    let shown: Vec<String> = sh.iter().map(|s| cx.show_shape(&st, s)).collect();
    let ranks: Vec<usize> = sh.iter().map(|s| s.dims.len()).collect();
    let fail = |cx: &mut dyn ModelCtx, st: &State, v: LossTargetMismatch| {
        cx.check(st, span, Tri::True, |_| (v, Vec::new()));
        Vec::new()
    };
    let loss = || what.to_string();
    let per: Shape = match kind {
        Loss::CosineEmbedding => {
            let rt = ranks[2];
            if rt > 1 {
                return fail(cx, &st, LossTargetMismatch::CosineTarget { loss: loss(), target: shown[2].clone() });
            }
            if ranks[0] != rt + 1 || ranks[1] != rt + 1 {
                let (rank, input_rank, x1, x2) = (rt.to_string(), (rt + 1).to_string(), shown[0].clone(), shown[1].clone());
                return fail(cx, &st, LossTargetMismatch::CosineInputs { loss: loss(), rank, input_rank, x1, x2 });
            }
            let Some(x) = broadcast(cx, &st, &sh[0], &sh[1], span, what) else { return Vec::new() };
            let sim = Shape::known(x.dims[..x.dims.len() - 1].to_vec());
            let Some(out) = broadcast(cx, &st, &sim, &sh[2], span, what) else { return Vec::new() };
            out
        }
        Loss::MarginRanking => {
            if ranks[0] != ranks[1] || ranks[1] != ranks[2] {
                let (x1, x2, target) = (shown[0].clone(), shown[1].clone(), shown[2].clone());
                return fail(cx, &st, LossTargetMismatch::RankingRanks { loss: loss(), x1, x2, target });
            }
            let Some(x) = broadcast(cx, &st, &sh[0], &sh[1], span, what) else { return Vec::new() };
            let Some(out) = broadcast(cx, &st, &x, &sh[2], span, what) else { return Vec::new() };
            out
        }
        _ => {
            if ranks[0] != ranks[1] || ranks[1] != ranks[2] {
                let (anchor, positive, negative) = (shown[0].clone(), shown[1].clone(), shown[2].clone());
                return fail(cx, &st, LossTargetMismatch::TripletRanks { loss: loss(), anchor, positive, negative });
            }
            if ranks[0] == 0 {
                return vec![(st, Value::Unknown)];
            }
            let Some(ap) = broadcast(cx, &st, &sh[0], &sh[1], span, what) else { return Vec::new() };
            let Some(an) = broadcast(cx, &st, &sh[0], &sh[2], span, what) else { return Vec::new() };
            let dist = |s: &Shape| Shape::known(s.dims[..s.dims.len() - 1].to_vec());
            let Some(out) = broadcast(cx, &st, &dist(&ap), &dist(&an), span, what) else { return Vec::new() };
            out
        }
    };
    let s = if red == "none" { per } else { Shape::known(Vec::new()) };
    vec![(st, tensor_value(s, dtype))]
}

/// `ctc_loss(log_probs [T, N, C] (or [T, C]), targets [N, S] (or 1-D), input_lengths [N],
/// target_lengths [N])`: one loss per sample.
fn ctc(cx: &mut dyn ModelCtx, st: State, vals: &[Value], red: Option<&Value>, what: &str, span: Span) -> Vals {
    let Some(red) = reduction(red) else { return vec![(st, Value::Unknown)] };
    let Some((sh, dtype)) = shapes(&st, &vals[..2]) else { return vec![(st, Value::Unknown)] };
    let (lp, tg) = (&sh[0], &sh[1]);
    let bad_rank = !matches!(lp.dims.len(), 2 | 3) || !matches!(tg.dims.len(), 1 | 2);
    if !cx.check(&st, span, Tri::from_bool(bad_rank), |cx| {
        let (ls, ts) = (cx.show_shape(&st, lp), cx.show_shape(&st, tg));
        (LossTargetMismatch::CtcRanks { loss: what.into(), log_probs: ls.clone(), targets: ts.clone() }, Vec::new())
    }) {
        return Vec::new();
    }
    let batched = lp.dims.len() == 3;
    if batched {
        let n = lp.dims[1].clone();
        if tg.dims.len() == 2 {
            let eq = cx.dim_eq(&st, &tg.dims[0], &n);
            if !cx.check(&st, span, eq.not(), |cx| {
                let (ls, ts) = (cx.show_shape(&st, lp), cx.show_shape(&st, tg));
                (LossTargetMismatch::CtcBatch { loss: what.into(), targets: ts, log_probs: ls }, Vec::new())
            }) {
                return Vec::new();
            }
        }
        for (v, name) in [(&vals[2], "input_lengths"), (&vals[3], "target_lengths")] {
            let Value::Tensor(t) = v else { continue };
            let s = st.resolve(&t.shape);
            let Some(r) = s.rank() else { continue };
            let violated = if r != 1 { Tri::True } else { cx.dim_eq(&st, &s.dims[0], &n).not() };
            if !cx.check(&st, span, violated, |cx| {
                let shown = cx.show_shape(&st, &s);
                let ls = cx.show_shape(&st, lp);
                (LossTargetMismatch::CtcLengths { loss: what.into(), name: name.into(), shape: shown, log_probs: ls.clone() }, Vec::new())
            }) {
                return Vec::new();
            }
        }
    }
    let per = if batched { vec![lp.dims[1].clone()] } else { Vec::new() };
    let s = if red == "none" { Shape::known(per) } else { Shape::known(Vec::new()) };
    vec![(st, tensor_value(s, dtype))]
}
