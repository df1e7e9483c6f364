//! `nn.Linear`, `nn.Bilinear`, `nn.Embedding`, `nn.EmbeddingBag`, their twins and `F.one_hot`.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{layer_name, optional_exact, Bound, Function, Module, Nn};
use crate::ir::Span;
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::models::torch::tensor::{broadcast, check_index_values, tensor_value};
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerInputRankMismatch, MatmulShapeMismatch};
use crate::rules::Rule;
use crate::shape::{Formula, Poly, Rel, Tri};
use crate::value::*;

const LINEAR_CHECKS: &[&Rule] = &[&r::matmul_shape_mismatch::RULE, &r::layer_input_rank_mismatch::RULE];
const BILINEAR_CHECKS: &[&Rule] = &[&r::layer_input_rank_mismatch::RULE, &r::invalid_shape_argument::RULE, &r::matmul_shape_mismatch::RULE];
const EMBEDDING_CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::index_out_of_range::RULE];
const BAG_CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::layer_input_rank_mismatch::RULE, &r::index_out_of_range::RULE];

// `padding_idx` is read: torch asserts that it indexes the table (`-n <= padding_idx < n`).
// An EmbeddingBag's `mode` is read: torch raises at the call for a mode other than sum/mean/max,
// and for 'max' with `scale_grad_by_freq` or `sparse`. `max_norm` and `norm_type` change values only.
pub(super) const NN: &[Nn] = &[
    Nn::module(Decl::module("torch.nn.Linear", "in_features, out_features, ~bias=True, ~device=None", "input").twin("torch.nn.functional.linear").checks(LINEAR_CHECKS), Module::Linear),
    Nn::function(Decl::function("torch.nn.functional.linear", "input, weight, bias=None").twin("torch.nn.Linear").checks(&[&r::matmul_shape_mismatch::RULE, &r::layer_input_rank_mismatch::RULE, &r::broadcast_shape_mismatch::RULE]), Function::Linear),
    Nn::module(
        Decl::module("torch.nn.Bilinear", "in1_features, in2_features, out_features, ~bias=True, ~device=None", "input1, input2").twin("torch.nn.functional.bilinear").checks(BILINEAR_CHECKS),
        Module::Bilinear,
    ),
    // a bias is modelled when it certainly has `out_features` elements
    Nn::function(Decl::function("torch.nn.functional.bilinear", "input1, input2, weight, bias=None").twin("torch.nn.Bilinear").checks(BILINEAR_CHECKS), Function::Bilinear),
    Nn::module(
        Decl::module("torch.nn.Embedding", "num_embeddings, embedding_dim, padding_idx=None, ~max_norm=None, ~norm_type=2.0, ~scale_grad_by_freq=False, ~sparse=False, *, ~device=None", "input")
            .twin("torch.nn.functional.embedding")
            .checks(EMBEDDING_CHECKS),
        Module::Embedding,
    ),
    Nn::function(
        Decl::function("torch.nn.functional.embedding", "input, weight, padding_idx=None, ~max_norm=None, ~norm_type=2.0, ~scale_grad_by_freq=False, ~sparse=False")
            .twin("torch.nn.Embedding")
            .checks(EMBEDDING_CHECKS),
        Function::Embedding,
    ),
    // `offsets` are read (a 1-D input of bags, one per offset); `per_sample_weights` is
    // modelled only when absent
    Nn::module(
        Decl::module(
            "torch.nn.EmbeddingBag",
            "num_embeddings, embedding_dim, ~max_norm=None, ~norm_type=2.0, scale_grad_by_freq=False, mode=\"mean\", sparse=False, *, padding_idx=None, ~device=None",
            "input, offsets=None, per_sample_weights=None",
        )
        .twin("torch.nn.functional.embedding_bag")
        .checks(BAG_CHECKS),
        Module::EmbeddingBag,
    ),
    // `offsets` and `per_sample_weights` are read: modelled only without them
    Nn::function(
        Decl::function(
            "torch.nn.functional.embedding_bag",
            "input, weight, offsets=None, ~max_norm=None, ~norm_type=2, scale_grad_by_freq=False, mode=\"mean\", sparse=False, per_sample_weights=None",
        )
        .twin("torch.nn.EmbeddingBag")
        .checks(BAG_CHECKS),
        Function::EmbeddingBag,
    ),
    Nn::function(Decl::function("torch.nn.functional.one_hot", "tensor, num_classes=-1").checks(EMBEDDING_CHECKS), Function::OneHot),
];

