//! Loss modules and their functional twins: input/target agreement (SHP108).

use super::tensor::{broadcast, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape as r;
use crate::shape::{Formula, Tri};

pub fn is_loss(kind: &str) -> bool {
    matches!(
        kind,
        "CrossEntropyLoss"
            | "NLLLoss"
            | "MSELoss"
            | "L1Loss"
            | "SmoothL1Loss"
            | "HuberLoss"
            | "BCELoss"
            | "BCEWithLogitsLoss"
            | "SoftMarginLoss"
            | "KLDivLoss"
            | "CosineEmbeddingLoss"
            | "MarginRankingLoss"
            | "TripletMarginLoss"
            | "CTCLoss"
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
        "soft_margin_loss" => "SoftMarginLoss",
        "kl_div" => "KLDivLoss",
        "cosine_embedding_loss" => "CosineEmbeddingLoss",
        "margin_ranking_loss" => "MarginRankingLoss",
        "triplet_margin_loss" => "TripletMarginLoss",
        "ctc_loss" => "CTCLoss",
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
#[allow(clippy::too_many_arguments)]
pub fn call_loss(cx: &mut dyn ModelCtx, st: State, kind: &str, input: &Value, target: &Value, red: Option<&Value>, who: &str, span: Span) -> Vals {
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
                    if !cx.check(&st, span, bad, &r::loss_target_mismatch::RULE, |_| {
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
                    if !cx.check(&st, span, Tri::from_bool(is_index), &r::loss_target_mismatch::RULE, |_| (msg, Vec::new())) {
                        return Vec::new();
                    }
                    return vec![(st, Value::Unknown)];
                }
                let mut expect = vec![sx.dims[0].clone()];
                expect.extend(sx.dims[2..].iter().cloned());
                for (k, (a, b)) in expect.iter().zip(sy.dims.iter()).enumerate() {
                    let eq = cx.dim_eq_f(a, b);
                    let (da, db) = (cx.show_dim(a), cx.show_dim(b));
                    let what = if k == 0 { format!("input batch size {da} does not match target batch size {db}") } else { format!("dim {k}: {da} vs {db}") };
                    if !cx.check(&st, span, eq.not(), &r::loss_target_mismatch::RULE, |_| {
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
                    let eq = cx.dim_eq_f(a, b);
                    if !cx.check(&st, span, eq.not(), &r::loss_target_mismatch::RULE, |_| {
                        (format!("{who}{kind}: probability target {sys} must have the input's shape {sxs}"), Vec::new())
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
        "BCELoss" | "BCEWithLogitsLoss" => {
            if sx.prefix.is_some() || sy.prefix.is_some() {
                return vec![(st, Value::Unknown)];
            }
            // the shapes must be equal
            let violated = if sx.dims.len() != sy.dims.len() {
                Formula::Const(true)
            } else {
                Formula::Or(sx.dims.iter().zip(sy.dims.iter()).map(|(a, b)| cx.dim_eq_f(a, b).not()).collect())
            };
            if !cx.check(&st, span, violated, &r::loss_target_mismatch::RULE, |_| {
                (format!("{who}{kind}: target size {sys} must be the same as input size {sxs}"), Vec::new())
            }) {
                return Vec::new();
            }
            scalar(st, sx)
        }
        "SoftMarginLoss" => {
            // computed in a buffer of the input's shape: the target must broadcast to it
            let Some(b) = broadcast(cx, &st, &sx, &sy, span, &format!("{who}{kind}")) else { return Vec::new() };
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
            if !cx.check(&st, span, violated, &r::loss_target_mismatch::RULE, |_| {
                (format!("{who}{kind}: target {sys} broadcasts input {sxs} to a larger shape"), Vec::new())
            }) {
                return Vec::new();
            }
            scalar(st, sx)
        }
        _ => {
            // elementwise regression losses broadcast (torch warns when sizes differ)
            // (SHP901, a target that broadcasts to a different shape, is a rule of its own:
            // rules/may_fail/loss_target_broadcast.rs)
            let Some(s) = broadcast(cx, &st, &sx, &sy, span, &format!("{who}{kind}")) else { return Vec::new() };
            scalar(st, s)
        }
    }
}

/// The names of a loss's tensor arguments.
fn loss_params(kind: &str) -> &'static [&'static str] {
    match kind {
        "CosineEmbeddingLoss" | "MarginRankingLoss" => &["input1", "input2", "target"],
        "TripletMarginLoss" => &["anchor", "positive", "negative"],
        "CTCLoss" => &["log_probs", "targets", "input_lengths", "target_lengths"],
        _ => &["input", "target"],
    }
}

/// Call a loss with its arguments (module call or functional twin).
#[allow(clippy::too_many_arguments)]
pub fn call_loss_args(cx: &mut dyn ModelCtx, st: State, kind: &str, args: &[Value], kwargs: &[(Name, Value)], red: Option<&Value>, who: &str, span: Span) -> Vals {
    let names = loss_params(kind);
    let b = crate::models::bind(names, args, kwargs);
    let vals: Option<Vec<Value>> = names.iter().map(|n| b.get(n).cloned()).collect();
    let Some(vals) = vals else { return vec![(st, Value::Unknown)] };
    match kind {
        "CosineEmbeddingLoss" | "MarginRankingLoss" | "TripletMarginLoss" => three_way(cx, st, kind, &vals, red, who, span),
        "CTCLoss" => ctc(cx, st, &vals, red, who, span),
        _ => call_loss(cx, st, kind, &vals[0], &vals[1], red, who, span),
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
fn three_way(cx: &mut dyn ModelCtx, st: State, kind: &str, vals: &[Value], red: Option<&Value>, who: &str, span: Span) -> Vals {
    let Some(red) = reduction(red) else { return vec![(st, Value::Unknown)] };
    let Some((sh, dtype)) = shapes(&st, vals) else { return vec![(st, Value::Unknown)] };
    let shown: Vec<String> = sh.iter().map(|s| cx.show_shape(&st, s)).collect();
    let ranks: Vec<usize> = sh.iter().map(|s| s.dims.len()).collect();
    let what = format!("{who}{kind}");
    let fail = |cx: &mut dyn ModelCtx, st: &State, msg: String| {
        cx.check(st, span, Tri::True, &r::loss_target_mismatch::RULE, |_| (msg, Vec::new()));
        Vec::new()
    };
    let per: Shape = match kind {
        "CosineEmbeddingLoss" => {
            let rt = ranks[2];
            if rt > 1 {
                return fail(cx, &st, format!("{what}: 0-D or 1-D target expected, got {}", shown[2]));
            }
            if ranks[0] != rt + 1 || ranks[1] != rt + 1 {
                return fail(cx, &st, format!("{what}: a {rt}-D target expects {}-D inputs, got {} and {}", rt + 1, shown[0], shown[1]));
            }
            let Some(x) = broadcast(cx, &st, &sh[0], &sh[1], span, &what) else { return Vec::new() };
            let sim = Shape::known(x.dims[..x.dims.len() - 1].to_vec());
            let Some(out) = broadcast(cx, &st, &sim, &sh[2], span, &what) else { return Vec::new() };
            out
        }
        "MarginRankingLoss" => {
            if ranks[0] != ranks[1] || ranks[1] != ranks[2] {
                return fail(cx, &st, format!("{what}: all inputs should have the same number of dims, got {}, {} and {}", shown[0], shown[1], shown[2]));
            }
            let Some(x) = broadcast(cx, &st, &sh[0], &sh[1], span, &what) else { return Vec::new() };
            let Some(out) = broadcast(cx, &st, &x, &sh[2], span, &what) else { return Vec::new() };
            out
        }
        _ => {
            if ranks[0] != ranks[1] || ranks[1] != ranks[2] {
                return fail(cx, &st, format!("{what}: anchor {}, positive {} and negative {} should have the same number of dims", shown[0], shown[1], shown[2]));
            }
            if ranks[0] == 0 {
                return vec![(st, Value::Unknown)];
            }
            let Some(ap) = broadcast(cx, &st, &sh[0], &sh[1], span, &what) else { return Vec::new() };
            let Some(an) = broadcast(cx, &st, &sh[0], &sh[2], span, &what) else { return Vec::new() };
            let dist = |s: &Shape| Shape::known(s.dims[..s.dims.len() - 1].to_vec());
            let Some(out) = broadcast(cx, &st, &dist(&ap), &dist(&an), span, &what) else { return Vec::new() };
            out
        }
    };
    let s = if red == "none" { per } else { Shape::known(Vec::new()) };
    vec![(st, tensor_value(s, dtype))]
}

/// `ctc_loss(log_probs [T, N, C] (or [T, C]), targets [N, S] (or 1-D), input_lengths [N],
/// target_lengths [N])`: one loss per sample.
fn ctc(cx: &mut dyn ModelCtx, st: State, vals: &[Value], red: Option<&Value>, who: &str, span: Span) -> Vals {
    let Some(red) = reduction(red) else { return vec![(st, Value::Unknown)] };
    let Some((sh, dtype)) = shapes(&st, &vals[..2]) else { return vec![(st, Value::Unknown)] };
    let what = format!("{who}CTCLoss");
    let (lp, tg) = (&sh[0], &sh[1]);
    let (ls, ts) = (cx.show_shape(&st, lp), cx.show_shape(&st, tg));
    let bad_rank = !matches!(lp.dims.len(), 2 | 3) || !matches!(tg.dims.len(), 1 | 2);
    if !cx.check(&st, span, Tri::from_bool(bad_rank), &r::loss_target_mismatch::RULE, |_| {
        (format!("{what}: expected log_probs [T, N, C] or [T, C] and 1-D or 2-D targets, got {ls} and {ts}"), Vec::new())
    }) {
        return Vec::new();
    }
    let batched = lp.dims.len() == 3;
    if batched {
        let n = lp.dims[1].clone();
        if tg.dims.len() == 2 {
            let eq = cx.dim_eq(&st, &tg.dims[0], &n);
            if !cx.check(&st, span, eq.not(), &r::loss_target_mismatch::RULE, |_| (format!("{what}: targets {ts} do not have the batch size of log_probs {ls}"), Vec::new())) {
                return Vec::new();
            }
        }
        for (v, name) in [(&vals[2], "input_lengths"), (&vals[3], "target_lengths")] {
            let Value::Tensor(t) = v else { continue };
            let s = st.resolve(&t.shape);
            let Some(r) = s.rank() else { continue };
            let shown = cx.show_shape(&st, &s);
            let violated = if r != 1 { Tri::True } else { cx.dim_eq(&st, &s.dims[0], &n).not() };
            if !cx.check(&st, span, violated, &r::loss_target_mismatch::RULE, |_| (format!("{what}: {name} {shown} must be of size batch_size (log_probs {ls})"), Vec::new())) {
                return Vec::new();
            }
        }
    }
    let per = if batched { vec![lp.dims[1].clone()] } else { Vec::new() };
    let s = if red == "none" { Shape::known(per) } else { Shape::known(Vec::new()) };
    vec![(st, tensor_value(s, dtype))]
}

pub fn functional_loss(cx: &mut dyn ModelCtx, st: State, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Option<Vals> {
    let kind = functional_kind(f)?;
    let red = kwargs.iter().find(|(k, _)| &**k == "reduction").map(|(_, v)| v);
    let who = format!("F.{f} ");
    Some(call_loss_args(cx, st, kind, args, kwargs, red, &who, span))
}
