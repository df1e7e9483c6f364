//! Attention: `nn.MultiheadAttention`, `F.scaled_dot_product_attention`, the transformer layers
//! and `nn.Transformer`.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::layers::{layer_name, Bound, Function, Module, Nn};
use super::tensor::{broadcast, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::Decl;
use crate::value::*;
use crate::ir::Span;
use crate::rules::shape::{self as r, InvalidShapeArgument, LayerChannelMismatch, LayerInputRankMismatch, MatmulShapeMismatch};
use crate::rules::violation::Violation;
use crate::rules::Rule;
use crate::shape::{Poly, Tri};

const CHECKS: &[&Rule] = &[&r::invalid_shape_argument::RULE, &r::layer_input_rank_mismatch::RULE, &r::layer_channel_mismatch::RULE];
// The feed-forward size, dropout, norm placement and bias change values only. `activation` is
// read: a string other than 'relu'/'gelu' raises when the layer is built (a callable is not
// judged). An encoder layer's output has its input's shape either way round (`batch_first`).
const ENCODER_LAYER: &str = "d_model, nhead, ~dim_feedforward=2048, ~dropout=0.1, activation=\"relu\", ~layer_norm_eps=1e-05, batch_first=False, ~norm_first=False, ~bias=True, ~device=None";
const DECODER_LAYER: &str = "d_model, nhead, ~dim_feedforward=2048, ~dropout=0.1, activation=\"relu\", ~layer_norm_eps=1e-05, batch_first=False, ~norm_first=False, ~bias=True, ~device=None";

pub const NN: &[Nn] = &[
    // `add_bias_kv` and `add_zero_attn` are read: modelled only when False; the call's
    // `is_causal` is not modelled
    Nn::module(
        Decl::module(
            "torch.nn.MultiheadAttention",
            "embed_dim, num_heads, ~dropout=0.0, ~bias=True, add_bias_kv=False, add_zero_attn=False, kdim=None, vdim=None, batch_first=False, ~device=None",
            "query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None, average_attn_weights=True",
        )
        .checks(CHECKS),
        Module::MultiheadAttention,
    ),
    // the encoder layer's src_key_padding_mask is checked in training (`src_mask` is read:
    // modelled only without it); the decoder's masks are not checked: with masks of the shapes
    // torch takes (`masks_fit`) the output is known, with any other it is Unknown
    Nn::module(Decl::module("torch.nn.TransformerEncoderLayer", ENCODER_LAYER, "src, src_mask=None, src_key_padding_mask=None").checks(CHECKS), Module::TransformerEncoderLayer),
    Nn::module(Decl::module("torch.nn.TransformerDecoderLayer", DECODER_LAYER, "tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None, ~tgt_is_causal=False, ~memory_is_causal=False").checks(CHECKS), Module::TransformerDecoderLayer),
    // `custom_encoder`/`custom_decoder` are read: modelled only without them
    Nn::module(
        Decl::module(
            "torch.nn.Transformer",
            "d_model=512, nhead=8, ~num_encoder_layers=6, ~num_decoder_layers=6, ~dim_feedforward=2048, ~dropout=0.1, activation=\"relu\", custom_encoder=None, custom_decoder=None, ~layer_norm_eps=1e-05, batch_first=False, ~norm_first=False, ~bias=True, ~device=None",
            "src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None, ~src_is_causal=None, ~tgt_is_causal=None, ~memory_is_causal=False",
        )
        .checks(CHECKS),
        Module::Transformer,
    ),
    // stacks of a shape-preserving layer (any number of them), then `norm` when given (a module
    // called on the output). `enable_nested_tensor` and `mask_check` are about speed and masks;
    // the encoder's masks go to its layer (`mask` as `src_mask`), `is_causal` is a hint.
    Nn::module(Decl::module("torch.nn.TransformerEncoder", "encoder_layer, ~num_layers, norm=None, ~enable_nested_tensor=True, ~mask_check=True", "src, mask=None, src_key_padding_mask=None, ~is_causal=None").checks(CHECKS), Module::TransformerStack),
    Nn::module(Decl::module("torch.nn.TransformerDecoder", "decoder_layer, ~num_layers, norm=None", "tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None, ~tgt_is_causal=None, ~memory_is_causal=False").checks(CHECKS), Module::TransformerStack),
    // `attn_mask` and `enable_gqa` are read: modelled only without them; without a mask,
    // `is_causal` and `scale` change values only
    Nn::function(
        Decl::function("torch.nn.functional.scaled_dot_product_attention", "query, key, value, attn_mask=None, ~dropout_p=0.0, ~is_causal=False, *, ~scale=None, enable_gqa=False").checks(&[
            &r::layer_input_rank_mismatch::RULE,
            &r::matmul_shape_mismatch::RULE,
            &r::broadcast_shape_mismatch::RULE,
        ]),
        Function::ScaledDotProductAttention,
    ),
];

/// Construction check of the attention layers: the embedding dim (`e`) divisible by the
/// heads (`h`): `("embed_dim", "num_heads")` or `("d_model", "nhead")`.
pub fn heads_check(cx: &mut dyn ModelCtx, st: &State, kind: &str, amap: &BTreeMap<Rc<str>, Value>, (e, h): (&str, &str), span: Span) -> bool {
    let ev = amap.get(e).and_then(|v| v.as_int()).and_then(|p| p.as_const());
    let hv = amap.get(h).and_then(|v| v.as_int()).and_then(|p| p.as_const());
    match (ev, hv) {
        (Some(a), Some(b)) if b > 0 => cx.check(st, span, Tri::from_bool(a % b != 0), |_| {
            (InvalidShapeArgument::NotDivisible { op: kind.into(), param: e.into(), value: a.to_string(), by_param: h.into(), by: b.to_string() }, Vec::new())
        }),
        _ => {
            // the SHP902 run, symbolic sizes (constructor parameters, options): `e % h != 0` for
            // a divisor the facts prove positive (the default run keeps its checks as they were)
            if !cx.free_params() {
                return true;
            }
            let (Some(a), Some(b)) = (amap.get(e).and_then(|v| v.as_int()).cloned(), amap.get(h).and_then(|v| v.as_int()).cloned()) else { return true };
            if cx.poly_cmp(st, &b, crate::shape::Rel::Lt, &Poly::constant(1)) != Tri::False {
                return true;
            }
            let Some(rem) = a.modulo(&b) else { return true };
            let violated = crate::shape::Formula::cmp(&rem, crate::shape::Rel::Ne, &Poly::constant(0));
            cx.check(st, span, violated, |cx| {
                let (value, by) = (a.display(cx.syms()), b.display(cx.syms()));
                (InvalidShapeArgument::NotDivisible { op: kind.into(), param: e.into(), value, by_param: h.into(), by }, Vec::new())
            })
        }
    }
}

/// Construction check of the transformer layers (after the heads, as in torch): an
/// `activation` string must be 'relu' or 'gelu' (`_get_activation_fn`). `nn.Transformer`
/// builds layers (and so reads it) unless both `custom_encoder` and `custom_decoder` are given.
pub fn activation_check(cx: &mut dyn ModelCtx, st: &State, kind: &str, m: Module, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    let Some(Value::Str(Some(a))) = amap.get("activation") else { return true };
    let custom = |k: &str| !matches!(amap.get(k), None | Some(Value::None));
    if m == Module::Transformer && custom("custom_encoder") && custom("custom_decoder") {
        return true;
    }
    cx.check(st, span, Tri::from_bool(!matches!(&**a, "relu" | "gelu")), |_| {
        (InvalidShapeArgument::ArgMust { op: kind.into(), name: "activation".into(), value: format!("'{a}'"), should: "be 'relu' or 'gelu' (or a callable)".into() }, Vec::new())
    })
}

/// A stack (`nn.TransformerEncoder`/`Decoder`): the output of its layer, then its `norm` module
/// when one is given. The encoder hands its masks to each layer as torch does (`mask` becomes
/// the layer's `src_mask`); `is_causal` changes values only.
pub fn stack(cx: &mut dyn ModelCtx, st: State, l: &Layer, args: Vec<Value>, kwargs: Vec<(crate::ir::Name, Value)>, span: Span) -> Vals {
    let norm = match l.args.get("norm") {
        None | Some(Value::None) => None,
        Some(n @ Value::Ref(_)) => Some(n.clone()),
        Some(_) => return vec![(st, Value::Unknown)],
    };
    let (args, kwargs) = if l.args.contains_key("encoder_layer") {
        let mut rest = args.into_iter();
        let mut a = rest.next().into_iter().collect::<Vec<_>>();
        let mut kw: Vec<(crate::ir::Name, Value)> = ["src_mask", "src_key_padding_mask", "is_causal"].iter().zip(rest).map(|(k, v)| (crate::ir::Name::from(*k), v)).collect();
        for (k, v) in kwargs {
            match &*k {
                "mask" => kw.push(("src_mask".into(), v)),
                "src" => a.push(v),
                _ => kw.push((k, v)),
            }
        }
        // `is_causal` is a hint about the mask's values: never passed to a layer
        kw.retain(|(k, _)| &**k != "is_causal");
        (a, kw)
    } else {
        (args, kwargs)
    };
    let layer = match l.args.get("encoder_layer").or(l.args.get("decoder_layer")) {
        Some(layer @ Value::Ref(_)) => layer.clone(),
        _ => return vec![(st, Value::Unknown)],
    };
    let out = cx.call(layer, args, kwargs, st, span);
    let Some(norm) = norm else { return out };
    out.into_iter()
        .flat_map(|(st, v)| match v {
            Value::Tensor(_) => cx.call(norm.clone(), vec![v], Vec::new(), st, span),
            _ => vec![(st, Value::Unknown)],
        })
        .collect()
}

/// A known-rank shape of a tensor value, or None.
fn shape_of(st: &State, v: Option<&Value>) -> Option<Shape> {
    match v {
        Some(Value::Tensor(t)) => {
            let s = st.resolve(&t.shape);
            s.rank().map(|_| s)
        }
        _ => None,
    }
}

fn flag(l: &Layer, k: &str) -> Option<bool> {
    match l.args.get(k) {
        None => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// `d == want`; when it fails, the violation `v` builds from the texts of `d` and `want`.
fn expect_eq<V: Violation>(cx: &mut dyn ModelCtx, st: &State, span: Span, d: &Dim, want: &Dim, v: impl FnOnce(String, String) -> V) -> bool {
    let eq = cx.dim_eq_f(d, want);
    cx.check(st, span, eq.not(), |cx| {
        let (ds, ws) = (cx.show_dim_in(st, d), cx.show_dim_in(st, want));
        (v(ds, ws), Vec::new())
    })
}

/// A rank check: false (torch raises) when `ok` is false.
fn expect_rank(cx: &mut dyn ModelCtx, st: &State, span: Span, ok: bool, v: impl FnOnce() -> LayerInputRankMismatch) -> bool {
    cx.check(st, span, Tri::from_bool(!ok), |_| (v(), Vec::new()))
}

/// The (seq, batch) positions of a batched sequence tensor.
fn seq_batch(batch_first: bool) -> (usize, usize) {
    if batch_first { (1, 0) } else { (0, 1) }
}

/// `nn.MultiheadAttention(embed_dim, num_heads, ..., kdim, vdim, batch_first)(q, k, v, ...)`:
/// `(attn_output, attn_weights)`.
pub fn mha(cx: &mut dyn ModelCtx, st: State, l: &Layer, b: &Bound, span: Span) -> Vals {
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    let (Some(e), Some(h)) = (int("embed_dim"), int("num_heads")) else { return vec![(st, Value::Unknown)] };
    let dim_arg = |k: &str| match l.args.get(k) {
        None | Some(Value::None) => Some(e.clone()),
        Some(v) => v.as_int().cloned(),
    };
    let (Some(kdim), Some(vdim), Some(bf)) = (dim_arg("kdim"), dim_arg("vdim"), flag(l, "batch_first")) else { return vec![(st, Value::Unknown)] };
    if flag(l, "add_bias_kv") != Some(false) || flag(l, "add_zero_attn") != Some(false) {
        return vec![(st, Value::Unknown)];
    }
    let (Some(q), Some(k), Some(v)) = (shape_of(&st, b.get("query")), shape_of(&st, b.get("key")), shape_of(&st, b.get("value"))) else {
        return vec![(st, Value::Unknown)];
    };
    let dtype = match b.get("query") {
        Some(Value::Tensor(t)) => t.dtype,
        _ => None,
    };
    let what = format!("{}MultiheadAttention", layer_name(l));
    let (qs, ks, vs) = (cx.show_shape(&st, &q), cx.show_shape(&st, &k), cx.show_shape(&st, &v));
    let qr = q.dims.len();
    if !expect_rank(cx, &st, span, qr == 2 || qr == 3, || LayerInputRankMismatch::Unbatched { op: what.clone(), name: "query".into(), shape: qs.clone() }) {
        return Vec::new();
    }
    if !expect_rank(cx, &st, span, k.dims.len() == qr && v.dims.len() == qr, || LayerInputRankMismatch::KeyValueRank { op: what.clone(), rank: qr.to_string(), key: ks.clone(), value: vs.clone() }) {
        return Vec::new();
    }
    let batched = qr == 3;
    // to [L, N, E] (unbatched: [L, E])
    let norm = |s: &Shape| -> Vec<Dim> {
        if batched && bf {
            vec![s.dims[1].clone(), s.dims[0].clone(), s.dims[2].clone()]
        } else {
            s.dims.clone()
        }
    };
    let (qn, kn, vn) = (norm(&q), norm(&k), norm(&v));
    let last = qr - 1;
    let e_dim = Dim::known(e.clone(), None);
    if !expect_eq(cx, &st, span, &qn[last], &e_dim, |last, want| LayerChannelMismatch::LastDim { layer: what.clone(), param: "embed_dim".into(), want, name: "query".into(), shape: qs.clone(), last }) {
        return Vec::new();
    }
    let same = kdim == e && vdim == e;
    // key and value agree: the whole shape when the projections are packed, else all but the last dim
    let upto = if same { qr } else { last };
    for i in 0..upto {
        if !expect_eq(cx, &st, span, &kn[i], &vn[i], |_, _| InvalidShapeArgument::KeyValue { op: what.clone(), key: ks.clone(), value: vs.clone() }) {
            return Vec::new();
        }
    }
    let kd = Dim::known(kdim.clone(), None);
    if !expect_eq(cx, &st, span, &kn[last], &kd, |last, want| LayerChannelMismatch::LastDim { layer: what.clone(), param: "kdim".into(), want, name: "key".into(), shape: ks.clone(), last }) {
        return Vec::new();
    }
    let vd = Dim::known(vdim.clone(), None);
    if !expect_eq(cx, &st, span, &vn[last], &vd, |last, want| LayerChannelMismatch::LastDim { layer: what.clone(), param: "vdim".into(), want, name: "value".into(), shape: vs.clone(), last }) {
        return Vec::new();
    }
    if batched && !expect_eq(cx, &st, span, &kn[1], &qn[1], |key_batch, query_batch| InvalidShapeArgument::KeyBatch { op: what.clone(), key_batch, query_batch, query: qs.clone(), key: ks.clone() }) {
        return Vec::new();
    }
    let (lq, s_len) = (qn[0].clone(), kn[0].clone());
    let heads = Dim::known(h.clone(), None);
    // attn_mask: [L, S], or [N*num_heads, L, S] ([num_heads, L, S] unbatched)
    if let Some(m) = shape_of(&st, b.get("attn_mask")) {
        let ms = cx.show_shape(&st, &m);
        let want: Option<Vec<Dim>> = match m.dims.len() {
            2 => Some(vec![lq.clone(), s_len.clone()]),
            3 => {
                let nh = if batched { qn[1].v.as_ref().and_then(|n| n.mul(&h)).map(|p| Dim::known(p, None)).unwrap_or(Dim::unknown()) } else { heads.clone() };
                Some(vec![nh, lq.clone(), s_len.clone()])
            }
            _ => None,
        };
        let Some(want) = want else {
            cx.check(&st, span, Tri::True, |_| (InvalidShapeArgument::MaskRank { op: what.clone(), mask: ms }, Vec::new()));
            return Vec::new();
        };
        let wshown = cx.show_shape(&st, &Shape::known(want.clone()));
        for (a, w) in m.dims.iter().zip(&want) {
            if !expect_eq(cx, &st, span, a, w, |_, _| InvalidShapeArgument::MaskShape { op: what.clone(), name: "attn_mask".into(), mask: ms.clone(), want: wshown.clone() }) {
                return Vec::new();
            }
        }
    } else if !matches!(b.get("attn_mask"), None | Some(Value::None)) {
        return vec![(st, Value::Unknown)];
    }
    if let Some(m) = shape_of(&st, b.get("key_padding_mask")) {
        let ms = cx.show_shape(&st, &m);
        let want = if batched { vec![kn[1].clone(), s_len.clone()] } else { vec![s_len.clone()] };
        let wshown = cx.show_shape(&st, &Shape::known(want.clone()));
        if !expect_rank(cx, &st, span, m.dims.len() == want.len(), || LayerInputRankMismatch::MaskShape { op: what.clone(), name: "key_padding_mask".into(), mask: ms.clone(), want: wshown.clone() }) {
            return Vec::new();
        }
        for (a, w) in m.dims.iter().zip(&want) {
            if !expect_eq(cx, &st, span, a, w, |_, _| InvalidShapeArgument::MaskShape { op: what.clone(), name: "key_padding_mask".into(), mask: ms.clone(), want: wshown.clone() }) {
                return Vec::new();
            }
        }
    } else if !matches!(b.get("key_padding_mask"), None | Some(Value::None)) {
        return vec![(st, Value::Unknown)];
    }
    let mut odims = q.dims.clone();
    odims[last] = e_dim;
    let out = tensor_value(Shape::known(odims), dtype);
    let weights = match (b.get("need_weights"), b.get("average_attn_weights")) {
        (Some(Value::Bool(false)), _) => Value::None,
        (None | Some(Value::Bool(true)), avg @ (None | Some(Value::Bool(_)))) => {
            let mut w = Vec::new();
            if batched {
                w.push(qn[1].clone());
            }
            if matches!(avg, Some(Value::Bool(false))) {
                w.push(heads);
            }
            w.push(lq);
            w.push(s_len);
            tensor_value(Shape::known(w), dtype)
        }
        _ => Value::Unknown,
    };
    vec![(st, Value::Tuple(Rc::new(vec![out, weights])))]
}

/// `d_model` of a transformer layer (default 512 for `nn.Transformer`).
fn d_model(l: &Layer, default: Option<i128>) -> Option<Poly> {
    match l.args.get("d_model") {
        None => default.map(Poly::constant),
        v => v.and_then(|v| v.as_int()).cloned(),
    }
}

/// A mask of a kind attention takes: bool, or floating (added to the scores).
fn mask_dtype(m: &Tensor) -> bool {
    m.dtype.is_some_and(|d| d == DType::Bool || d.is_floating())
}

/// Whether a mask's dims are certainly `want`.
fn dims_are(cx: &dyn ModelCtx, st: &State, ms: &Shape, want: &[Dim]) -> bool {
    ms.dims.len() == want.len() && ms.dims.iter().zip(want).all(|(a, w)| cx.dim_eq(st, a, w) == Tri::True)
}

/// `nn.TransformerEncoderLayer(d_model, nhead, ...)(src)`: src `[S, N, E]` (`[N, S, E]` with
/// batch_first) or unbatched `[S, E]`; the output has src's shape.
pub fn encoder_layer(cx: &mut dyn ModelCtx, st: State, l: &Layer, b: &Bound, span: Span) -> Vals {
    let Some(e) = d_model(l, None) else { return vec![(st, Value::Unknown)] };
    let Some(Value::Tensor(t)) = b.get("src") else { return vec![(st, Value::Unknown)] };
    let Some(s) = shape_of(&st, b.get("src")) else { return vec![(st, Value::Unknown)] };
    let what = format!("{}{}", layer_name(l), l.kind);
    let shown = cx.show_shape(&st, &s);
    if !expect_rank(cx, &st, span, matches!(s.dims.len(), 2 | 3), || LayerInputRankMismatch::Unbatched { op: what.clone(), name: "src".into(), shape: shown.clone() }) {
        return Vec::new();
    }
    let last = s.dims.last().unwrap().clone();
    if !expect_eq(cx, &st, span, &last, &Dim::known(e, None), |last, want| LayerChannelMismatch::LastDim { layer: what.clone(), param: "d_model".into(), want, name: "input".into(), shape: shown.clone(), last }) {
        return Vec::new();
    }
    if let Some(m) = b.get("src_mask").filter(|m| !matches!(m, Value::None)) {
        // in training the mask goes to the self-attention as its attn_mask, which must be
        // [S, S] ("The shape of the 2D attn_mask is torch.Size([64, 64]), but should be (24,
        // 24).") or 3-D; eval's fast path treats it otherwise: only a layer certainly in training
        // is checked, and a mask of another rank or of an unknown kind is not modelled
        let (Some(ms), Value::Tensor(mt), Some(bf)) = (shape_of(&st, Some(m)), m, flag(l, "batch_first")) else { return vec![(st, Value::Unknown)] };
        let kind_ok = mask_dtype(mt);
        let seq = if s.dims.len() == 3 { s.dims[seq_batch(bf).0].clone() } else { s.dims[0].clone() };
        let want = vec![seq.clone(), seq];
        let fits = dims_are(cx, &st, &ms, &want);
        if !kind_ok || ms.dims.len() != 2 || !super::layers::is_training(l, span) {
            if !(kind_ok && fits) {
                return vec![(st, Value::Unknown)];
            }
        } else {
            let (mshown, wshown) = (cx.show_shape(&st, &ms), cx.show_shape(&st, &Shape::known(want.clone())));
            for (a, w) in ms.dims.iter().zip(&want) {
                if !expect_eq(cx, &st, span, a, w, |_, _| InvalidShapeArgument::MaskShape { op: what.clone(), name: "src_mask".into(), mask: mshown.clone(), want: wshown.clone() }) {
                    return Vec::new();
                }
            }
        }
    }
    if let Some(m) = b.get("src_key_padding_mask").filter(|m| !matches!(m, Value::None)) {
        // in training the mask goes to the self-attention, which checks it ([N, S], or [S]
        // unbatched); eval's fast path reshapes it instead, so only a layer certainly in
        // training is checked; a bool or floating mask
        let (Some(ms), Value::Tensor(mt), Some(bf)) = (shape_of(&st, Some(m)), m, flag(l, "batch_first")) else { return vec![(st, Value::Unknown)] };
        let floating = mask_dtype(mt);
        let want = if s.dims.len() == 3 {
            let (si, bi) = seq_batch(bf);
            vec![s.dims[bi].clone(), s.dims[si].clone()]
        } else {
            vec![s.dims[0].clone()]
        };
        if !super::layers::is_training(l, span) || !floating {
            // a mode the model cannot tell: a mask of the right shape gives the output in
            // either mode; anything else is Unknown
            let fits = floating && dims_are(cx, &st, &ms, &want);
            return vec![(st, if fits { tensor_value(s, t.dtype) } else { Value::Unknown })];
        }
        let (mshown, wshown) = (cx.show_shape(&st, &ms), cx.show_shape(&st, &Shape::known(want.clone())));
        if !expect_rank(cx, &st, span, ms.dims.len() == want.len(), || LayerInputRankMismatch::MaskShape { op: what.clone(), name: "src_key_padding_mask".into(), mask: mshown.clone(), want: wshown.clone() }) {
            return Vec::new();
        }
        for (a, w) in ms.dims.iter().zip(&want) {
            if !expect_eq(cx, &st, span, a, w, |_, _| InvalidShapeArgument::MaskShape { op: what.clone(), name: "src_key_padding_mask".into(), mask: mshown.clone(), want: wshown.clone() }) {
                return Vec::new();
            }
        }
    }
    vec![(st, tensor_value(s, t.dtype))]
}

/// `tgt` and `memory` of a decoder: same rank (2 or 3), last dims `d_model`, equal batch sizes.
#[allow(clippy::too_many_arguments)]
fn decoder_inputs(cx: &mut dyn ModelCtx, st: &State, e: &Poly, bf: bool, tgt: &Shape, mem: &Shape, names: (&str, &str), what: &str, span: Span) -> bool {
    let (ts, ms) = (cx.show_shape(st, tgt), cx.show_shape(st, mem));
    let (tn, mn) = names;
    let tr = tgt.dims.len();
    if !expect_rank(cx, st, span, matches!(tr, 2 | 3), || LayerInputRankMismatch::Unbatched { op: what.into(), name: tn.into(), shape: ts.clone() }) {
        return false;
    }
    if !expect_rank(cx, st, span, mem.dims.len() == tr, || LayerInputRankMismatch::SameRank { op: what.into(), first_name: tn.into(), first: ts.clone(), second_name: mn.into(), second: ms.clone() }) {
        return false;
    }
    let ed = Dim::known(e.clone(), None);
    for (s, name, shown) in [(tgt, tn, &ts), (mem, mn, &ms)] {
        if !expect_eq(cx, st, span, s.dims.last().unwrap(), &ed, |last, want| LayerChannelMismatch::LastDim { layer: what.into(), param: "d_model".into(), want, name: name.into(), shape: shown.clone(), last }) {
            return false;
        }
    }
    if tr == 3 {
        let (_, bi) = seq_batch(bf);
        if !expect_eq(cx, st, span, &mem.dims[bi], &tgt.dims[bi], |second_batch, first_batch| {
            InvalidShapeArgument::DecoderBatch { op: what.into(), second_name: mn.into(), second: ms.clone(), second_batch, first_name: tn.into(), first: ts.clone(), first_batch }
        }) {
            return false;
        }
    }
    true
}

/// `nn.TransformerDecoderLayer(...)(tgt, memory)`: the output has tgt's shape.
pub fn decoder_layer(cx: &mut dyn ModelCtx, st: State, l: &Layer, b: &Bound, span: Span) -> Vals {
    let (Some(e), Some(bf)) = (d_model(l, None), flag(l, "batch_first")) else { return vec![(st, Value::Unknown)] };
    let (Some(t), Some(m)) = (shape_of(&st, b.get("tgt")), shape_of(&st, b.get("memory"))) else { return vec![(st, Value::Unknown)] };
    let Some(Value::Tensor(tt)) = b.get("tgt") else { return vec![(st, Value::Unknown)] };
    let what = format!("{}{}", layer_name(l), l.kind);
    if !decoder_inputs(cx, &st, &e, bf, &t, &m, ("tgt", "memory"), &what, span) {
        return Vec::new();
    }
    if !masks_fit(cx, &st, b, bf, &t, &m, ("tgt", "memory")) {
        return vec![(st, Value::Unknown)];
    }
    vec![(st, tensor_value(t, tt.dtype))]
}

/// Whether every mask of a decoder (or of `nn.Transformer`, whose encoder's `src` is the
/// memory) is absent or has a shape torch takes, with a bool or floating dtype: `tgt_mask`
/// `[T, T]`, `memory_mask` `[T, S]`, `src_mask` `[S, S]`, the key padding masks `[N, T]` /
/// `[N, S]` (`[T]` / `[S]` unbatched). Masks are not checked: any other is left Unknown.
fn masks_fit(cx: &mut dyn ModelCtx, st: &State, b: &Bound, bf: bool, tgt: &Shape, mem: &Shape, (tn, mn): (&str, &str)) -> bool {
    let batched = tgt.dims.len() == 3;
    let (si, bi) = seq_batch(bf);
    let (lt, ls) = if batched { (&tgt.dims[si], &mem.dims[si]) } else { (&tgt.dims[0], &mem.dims[0]) };
    let n = batched.then(|| &tgt.dims[bi]);
    let pad = |l: &Dim| match n {
        Some(n) => vec![n.clone(), l.clone()],
        None => vec![l.clone()],
    };
    let src = if mn == "src" { "src" } else { "" };
    let wants: Vec<(String, Vec<Dim>)> = vec![
        (format!("{tn}_mask"), vec![lt.clone(), lt.clone()]),
        ("memory_mask".into(), vec![lt.clone(), ls.clone()]),
        (format!("{tn}_key_padding_mask"), pad(lt)),
        ("memory_key_padding_mask".into(), pad(ls)),
        (format!("{src}_mask"), vec![ls.clone(), ls.clone()]),
        (format!("{src}_key_padding_mask"), pad(ls)),
    ];
    wants.iter().all(|(k, want)| match b.get(k.as_str()) {
        None | Some(Value::None) => true,
        Some(v @ Value::Tensor(mt)) => {
            mask_dtype(mt) && shape_of(st, Some(v)).is_some_and(|ms| dims_are(cx, st, &ms, want))
        }
        Some(_) => false,
    })
}

/// `nn.Transformer(d_model, nhead, ...)(src, tgt)`: src and tgt agree in rank, batch and
/// d_model; the output has tgt's shape.
pub fn transformer(cx: &mut dyn ModelCtx, st: State, l: &Layer, b: &Bound, span: Span) -> Vals {
    if l.args.contains_key("custom_encoder") || l.args.contains_key("custom_decoder") {
        return vec![(st, Value::Unknown)];
    }
    let (Some(e), Some(bf)) = (d_model(l, Some(512)), flag(l, "batch_first")) else { return vec![(st, Value::Unknown)] };
    let (Some(s), Some(t)) = (shape_of(&st, b.get("src")), shape_of(&st, b.get("tgt"))) else { return vec![(st, Value::Unknown)] };
    let Some(Value::Tensor(tt)) = b.get("tgt") else { return vec![(st, Value::Unknown)] };
    let what = format!("{}Transformer", layer_name(l));
    if !decoder_inputs(cx, &st, &e, bf, &t, &s, ("tgt", "src"), &what, span) {
        return Vec::new();
    }
    if !masks_fit(cx, &st, b, bf, &t, &s, ("tgt", "src")) {
        return vec![(st, Value::Unknown)];
    }
    vec![(st, tensor_value(t, tt.dtype))]
}

/// `F.scaled_dot_product_attention(q [.., L, E], k [.., S, E], v [.., S, Ev])`: `[.., L, Ev]`,
/// the batch dims broadcast.
pub fn sdpa(cx: &mut dyn ModelCtx, st: State, b: &Bound, span: Span) -> Vals {
    if !matches!(b.get("attn_mask"), None | Some(Value::None)) || !matches!(b.get("enable_gqa"), None | Some(Value::Bool(false))) {
        return vec![(st, Value::Unknown)];
    }
    let (Some(q), Some(k), Some(v)) = (shape_of(&st, b.get("query")), shape_of(&st, b.get("key")), shape_of(&st, b.get("value"))) else {
        return vec![(st, Value::Unknown)];
    };
    let dtype = match b.get("query") {
        Some(Value::Tensor(t)) => t.dtype,
        _ => None,
    };
    let what = "F.scaled_dot_product_attention";
    let (qs, ks, vs) = (cx.show_shape(&st, &q), cx.show_shape(&st, &k), cx.show_shape(&st, &v));
    if !expect_rank(cx, &st, span, q.dims.len() >= 2 && k.dims.len() >= 2 && v.dims.len() >= 2, || LayerInputRankMismatch::AttentionRank { op: what.into(), query: qs.clone(), key: ks.clone(), value: vs.clone() }) {
        return Vec::new();
    }
    let (qr, kr, vr) = (q.dims.len(), k.dims.len(), v.dims.len());
    if !expect_eq(cx, &st, span, &k.dims[kr - 1], &q.dims[qr - 1], |key_size, query_size| MatmulShapeMismatch::KeyEmbedding { op: what.into(), key: ks.clone(), key_size, query: qs.clone(), query_size }) {
        return Vec::new();
    }
    let qb = Shape::known(q.dims[..qr - 2].to_vec());
    let kb = Shape::known(k.dims[..kr - 2].to_vec());
    let vb = Shape::known(v.dims[..vr - 2].to_vec());
    let Some(batch) = broadcast(cx, &st, &qb, &kb, span, what) else { return Vec::new() };
    if !expect_eq(cx, &st, span, &v.dims[vr - 2], &k.dims[kr - 2], |value_len, key_len| MatmulShapeMismatch::ValueLength { op: what.into(), value: vs.clone(), value_len, key: ks.clone(), key_len }) {
        return Vec::new();
    }
    let Some(batch) = broadcast(cx, &st, &batch, &vb, span, what) else { return Vec::new() };
    let mut dims = batch.dims;
    dims.push(q.dims[qr - 2].clone());
    dims.push(v.dims[vr - 1].clone());
    vec![(st, tensor_value(Shape::known(dims), dtype))]
}