/// `weight` and `bias` of a library layer, when modelled.
pub(super) fn parameter(l: &Layer, name: &str) -> Option<Value> {
    let int = |k: &str| param_dim(l, k);
    match name {
        "weight" => Some(tensor_value(Shape::known(vec![int("out_features")?, int("in_features")?]), weights_dtype(l))),
        "bias" => match l.args.get("bias") {
            None | Some(Value::Bool(true)) => Some(tensor_value(Shape::known(vec![int("out_features")?]), weights_dtype(l))),
            // `bias=False`: torch registers `bias` as None
            Some(Value::Bool(false)) => Some(Value::None),
            _ => None,
        },
        _ => None,
    }
}

/// The dtype of a layer's parameters: float32, or what the module was built with or cast to
/// (`model.double()`, `.half()`, `.to(dtype)`; not known after a cast the core cannot tell).
fn weights_dtype(l: &Layer) -> Option<DType> {
    super::super::device::module_dtype(&l.attrs, &l.args)
}

/// A parameter's dim from the constructor argument `k`: its size, or a dim of unknown size
/// when the argument is not known (`nn.Embedding(len(vocab), 16)`: the weight is still
/// `[?, 16]`, which weight tying hands on); `None` for an argument that is no int.
fn param_dim(l: &Layer, k: &str) -> Option<Dim> {
    match l.args.get(k)? {
        Value::Int(p) => Some(Dim::known(p.clone(), None)),
        Value::Unknown => Some(Dim::unknown()),
        _ => None,
    }
}

/// `weight` of an `nn.Embedding`, when modelled.
pub(super) fn embedding_parameter(l: &Layer, name: &str) -> Option<Value> {
    let int = |k: &str| param_dim(l, k);
    match name {
        "weight" => Some(tensor_value(Shape::known(vec![int("num_embeddings")?, int("embedding_dim")?]), weights_dtype(l))),
        _ => None,
    }
}

/// Calling an `nn.Linear` layer. A `weight` or `bias` stored into it (weight tying:
/// `decoder.weight = encoder.weight`) is what the call uses, as torch's `F.linear(input,
/// self.weight, self.bias)`.
pub(super) fn call(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, span: Span) -> Vals {
    if l.attrs.contains_key("weight") || l.attrs.contains_key("bias") {
        let get = |k: &str| l.attrs.get(k).cloned().or_else(|| parameter(l, k));
        let (Some(Value::Tensor(w)), Some(bias)) = (get("weight"), get("bias")) else { return vec![(st, Value::Unknown)] };
        let ws = st.resolve(&w.shape);
        if ws.rank() != Some(2) {
            return vec![(st, Value::Unknown)];
        }
        let (Some(inf), outf) = (ws.dims[1].v.clone(), ws.dims[0].v.clone()) else { return vec![(st, Value::Unknown)] };
        let outcomes = linear(cx, st, t, &inf, outf, l, true, span);
        return with_bias(cx, outcomes, Some(bias), span);
    }
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    let (Some(inf), outf) = (int("in_features"), int("out_features")) else { return vec![(st, Value::Unknown)] };
    linear(cx, st, t, &inf, outf, l, false, span)
}

/// The outcomes of a matrix product plus `bias` (absent or None: none), which must broadcast
/// to the output without growing it.
fn with_bias(cx: &mut dyn ModelCtx, outcomes: Vals, bias: Option<Value>, span: Span) -> Vals {
    let mut out = Vec::new();
    for (st, y) in outcomes {
        let (Some(Value::Tensor(b)), Value::Tensor(yt)) = (&bias, &y) else {
            out.push((st, if matches!(bias, None | Some(Value::None)) { y } else { Value::Unknown }));
            continue;
        };
        let (bs, ys) = (st.resolve(&b.shape), st.resolve(&yt.shape));
        match broadcast(cx, &st, &ys, &bs, span, "F.linear bias") {
            None => {}
            Some(r) if r.rank() == ys.rank() && r.dims.iter().zip(&ys.dims).all(|(a, b)| a.v.is_some() && a.v == b.v) => out.push((st, y)),
            Some(_) => out.push((st, Value::Unknown)),
        }
    }
    out
}

/// `F.linear(input, weight, bias)`: the bias must broadcast to the output without growing it.
pub(super) fn functional(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let Some(Value::Tensor(w)) = b.get("weight") else { return vec![(st, Value::Unknown)] };
    let ws = st.resolve(&w.shape);
    if ws.rank() != Some(2) {
        return vec![(st, Value::Unknown)];
    }
    let (Some(inf), outf) = (ws.dims[1].v.clone(), ws.dims[0].v.clone()) else { return vec![(st, Value::Unknown)] };
    let l = Layer { kind: Rc::from("Linear"), args: BTreeMap::new(), attrs: BTreeMap::new(), label: None, span };
    let bias = b.get("bias").cloned();
    let outcomes = linear(cx, st, t, &inf, outf, &l, false, span);
    with_bias(cx, outcomes, bias, span)
}

/// `tied`: the layer's weight is one stored into it (weight tying), whose width is `inf`.
#[allow(clippy::too_many_arguments)]
fn linear(cx: &mut dyn ModelCtx, st: State, t: &Tensor, inf: &Poly, outf: Option<Poly>, l: &Layer, tied: bool, span: Span) -> Vals {
    let mut st = st;
    let mut s = st.resolve(&t.shape);
    if s.dims.is_empty() {
        match s.prefix {
            Some(var) => {
                // first use: the input's last dim is in_features
                let rest = cx.refine_var(var);
                st.bind_shape(var, Shape { prefix: Some(rest), dims: vec![Dim::known(inf.clone(), None)] });
                s = st.resolve(&t.shape);
            }
            None => {
                let who = layer_name(l);
                cx.check(&st, span, Tri::True, |_| (LayerInputRankMismatch::ZeroD { layer: format!("{who}Linear") }, Vec::new()));
                return Vec::new();
            }
        }
    }
    let last = s.dims.last().unwrap().clone();
    let who = layer_name(l);
    let extra = l
        .label
        .iter()
        .map(|lbl| match tied {
            true => format!("{lbl} has a weight stored into it (weight tying) of width {}", inf.display(cx.syms())),
            false => format!("{lbl} expects in_features={}", inf.display(cx.syms())),
        })
        .collect();
    // (no fix for an input with a dim the core does not know: see `conv.rs`)
    if !tied && l.args.contains_key("in_features") && s.dims.iter().all(|d| d.v.is_some()) {
        if let Some(want) = last.v.as_ref().and_then(|p| p.as_const()) {
            cx.suggest_fix(FixHint { at: l.span, alts: vec![FixAlt { pos: 0, kw: "in_features", want }] });
        }
    }
    if !cx.expect_dim(&st, span, &s, &last, inf, extra, |input, last, in_features| MatmulShapeMismatch::Linear { who, input, last, in_features }) {
        return Vec::new();
    }
    let mut dims = s.dims.clone();
    let why = l.label.clone().map(|lbl| crate::value::Origin::said(format!("out_features of {lbl}")));
    *dims.last_mut().unwrap() = Dim { v: outf, why };
    vec![(st, tensor_value(Shape { prefix: s.prefix, dims }, t.dtype))]
}

/// Calling an `nn.Bilinear` layer.
pub(super) fn call_bilinear(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, b: &Bound, span: Span) -> Vals {
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    let (Some(i1), Some(i2), o) = (int("in1_features"), int("in2_features"), int("out_features")) else { return vec![(st, Value::Unknown)] };
    let Some(Value::Tensor(x2)) = b.get("input2") else { return vec![(st, Value::Unknown)] };
    bilinear(cx, st, t, x2, &i1, &i2, o, &format!("{}Bilinear", layer_name(l)), span)
}

/// `F.bilinear(input1, input2, weight, bias)`.
pub(super) fn functional_bilinear(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let (Some(Value::Tensor(x2)), Some(Value::Tensor(w))) = (b.get("input2"), b.get("weight")) else { return vec![(st, Value::Unknown)] };
    let ws = st.resolve(&w.shape);
    if ws.rank() != Some(3) {
        return vec![(st, Value::Unknown)];
    }
    let (Some(i1), Some(i2)) = (ws.dims[1].v.clone(), ws.dims[2].v.clone()) else { return vec![(st, Value::Unknown)] };
    if !optional_exact(cx, &st, b.get("bias"), &ws.dims[..1]) {
        return vec![(st, Value::Unknown)];
    }
    let x2 = x2.clone();
    bilinear(cx, st, t, &x2, &i1, &i2, ws.dims[0].v.clone(), "F.bilinear", span)
}

/// `bilinear(x1 [*, in1], x2 [*, in2])`: `[*, out]`; both inputs have the same batch dims.
#[allow(clippy::too_many_arguments)]
fn bilinear(cx: &mut dyn ModelCtx, st: State, x1: &Tensor, x2: &Tensor, i1: &Poly, i2: &Poly, o: Option<Poly>, what: &str, span: Span) -> Vals {
    let (a, b) = (st.resolve(&x1.shape), st.resolve(&x2.shape));
    let (Some(ra), Some(rb)) = (a.rank(), b.rank()) else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(ra != rb || ra == 0), |cx| {
        let (sa, sb) = (cx.show_shape(&st, &a), cx.show_shape(&st, &b));
        (LayerInputRankMismatch::BilinearRanks { op: what.into(), lhs: sa.clone(), rhs: sb.clone() }, Vec::new())
    }) {
        return Vec::new();
    }
    for k in 0..ra - 1 {
        let eq = cx.dim_eq_f(&a.dims[k], &b.dims[k]);
        if !cx.check(&st, span, eq.not(), |cx| {
            let (sa, sb) = (cx.show_shape(&st, &a), cx.show_shape(&st, &b));
            (InvalidShapeArgument::BilinearBatch { op: what.into(), lhs: sa, rhs: sb, dim: k.to_string() }, Vec::new())
        }) {
            return Vec::new();
        }
    }
    for (s, want, n) in [(&a, i1, "in1_features"), (&b, i2, "in2_features")] {
        let last = s.dims[ra - 1].clone();
        if !cx.expect_dim(&st, span, s, &last, want, Vec::new(), |input, last, want| MatmulShapeMismatch::Bilinear { op: what.into(), param: n.into(), want, input, last }) {
            return Vec::new();
        }
    }
    let mut dims = a.dims[..ra - 1].to_vec();
    dims.push(Dim { v: o, why: None });
    vec![(st, tensor_value(Shape::known(dims), x1.dtype))]
}

/// Indices of an embedding lookup must be integers.
fn check_index_dtype(cx: &mut dyn ModelCtx, st: &State, t: &Tensor, what: &str, span: Span) -> bool {
    let bad = Tri::from_bool(t.dtype.is_some_and(|d| !matches!(d, DType::Long | DType::Int)));
    cx.check(st, span, bad, |cx| {
        let shown = cx.show_shape(st, &t.shape);
        (InvalidShapeArgument::IndexDtype { op: what.into(), indices: shown }, Vec::new())
    })
}

/// The embedding dim of an `nn.Embedding`/`nn.EmbeddingBag` layer, with where it came from.
fn embedding_dim(l: &Layer) -> Option<Dim> {
    let dim = l.args.get("embedding_dim").and_then(|v| v.as_int()).cloned()?;
    let why = l.label.clone().map(|lbl| crate::value::Origin::said(format!("embedding_dim of {lbl}")));
    Some(Dim { v: Some(dim), why })
}

/// `padding_idx` must index a table of `n` rows: torch raises when `padding_idx > 0` and
/// `padding_idx >= n`, or `padding_idx < 0` and `padding_idx < -n` (`nn.Embedding`,
/// `nn.EmbeddingBag` when built, `F.embedding` when called). A symbolic one is a formula the
/// facts decide. False when the path ends.
fn check_padding_idx(cx: &mut dyn ModelCtx, st: &State, v: Option<&Value>, n: &Poly, what: &str, span: Span) -> bool {
    let Some(Value::Int(p)) = v else { return true };
    let zero = Poly::constant(0);
    let Some(neg_n) = n.mul(&Poly::constant(-1)) else { return true };
    let violated = Formula::Or(vec![
        Formula::And(vec![Formula::cmp(&zero, Rel::Lt, p), Formula::cmp(n, Rel::Le, p)]),
        Formula::And(vec![Formula::cmp(p, Rel::Lt, &zero), Formula::cmp(p, Rel::Lt, &neg_n)]),
    ]);
    cx.check(st, span, violated, |cx| {
        let (ps, ns) = (p.display(cx.syms()), n.display(cx.syms()));
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "padding_idx".into(), value: ps, should: format!("be within num_embeddings={ns} (from -{ns} to {ns} - 1)") }, Vec::new())
    })
}

/// Construction checks of `nn.Embedding`/`nn.EmbeddingBag`: `padding_idx` within the table.
pub(super) fn embedding_construct_checks(cx: &mut dyn ModelCtx, st: &State, kind: &str, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    let Some(n) = amap.get("num_embeddings").and_then(|v| v.as_int()) else { return true };
    check_padding_idx(cx, st, amap.get("padding_idx"), n, kind, span)
}

/// An EmbeddingBag's `mode` (torch checks it at the call, after the input's rank): one of
/// sum/mean/max, and 'max' supports neither `scale_grad_by_freq` nor `sparse`. An unknown mode
/// or flag is not judged. False when the path ends.
fn check_bag_mode(cx: &mut dyn ModelCtx, st: &State, mode: Option<&Value>, scale: Option<&Value>, sparse: Option<&Value>, what: &str, span: Span) -> bool {
    let Some(Value::Str(Some(m))) = mode else { return true };
    let known = matches!(&**m, "sum" | "mean" | "max");
    if !cx.check(st, span, Tri::from_bool(!known), |_| {
        (InvalidShapeArgument::ArgMust { op: what.into(), name: "mode".into(), value: format!("'{m}'"), should: "be one of 'sum', 'mean' or 'max'".into() }, Vec::new())
    }) {
        return false;
    }
    if &**m != "max" {
        return true;
    }
    for (name, v) in [("scale_grad_by_freq", scale), ("sparse", sparse)] {
        let on = matches!(v, Some(Value::Bool(true)));
        if !cx.check(st, span, Tri::from_bool(on), |_| {
            (InvalidShapeArgument::ArgMust { op: what.into(), name: name.into(), value: "True".into(), should: "be False with mode='max'".into() }, Vec::new())
        }) {
            return false;
        }
    }
    true
}

/// Calling an `nn.Embedding` layer.
pub(super) fn call_embedding(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, span: Span) -> Vals {
    if let Some(w) = l.attrs.get("weight") {
        // a stored (tied) weight: its rows and width
        let Value::Tensor(w) = w else { return vec![(st, Value::Unknown)] };
        let ws = st.resolve(&w.shape);
        if ws.rank() != Some(2) || ws.dims[1].v.is_none() {
            return vec![(st, Value::Unknown)];
        }
        let rows = ws.dims[0].as_const();
        return embedding(cx, st, t, ws.dims[1].clone(), w.dtype, rows.map(|n| (n, true)), &format!("{}Embedding", layer_name(l)), span);
    }
    let Some(dim) = embedding_dim(l) else { return vec![(st, Value::Unknown)] };
    let rows = l.args.get("num_embeddings").and_then(|v| v.as_const_int());
    // the rows of its weight
    embedding(cx, st, t, dim, weights_dtype(l), rows.map(|n| (n, true)), &format!("{}Embedding", layer_name(l)), span)
}

/// Calling an `nn.EmbeddingBag` layer.
pub(super) fn call_embedding_bag(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, b: &Bound, span: Span) -> Vals {
    let Some(dim) = embedding_dim(l) else { return vec![(st, Value::Unknown)] };
    let Some(offsets) = bag_offsets(&st, t, b) else { return vec![(st, Value::Unknown)] };
    let mode = BagMode { mode: l.args.get("mode"), scale: l.args.get("scale_grad_by_freq"), sparse: l.args.get("sparse"), offsets };
    let rows = l.args.get("num_embeddings").and_then(|v| v.as_const_int());
    embedding_bag(cx, st, t, dim, weights_dtype(l), mode, rows.map(|n| (n, true)), &format!("{}EmbeddingBag", layer_name(l)), span)
}

/// The number of bags `offsets` make: `Some(None)` without offsets (a 2-D input, a bag per
/// row), `Some(Some(n))` with a 1-D index tensor of `n` offsets given with a 1-D input of the
/// same index dtype (a bag per offset, the last one running to the end). `None` for what is
/// not modelled: other offsets or inputs (torch raises for some: "input has to be 1D or 2D
/// Tensor", "offsets has to be a 1D Tensor"; their values too: "offsets[0] has to be 0"),
/// and `per_sample_weights`.
fn bag_offsets(st: &State, t: &Tensor, b: &Bound) -> Option<Option<Dim>> {
    if !matches!(b.get("per_sample_weights"), None | Some(Value::None)) {
        return None;
    }
    let o = match b.get("offsets") {
        None | Some(Value::None) => return Some(None),
        Some(Value::Tensor(o)) => o,
        Some(_) => return None,
    };
    let (os, ts) = (st.resolve(&o.shape), st.resolve(&t.shape));
    let index = |d: Option<DType>| matches!(d, Some(DType::Long | DType::Int));
    if os.rank() != Some(1) || ts.rank() != Some(1) || !index(o.dtype) || o.dtype != t.dtype {
        return None;
    }
    // offsets[0] must be 0 ("offsets[0] has to be 0"): values known to lie elsewhere raise
    if o.values.as_ref().is_some_and(|v| v.lo != 0) {
        return None;
    }
    Some(Some(os.dims[0].clone()))
}

/// `F.embedding(input, weight)`.
pub(super) fn functional_embedding(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let Some(Value::Tensor(w)) = b.get("weight") else { return vec![(st, Value::Unknown)] };
    let ws = st.resolve(&w.shape);
    if ws.rank() != Some(2) {
        return vec![(st, Value::Unknown)];
    }
    // torch checks `padding_idx` against the weight's rows first
    if let Some(n) = ws.dims[0].v.clone()
        && !check_padding_idx(cx, &st, b.get("padding_idx"), &n, "F.embedding", span) {
            return Vec::new();
        }
    let rows = ws.dims[0].as_const();
    embedding(cx, st, t, ws.dims[1].clone(), w.dtype, rows.map(|n| (n, false)), "F.embedding", span)
}

/// `F.embedding_bag(input, weight, offsets)` without per-sample weights.
pub(super) fn functional_embedding_bag(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let Some(Value::Tensor(w)) = b.get("weight") else { return vec![(st, Value::Unknown)] };
    let ws = st.resolve(&w.shape);
    if ws.rank() != Some(2) {
        return vec![(st, Value::Unknown)];
    }
    let Some(offsets) = bag_offsets(&st, t, b) else { return vec![(st, Value::Unknown)] };
    let mode = BagMode { mode: b.get("mode"), scale: b.get("scale_grad_by_freq"), sparse: b.get("sparse"), offsets };
    let rows = ws.dims[0].as_const();
    embedding_bag(cx, st, t, ws.dims[1].clone(), w.dtype, mode, rows.map(|n| (n, false)), "F.embedding_bag", span)
}

/// `embedding(indices)`: indices' shape plus the embedding dim. `rows`: the table's number of
/// rows when known (and whether it is a layer's `num_embeddings`): known index values outside
/// `[0, rows)` raise `IndexError: index out of range in self` (negative ones too).
#[allow(clippy::too_many_arguments)]
fn embedding(cx: &mut dyn ModelCtx, st: State, t: &Tensor, dim: Dim, dtype: Option<DType>, rows: Option<(i128, bool)>, what: &str, span: Span) -> Vals {
    if !check_index_dtype(cx, &st, t, what, span) {
        return Vec::new();
    }
    if let Some((n, layer)) = rows
        && matches!(t.dtype, Some(DType::Long | DType::Int))
        && !check_index_values(cx, &st, t, Some(n), None, span, what, |_| if layer { format!("num_embeddings={n}") } else { format!("a weight of {n} rows") })
    {
        return Vec::new();
    }
    let s = st.resolve(&t.shape);
    let mut dims = s.dims.clone();
    dims.push(dim);
    vec![(st, tensor_value(Shape { prefix: s.prefix, dims }, dtype))]
}

/// An EmbeddingBag's `mode` and the flags 'max' rejects, as passed (None: the default).
struct BagMode<'a> {
    mode: Option<&'a Value>,
    scale: Option<&'a Value>,
    sparse: Option<&'a Value>,
    /// The number of bags the offsets make (`None`: no offsets, a bag per row of a 2-D input).
    offsets: Option<Dim>,
}

/// `embedding_bag(indices [B, N])`: one bag per row, `[B, dim]` (a 1-D input needs offsets);
/// `embedding_bag(indices [N], offsets [B])`: one bag per offset, `[B, dim]`.
/// `rows` as for [`embedding`]: known index values outside `[0, rows)` raise (every mode,
/// `padding_idx` or not: "Index 1 of input takes value 3 which is not in the valid range
/// [0, 3)", or "embedding_bag: Expected idx >= 0 && idx < num_embeddings ..." for `max`).
#[allow(clippy::too_many_arguments)]
fn embedding_bag(cx: &mut dyn ModelCtx, st: State, t: &Tensor, dim: Dim, dtype: Option<DType>, mode: BagMode, rows: Option<(i128, bool)>, what: &str, span: Span) -> Vals {
    if !check_index_dtype(cx, &st, t, what, span) {
        return Vec::new();
    }
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    let bags = mode.offsets.clone();
    if !cx.check(&st, span, Tri::from_bool(bags.is_none() && rank != 2), |cx| {
        let shown = cx.show_shape(&st, &s);
        (LayerInputRankMismatch::BagRank { op: what.into(), input: shown }, Vec::new())
    }) {
        return Vec::new();
    }
    if !check_bag_mode(cx, &st, mode.mode, mode.scale, mode.sparse, what, span) {
        return Vec::new();
    }
    // bags of 0 indices (`[B, 0]`) raise "step must be nonzero" (not modelled: no guess)
    if bags.is_none() && s.dims[1].as_const() == Some(0) {
        return vec![(st, Value::Unknown)];
    }
    if let Some((n, layer)) = rows
        && matches!(t.dtype, Some(DType::Long | DType::Int))
        && !check_index_values(cx, &st, t, Some(n), None, span, what, |_| if layer { format!("num_embeddings={n}") } else { format!("a weight of {n} rows") })
    {
        return Vec::new();
    }
    let n = bags.unwrap_or_else(|| s.dims[0].clone());
    vec![(st, tensor_value(Shape::known(vec![n, dim]), dtype))]
}

/// `F.one_hot(tensor, num_classes)`: class indices get a trailing dim of `num_classes`.
pub(super) fn one_hot(cx: &mut dyn ModelCtx, st: State, t: &Tensor, b: &Bound, span: Span) -> Vals {
    let bad = Tri::from_bool(t.dtype.is_some_and(|d| d != DType::Long));
    if !cx.check(&st, span, bad, |cx| {
        let shown = cx.show_shape(&st, &t.shape);
        (InvalidShapeArgument::OneHotDtype { input: shown }, Vec::new())
    }) {
        return Vec::new();
    }
    let k = match b.get("num_classes") {
        Some(Value::Int(p)) if p.as_const() != Some(-1) => Dim::known(p.clone(), None),
        _ => Dim::unknown(),
    };
    // class values: `[0, num_classes)`, or non-negative when inferred (`num_classes=-1`);
    // torch raises "Class values must be smaller than num_classes." / "... non-negative."
    let classes = match b.get("num_classes") {
        None => Some(None),
        Some(Value::Int(p)) => p.as_const().filter(|c| *c >= -1).map(|c| (c != -1).then_some(c)),
        _ => None,
    };
    if let Some(n) = classes
        && t.dtype == Some(DType::Long)
        && !check_index_values(cx, &st, t, n, None, span, "F.one_hot", |_| match n {
            Some(n) => format!("num_classes={n}"),
            None => "class values, which must be non-negative".into(),
        })
    {
        return Vec::new();
    }
    let s = st.resolve(&t.shape);
    let mut dims = s.dims.clone();
    dims.push(k);
    vec![(st, tensor_value(Shape { prefix: s.prefix, dims }, Some(DType::Long)))]
}
