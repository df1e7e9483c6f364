//! `torch.nn` modules (construction and call) and their `torch.nn.functional` twins.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::bind;
use super::tensor::{check_dim, flatten, tensor_value};
use crate::engine::interp::{Interp, Vals};
use crate::engine::value::*;
use crate::ir::{Name, Span};
use crate::rules::shape as r;
use crate::shape::{Formula, Poly, Rel, Tri};

/// Constructor signatures: parameter names in order.
fn signature(kind: &str) -> &'static [&'static str] {
    match kind {
        "Linear" => &["in_features", "out_features", "bias"],
        "Bilinear" => &["in1_features", "in2_features", "out_features", "bias"],
        "Conv1d" | "Conv2d" | "Conv3d" => &["in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias", "padding_mode"],
        "ConvTranspose1d" | "ConvTranspose2d" | "ConvTranspose3d" => {
            &["in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding", "groups", "bias", "dilation"]
        }
        "MaxPool1d" | "MaxPool2d" | "MaxPool3d" => &["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"],
        "AvgPool1d" | "AvgPool2d" | "AvgPool3d" => &["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"],
        "AdaptiveAvgPool1d" | "AdaptiveAvgPool2d" | "AdaptiveAvgPool3d" | "AdaptiveMaxPool1d" | "AdaptiveMaxPool2d" | "AdaptiveMaxPool3d" => &["output_size"],
        "BatchNorm1d" | "BatchNorm2d" | "BatchNorm3d" | "InstanceNorm1d" | "InstanceNorm2d" | "InstanceNorm3d" => &["num_features", "eps", "momentum", "affine"],
        "LayerNorm" | "RMSNorm" => &["normalized_shape", "eps", "elementwise_affine"],
        "GroupNorm" => &["num_groups", "num_channels", "eps", "affine"],
        "Embedding" => &["num_embeddings", "embedding_dim", "padding_idx"],
        "EmbeddingBag" => &["num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode"],
        "Flatten" => &["start_dim", "end_dim"],
        "Softmax" | "LogSoftmax" | "Softmin" => &["dim"],
        "MSELoss" | "L1Loss" | "BCELoss" => &["size_average", "reduce", "reduction"],
        "BCEWithLogitsLoss" => &["weight", "size_average", "reduce", "reduction", "pos_weight"],
        "SmoothL1Loss" | "HuberLoss" => &["size_average", "reduce", "reduction"],
        "Dropout" | "Dropout1d" | "Dropout2d" | "Dropout3d" | "AlphaDropout" => &["p", "inplace"],
        "LSTM" | "GRU" | "RNN" => &["input_size", "hidden_size", "num_layers"],
        "LSTMCell" | "GRUCell" | "RNNCell" => &["input_size", "hidden_size", "bias"],
        "MultiheadAttention" => &["embed_dim", "num_heads", "dropout", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim", "batch_first"],
        "TransformerEncoderLayer" | "TransformerDecoderLayer" => &["d_model", "nhead", "dim_feedforward", "dropout"],
        "TransformerEncoder" | "TransformerDecoder" => &["encoder_layer", "num_layers", "norm"],
        "Upsample" => &["size", "scale_factor", "mode", "align_corners"],
        "CrossEntropyLoss" | "NLLLoss" => &["weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"],
        _ => &[],
    }
}

pub fn construct(interp: &mut Interp, st: State, kind: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    match kind {
        "Sequential" | "ModuleList" | "ModuleDict" => {
            let ck = match kind {
                "Sequential" => ContainerKind::Sequential,
                "ModuleList" => ContainerKind::ModuleList,
                _ => ContainerKind::ModuleDict,
            };
            let items: Option<Vec<(Option<Rc<str>>, Value)>> = match (ck, args.as_slice()) {
                (ContainerKind::Sequential, [Value::Ref(id)]) if matches!(st.get(*id), Obj::Dict(_)) => match st.get(*id) {
                    Obj::Dict(d) => d.iter().map(|(k, v)| k.as_str().map(|k| (Some(Rc::from(k)), v.clone()))).collect(),
                    _ => None,
                },
                (ContainerKind::Sequential, _) => Some(args.iter().map(|a| (None, a.clone())).collect()),
                (_, []) => Some(Vec::new()),
                (ContainerKind::ModuleList, [it]) => interp.iterate(&mut st, it, span).map(|v| v.into_iter().map(|x| (None, x)).collect()),
                (ContainerKind::ModuleDict, [Value::Ref(id)]) => match st.get(*id) {
                    Obj::Dict(d) => d.iter().map(|(k, v)| k.as_str().map(|k| (Some(Rc::from(k)), v.clone()))).collect(),
                    _ => None,
                },
                _ => None,
            };
            let Some(items) = items else { return vec![(st, Value::Unknown)] };
            let id = st.alloc(Obj::Container { kind: ck, items, attrs: BTreeMap::new() });
            vec![(st, Value::Ref(id))]
        }
        "Module" | "Parameter" | "ParameterList" | "ParameterDict" | "DataParallel" | "DistributedDataParallel" => {
            if kind == "Parameter" {
                return vec![(st, args.into_iter().next().unwrap_or(Value::Unknown))];
            }
            if kind == "DataParallel" || kind == "DistributedDataParallel" {
                return vec![(st, args.into_iter().next().unwrap_or(Value::Unknown))];
            }
            vec![(st, Value::Unknown)]
        }
        _ => {
            let sig = signature(kind);
            let bound = bind(sig, &args, &kwargs);
            let mut amap: BTreeMap<Rc<str>, Value> = bound.into_iter().map(|(k, v)| (Rc::from(k), v)).collect();
            // keyword arguments outside the table are kept too (e.g. `batch_first`)
            for (k, v) in &kwargs {
                amap.entry(k.clone()).or_insert_with(|| v.clone());
            }
            // construction-time preconditions
            if matches!(kind, "Conv1d" | "Conv2d" | "Conv3d") {
                let ic = amap.get("in_channels").and_then(|v| v.as_int().cloned());
                let g = amap.get("groups").and_then(|v| v.as_int().cloned());
                if let (Some(ic), Some(g)) = (ic, g) {
                    if let Some(rem) = ic.modulo(&g) {
                        let violated = match rem.as_const() {
                            Some(0) => Formula::Const(false),
                            Some(_) => Formula::Const(true),
                            None => Formula::cmp(&rem, Rel::Ne, &Poly::constant(0)),
                        };
                        let (a, b) = (ic.display(&interp.syms), g.display(&interp.syms));
                        if !interp.check(&st, span, violated, &r::invalid_shape_argument::RULE, |_| {
                            (format!("{kind}: in_channels={a} must be divisible by groups={b}"), Vec::new())
                        }) {
                            return Vec::new();
                        }
                    }
                }
            }
            if kind == "GroupNorm" {
                let g = amap.get("num_groups").and_then(|v| v.as_const_int());
                let c = amap.get("num_channels").and_then(|v| v.as_const_int());
                if let (Some(g), Some(c)) = (g, c) {
                    if g > 0 && !interp.check(&st, span, Tri::from_bool(c % g != 0), &r::invalid_shape_argument::RULE, |_| {
                        (format!("GroupNorm: num_channels ({c}) must be divisible by num_groups ({g})"), Vec::new())
                    }) {
                        return Vec::new();
                    }
                }
            }
            let heads = match kind {
                "MultiheadAttention" => Some(("embed_dim", "num_heads")),
                "TransformerEncoderLayer" | "TransformerDecoderLayer" => Some(("d_model", "nhead")),
                _ => None,
            };
            if let Some((e, h)) = heads {
                let ev = amap.get(e).and_then(|v| v.as_int().cloned());
                let hv = amap.get(h).and_then(|v| v.as_int().cloned());
                if let (Some(ev), Some(hv)) = (ev, hv) {
                    if let (Some(a), Some(b)) = (ev.as_const(), hv.as_const()) {
                        if b > 0 {
                            if !interp.check(&st, span, Tri::from_bool(a % b != 0), &r::invalid_shape_argument::RULE, |_| {
                                (format!("{kind}: {e}={a} must be divisible by {h}={b}"), Vec::new())
                            }) {
                                return Vec::new();
                            }
                        }
                    }
                }
            }
            let label = interp.label().map(|n| Rc::from(format!("{n} (line {})", interp.line(span))));
            let id = st.alloc(Obj::Layer(Layer { kind: Rc::from(kind), args: amap, attrs: BTreeMap::new(), label, span }));
            vec![(st, Value::Ref(id))]
        }
    }
}

pub fn parameter(_interp: &mut Interp, _st: &State, l: &Layer, name: &str) -> Option<Value> {
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).map(|p| Dim::known(p.clone(), None));
    match (&*l.kind, name) {
        ("Linear", "weight") => Some(tensor_value(Shape::known(vec![int("out_features")?, int("in_features")?]), Some(DType::Float))),
        ("Linear", "bias") => Some(tensor_value(Shape::known(vec![int("out_features")?]), Some(DType::Float))),
        _ => None,
    }
}

fn layer_name(l: &Layer) -> String {
    match &l.label {
        Some(lbl) => format!("{lbl}: "),
        None => String::new(),
    }
}

/// Tuple-or-int argument of a conv/pool layer, expanded to `n` values.
fn ntuple(v: Option<&Value>, n: usize, default: i128) -> Option<Vec<Poly>> {
    match v {
        None | Some(Value::None) => Some(vec![Poly::constant(default); n]),
        Some(Value::Int(p)) => Some(vec![p.clone(); n]),
        Some(Value::Bool(b)) => Some(vec![Poly::constant(*b as i128); n]),
        Some(Value::Tuple(t)) if t.len() == n => t.iter().map(|x| x.as_int().cloned()).collect(),
        _ => None,
    }
}

/// Names of the dims of a batched input with `n` spatial dims.
fn spatial_names(n: usize) -> &'static [&'static str] {
    match n {
        1 => &["N", "C", "L"],
        2 => &["N", "C", "H", "W"],
        _ => &["N", "C", "D", "H", "W"],
    }
}

/// Make sure a tensor's rank is one of `ranks`, refining an unknown-rank input by this first
/// use: each allowed rank becomes a path (an opaque choice when there are several), with the
/// dims `fixed` (aligned right) set to what the layer expects and the others fresh.
#[allow(clippy::too_many_arguments)]
fn require_rank(interp: &mut Interp, st: State, t: &Tensor, ranks: &[usize], names: &[&str], fixed: &[(usize, Option<Poly>)], span: Span, rule_msg: &str) -> Vec<(State, Shape)> {
    let s = st.resolve(&t.shape);
    match s.rank() {
        Some(r) => {
            let shown = interp.show_shape(&st, &s);
            let want: Vec<String> = ranks.iter().map(|r| format!("{r}-D")).collect();
            let want = want.join(" or ");
            if !interp.check(&st, span, Tri::from_bool(!ranks.contains(&r)), &r::layer_input_rank_mismatch::RULE, |_| {
                (format!("{rule_msg}expected {want} input, got {r}-D input {shown}"), Vec::new())
            }) {
                return Vec::new();
            }
            vec![(st, s)]
        }
        None => {
            let var = s.prefix.unwrap();
            // the batched (higher) rank first: its report is preferred when both fail
            let options: Vec<usize> = ranks.iter().rev().copied().filter(|r| *r >= s.dims.len()).collect();
            let mut out = Vec::new();
            for (k, r) in options.iter().enumerate() {
                let mut st2 = st.clone();
                if options.len() > 1 {
                    st2.branches.push(Branch::Assume(span, k as u32, options.len() as u32));
                    st2.tainted = true;
                }
                let n_new = r - s.dims.len();
                let mut dims = Vec::new();
                for i in 0..n_new {
                    // index from the right in the full shape
                    let from_right = r - i;
                    let fixed_v = fixed.iter().find(|(fr, _)| *fr == from_right).and_then(|(_, v)| v.clone());
                    // conventional names, right-aligned (`[N, C, H, W]`: unbatched `[C, H, W]`)
                    let name = names.len().checked_sub(from_right).map(|k| names[k]).unwrap_or("L");
                    dims.push(match fixed_v {
                        Some(v) => Dim::known(v, None),
                        None => interp.fresh_dim(name),
                    });
                }
                st2.bind_shape(var, Shape::known(dims));
                let resolved = st2.resolve(&t.shape);
                out.push((st2, resolved));
            }
            out
        }
    }
}

pub fn call_layer(interp: &mut Interp, st: State, l: &Layer, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let kind: &str = &l.kind;
    let x = args.first().cloned().or_else(|| kwargs.first().map(|(_, v)| v.clone())).unwrap_or(Value::Unknown);
    let Value::Tensor(t) = &x else {
        return vec![(st, Value::Unknown)];
    };
    let t = t.clone();
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    let who = layer_name(l);
    match kind {
        "Linear" => {
            let (Some(inf), outf) = (int("in_features"), int("out_features")) else { return vec![(st, Value::Unknown)] };
            linear(interp, st, &t, &inf, outf, l, span)
        }
        "Conv1d" | "Conv2d" | "Conv3d" => {
            let n = (kind.as_bytes()[4] - b'0') as usize;
            conv(interp, st, &t, l, n, span)
        }
        "ConvTranspose1d" | "ConvTranspose2d" | "ConvTranspose3d" => {
            if args.len() > 1 || !kwargs.is_empty() {
                return vec![(st, Value::Unknown)]; // output_size=...
            }
            let n = (kind.as_bytes()[kind.len() - 2] - b'0') as usize;
            conv(interp, st, &t, l, n, span)
        }
        "MaxPool1d" | "MaxPool2d" | "MaxPool3d" | "AvgPool1d" | "AvgPool2d" | "AvgPool3d" => {
            let n = (kind.as_bytes()[kind.len() - 2] - b'0') as usize;
            let is_max = kind.starts_with("Max");
            let k = l.args.get("kernel_size").cloned();
            let s = l.args.get("stride").cloned();
            let p = l.args.get("padding").cloned();
            let d = if is_max { l.args.get("dilation").cloned() } else { None };
            let ceil = matches!(l.args.get("ceil_mode"), Some(Value::Bool(true)));
            if l.args.get("ceil_mode").is_some() && !matches!(l.args.get("ceil_mode"), Some(Value::Bool(_))) {
                return vec![(st, Value::Unknown)];
            }
            pool(interp, st, &t, n, k.as_ref(), s.as_ref(), p.as_ref(), d.as_ref(), ceil, &who, kind, span)
        }
        "AdaptiveAvgPool1d" | "AdaptiveAvgPool2d" | "AdaptiveAvgPool3d" | "AdaptiveMaxPool1d" | "AdaptiveMaxPool2d" | "AdaptiveMaxPool3d" => {
            let n = (kind.as_bytes()[kind.len() - 2] - b'0') as usize;
            let Some(outs) = l.args.get("output_size") else { return vec![(st, Value::Unknown)] };
            adaptive(interp, st, &t, n, outs, &who, kind, span)
        }
        "BatchNorm1d" | "BatchNorm2d" | "BatchNorm3d" => {
            let ranks: &[usize] = match kind {
                "BatchNorm1d" => &[2, 3],
                "BatchNorm2d" => &[4],
                _ => &[5],
            };
            let Some(nf) = int("num_features") else { return vec![(st, Value::Unknown)] };
            let mut out = Vec::new();
            for (st, s) in require_rank(interp, st, &t, ranks, &["N", "C", "D", "H", "W"][5 - ranks.iter().copied().max().unwrap_or(2).min(5)..], &[], span, &format!("{who}{kind}: ")) {
                // channels at dim 1; refine the fresh channel dim by this first use
                let c = s.dims[1].clone();
                if !interp.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &c, &nf, Vec::new(), |shown, cs, ns| {
                    format!("{who}{kind}(num_features={ns}) got input {shown} with {cs} channels")
                }) {
                    continue;
                }
                out.push((st, tensor_value(s, t.dtype)));
            }
            out
        }
        "GroupNorm" => {
            let Some(c) = int("num_channels") else { return vec![(st, Value::Unknown)] };
            let s = st.resolve(&t.shape);
            if s.prefix.is_some() || s.dims.len() < 2 {
                return vec![(st, Value::Unknown)];
            }
            let got = s.dims[1].clone();
            if !interp.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &got, &c, Vec::new(), |shown, ds, cs| {
                format!("{who}GroupNorm(num_channels={cs}) got input {shown} with {ds} channels")
            }) {
                return Vec::new();
            }
            vec![(st, Value::Tensor(t))]
        }
        "InstanceNorm1d" | "InstanceNorm2d" | "InstanceNorm3d" => {
            // (a channel mismatch only warns when affine=False)
            let n = (kind.as_bytes()[kind.len() - 2] - b'0') as usize;
            let mut out = Vec::new();
            for (st, s) in require_rank(interp, st, &t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{who}{kind}: ")) {
                out.push((st, tensor_value(s, t.dtype)));
            }
            out
        }
        "TransformerEncoderLayer" | "TransformerDecoderLayer" | "MultiheadAttention" => {
            let key = if kind == "MultiheadAttention" { "embed_dim" } else { "d_model" };
            let Some(e) = int(key) else { return vec![(st, Value::Unknown)] };
            if kind == "MultiheadAttention" && (l.args.contains_key("kdim") || l.args.contains_key("vdim")) {
                return vec![(st, Value::Unknown)];
            }
            let s = st.resolve(&t.shape);
            let Some(last) = s.dims.last().cloned() else { return vec![(st, Value::Unknown)] };
            if !interp.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &last, &e, Vec::new(), |shown, ls, es| {
                format!("{who}{kind}({key}={es}) got input {shown} whose last dim is {ls}")
            }) {
                return Vec::new();
            }
            let y = Value::Tensor(t.clone());
            if kind == "MultiheadAttention" {
                return vec![(st, Value::Tuple(Rc::new(vec![y, Value::Unknown])))];
            }
            vec![(st, y)]
        }
        "TransformerEncoder" | "TransformerDecoder" => match l.args.get("encoder_layer") {
            Some(layer @ Value::Ref(_)) => interp.call(layer.clone(), args, kwargs, st, span),
            _ => vec![(st, Value::Unknown)],
        },
        "Upsample" => {
            let size = l.args.get("size").cloned();
            let scale = l.args.get("scale_factor").cloned();
            super::tensor::interpolate(interp, st, &t, size.as_ref(), scale.as_ref())
        }
        "LayerNorm" | "RMSNorm" => {
            let ns: Option<Vec<Poly>> = match l.args.get("normalized_shape") {
                Some(Value::Int(p)) => Some(vec![p.clone()]),
                Some(Value::Tuple(items)) => items.iter().map(|v| v.as_int().cloned()).collect(),
                Some(Value::Ref(id)) => match st.get(*id) {
                    Obj::List(items) => items.iter().map(|v| v.as_int().cloned()).collect(),
                    _ => None,
                },
                _ => None,
            };
            let Some(ns) = ns else { return vec![(st, Value::Unknown)] };
            let mut st = st;
            let mut s = st.resolve(&t.shape);
            if s.prefix.is_some() && s.dims.len() < ns.len() {
                // first use: the trailing dims are the normalized shape
                let var = s.prefix.unwrap();
                let rest = interp.fresh_shape_var();
                let mut dims: Vec<Dim> = ns[..ns.len() - s.dims.len()].iter().map(|p| Dim::known(p.clone(), None)).collect();
                dims.truncate(ns.len() - s.dims.len());
                st.bind_shape(var, Shape { prefix: Some(rest), dims });
                s = st.resolve(&t.shape);
            }
            if s.dims.len() < ns.len() {
                let shown = interp.show_shape(&st, &s);
                interp.check(&st, span, Tri::True, &r::layer_channel_mismatch::RULE, |_| (format!("{who}{kind}: input {shown} has fewer dims than normalized_shape"), Vec::new()));
                return Vec::new();
            }
            let tail = &s.dims[s.dims.len() - ns.len()..];
            for (d, n) in tail.iter().zip(ns.iter()) {
                let eq = interp.dim_eq_f(d, &Dim::known(n.clone(), None));
                let shown = interp.show_shape(&st, &s);
                let nshow: Vec<String> = ns.iter().map(|p| p.display(&interp.syms)).collect();
                let nshow = nshow.join(", ");
                if !interp.check(&st, span, eq.not(), &r::layer_channel_mismatch::RULE, |_| {
                    (format!("{who}{kind}(normalized_shape=[{nshow}]) got input {shown}"), Vec::new())
                }) {
                    return Vec::new();
                }
            }
            vec![(st, tensor_value(t.shape.clone(), t.dtype))]
        }
        "Flatten" => {
            let sd = l.args.get("start_dim").and_then(|v| v.as_const_int()).unwrap_or(1);
            let ed = l.args.get("end_dim").and_then(|v| v.as_const_int()).unwrap_or(-1);
            flatten(interp, st, &t, sd, ed, span, "nn.Flatten")
        }
        "Softmax" | "LogSoftmax" | "Softmin" => {
            let s = st.resolve(&t.shape);
            if let Some(d) = l.args.get("dim").and_then(|v| v.as_const_int()) {
                if check_dim(interp, &st, &s, d, span, kind) == Some(usize::MAX) {
                    return Vec::new();
                }
            }
            vec![(st, Value::Tensor(t))]
        }
        "ReLU" | "ReLU6" | "GELU" | "Tanh" | "Sigmoid" | "LeakyReLU" | "ELU" | "SELU" | "SiLU" | "Mish" | "Hardswish" | "Hardsigmoid"
        | "PReLU" | "Softplus" | "Identity" | "Dropout" | "Dropout1d" | "Dropout2d" | "Dropout3d" | "AlphaDropout" | "Hardtanh"
        | "LogSigmoid" | "Tanhshrink" | "Softsign" | "CELU" | "GLU" => {
            if kind == "GLU" {
                return vec![(st, Value::Unknown)];
            }
            vec![(st, Value::Tensor(t))]
        }
        k if super::losses::is_loss(k) => {
            let target = args.get(1).cloned().or_else(|| kwargs.iter().find(|(k, _)| &**k == "target").map(|(_, v)| v.clone())).unwrap_or(Value::Unknown);
            let red = l.args.get("reduction").cloned();
            super::losses::call_loss(interp, st, k, &x, &target, red.as_ref(), &who, span)
        }
        "LSTM" | "GRU" | "RNN" => rnn(interp, st, &t, l, args.get(1), span),
        "EmbeddingBag" => {
            // 2-D input [B, N]: one bag per row -> [B, dim]; 1-D input needs offsets
            let Some(dim) = int("embedding_dim") else { return vec![(st, Value::Unknown)] };
            let s = st.resolve(&t.shape);
            if s.rank() != Some(2) || args.len() > 1 || !kwargs.is_empty() {
                return vec![(st, Value::Unknown)];
            }
            let why = l.label.clone().map(|lbl| Rc::from(format!("embedding_dim of {lbl}")));
            vec![(st, tensor_value(Shape::known(vec![s.dims[0].clone(), Dim { v: Some(dim), why }]), Some(DType::Float)))]
        }
        "Embedding" => {
            let Some(dim) = int("embedding_dim") else { return vec![(st, Value::Unknown)] };
            let s = st.resolve(&t.shape);
            let mut dims = s.dims.clone();
            dims.push(Dim::known(dim, l.label.clone().map(|lbl| Rc::from(format!("embedding_dim of {lbl}")))));
            vec![(st, tensor_value(Shape { prefix: s.prefix, dims }, Some(DType::Float)))]
        }
        _ => vec![(st, Value::Unknown)],
    }
}

fn linear(interp: &mut Interp, st: State, t: &Tensor, inf: &Poly, outf: Option<Poly>, l: &Layer, span: Span) -> Vals {
    let mut st = st;
    let mut s = st.resolve(&t.shape);
    if s.dims.is_empty() {
        match s.prefix {
            Some(var) => {
                // first use: the input's last dim is in_features
                let rest = interp.fresh_shape_var();
                st.bind_shape(var, Shape { prefix: Some(rest), dims: vec![Dim::known(inf.clone(), None)] });
                s = st.resolve(&t.shape);
            }
            None => {
                let who = layer_name(l);
                interp.check(&st, span, Tri::True, &r::layer_input_rank_mismatch::RULE, |_| (format!("{who}Linear got a 0-D input"), Vec::new()));
                return Vec::new();
            }
        }
    }
    let last = s.dims.last().unwrap().clone();
    let who = layer_name(l);
    let extra = l.label.iter().map(|lbl| format!("{lbl} expects in_features={}", inf.display(&interp.syms))).collect();
    if !interp.expect_dim(&st, span, &r::matmul_shape_mismatch::RULE, &s, &last, inf, extra, |shown, ls, is| {
        format!("{who}input {shown} does not fit Linear(in_features={is}): last dim {ls} != {is}")
    }) {
        return Vec::new();
    }
    let mut dims = s.dims.clone();
    let why = l.label.clone().map(|lbl| Rc::from(format!("out_features of {lbl}")));
    *dims.last_mut().unwrap() = Dim { v: outf, why };
    vec![(st, tensor_value(Shape { prefix: s.prefix, dims }, t.dtype))]
}

/// `out = (in + 2*pad - dil*(k-1) - 1) // stride + 1` (ceil when `ceil`).
fn conv_out(size: &Poly, k: &Poly, s: &Poly, p: &Poly, d: &Poly, ceil: bool) -> Option<Poly> {
    let eff = d.mul(&k.add_const(-1)?)?.add_const(1)?;
    let num = size.add(&p.mul(&Poly::constant(2))?)?.sub(&eff)?;
    let num = if ceil { num.add(&s.add_const(-1)?)? } else { num };
    num.floordiv(s)?.add_const(1)
}

/// `out = (in - 1)*stride - 2*pad + dil*(k-1) + output_padding + 1`.
fn conv_transpose_out(size: &Poly, k: &Poly, s: &Poly, p: &Poly, d: &Poly, op: &Poly) -> Option<Poly> {
    size.add_const(-1)?.mul(s)?.sub(&p.mul(&Poly::constant(2))?)?.add(&d.mul(&k.add_const(-1)?)?)?.add(op)?.add_const(1)
}

fn check_spatial(interp: &mut Interp, st: &State, out: &[Option<Poly>], inp: &[Dim], who: &str, kind: &str, span: Span) -> bool {
    for o in out {
        let Some(o) = o else { continue };
        let violated = Formula::cmp(o, Rel::Lt, &Poly::constant(1));
        let os = o.display(&interp.syms);
        let ins: Vec<String> = inp.iter().map(|d| interp.show_dim(d)).collect();
        let outs: Vec<String> = out.iter().map(|o| o.as_ref().map(|p| p.display(&interp.syms)).unwrap_or("?".into())).collect();
        let (ins, outs) = (ins.join("x"), outs.join("x"));
        if !interp.check(st, span, violated, &r::output_size_too_small::RULE, |_| {
            (format!("{who}{kind}: input size {ins} gives output size {outs}, which is too small ({os} < 1)"), Vec::new())
        }) {
            return false;
        }
    }
    true
}

fn conv(interp: &mut Interp, st: State, t: &Tensor, l: &Layer, n: usize, span: Span) -> Vals {
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    let Some(ic) = int("in_channels") else { return vec![(st, Value::Unknown)] };
    let oc = int("out_channels");
    let Some(k) = ntuple(l.args.get("kernel_size"), n, 1) else { return vec![(st, Value::Unknown)] };
    let Some(s) = ntuple(l.args.get("stride"), n, 1) else { return vec![(st, Value::Unknown)] };
    let Some(d) = ntuple(l.args.get("dilation"), n, 1) else { return vec![(st, Value::Unknown)] };
    let same_pad = matches!(l.args.get("padding"), Some(Value::Str(Some(p))) if &**p == "same");
    let valid_pad = matches!(l.args.get("padding"), Some(Value::Str(Some(p))) if &**p == "valid");
    let p = if same_pad || valid_pad { Some(vec![Poly::constant(0); n]) } else { ntuple(l.args.get("padding"), n, 0) };
    let Some(p) = p else { return vec![(st, Value::Unknown)] };
    let kind = l.kind.to_string();
    let transposed = kind.starts_with("ConvTranspose");
    let op = if transposed { ntuple(l.args.get("output_padding"), n, 0) } else { Some(vec![Poly::constant(0); n]) };
    let Some(op) = op else { return vec![(st, Value::Unknown)] };
    if transposed && (same_pad || valid_pad) {
        return vec![(st, Value::Unknown)];
    }
    let who = layer_name(l);
    let mut out = Vec::new();
    let fixed = [(n + 1, Some(ic.clone()))];
    for (st, sh) in require_rank(interp, st, t, &[n + 1, n + 2], spatial_names(n), &fixed, span, &format!("{who}{kind}: ")) {
        let r = sh.dims.len();
        let c = sh.dims[r - n - 1].clone();
        if !interp.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &sh, &c, &ic, Vec::new(), |shown, cs, is| {
            format!("{who}{kind}(in_channels={is}) got input {shown} with {cs} channels")
        }) {
            continue;
        }
        let spatial = &sh.dims[r - n..];
        let outs: Vec<Option<Poly>> = (0..n)
            .map(|i| {
                if same_pad {
                    return spatial[i].v.clone();
                }
                if transposed {
                    return conv_transpose_out(spatial[i].v.as_ref()?, &k[i], &s[i], &p[i], &d[i], &op[i]);
                }
                conv_out(spatial[i].v.as_ref()?, &k[i], &s[i], &p[i], &d[i], false)
            })
            .collect();
        // A transposed conv may produce an empty (size 0) output; a negative size fails in a
        // backend-specific way: not reported, the size is unknown.
        let outs: Vec<Option<Poly>> = if transposed {
            outs.into_iter().map(|o| o.filter(|p| p.as_const().is_none_or(|c| c >= 0))).collect()
        } else {
            outs
        };
        if !transposed && !check_spatial(interp, &st, &outs, spatial, &who, &kind, span) {
            continue;
        }
        let mut dims = sh.dims[..r - n - 1].to_vec();
        let why = l.label.clone().map(|lbl| Rc::from(format!("out_channels of {lbl}")));
        dims.push(Dim { v: oc.clone(), why });
        dims.extend(outs.into_iter().map(|o| Dim { v: o, why: None }));
        out.push((st, tensor_value(Shape::known(dims), t.dtype)));
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn pool(interp: &mut Interp, st: State, t: &Tensor, n: usize, k: Option<&Value>, s: Option<&Value>, p: Option<&Value>, d: Option<&Value>, ceil: bool, who: &str, kind: &str, span: Span) -> Vals {
    let Some(k) = ntuple(k, n, 1) else { return vec![(st, Value::Unknown)] };
    let s = match s {
        None | Some(Value::None) => Some(k.clone()),
        Some(v) => ntuple(Some(v), n, 1),
    };
    let Some(s) = s else { return vec![(st, Value::Unknown)] };
    let Some(p) = ntuple(p, n, 0) else { return vec![(st, Value::Unknown)] };
    let Some(d) = ntuple(d, n, 1) else { return vec![(st, Value::Unknown)] };
    let mut out = Vec::new();
    for (st, sh) in require_rank(interp, st, t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{who}{kind}: ")) {
        let r = sh.dims.len();
        let spatial = &sh.dims[r - n..];
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
        if !check_spatial(interp, &st, &outs, spatial, who, kind, span) {
            continue;
        }
        let mut dims = sh.dims[..r - n].to_vec();
        dims.extend(outs.into_iter().map(|o| Dim { v: o, why: None }));
        out.push((st, tensor_value(Shape::known(dims), t.dtype)));
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn adaptive(interp: &mut Interp, st: State, t: &Tensor, n: usize, outs: &Value, who: &str, kind: &str, span: Span) -> Vals {
    let sizes: Option<Vec<Option<Poly>>> = match outs {
        Value::Int(p) => Some(vec![Some(p.clone()); n]),
        Value::Tuple(items) if items.len() == n => Some(items.iter().map(|v| v.as_int().cloned()).collect()),
        _ => None,
    };
    let Some(sizes) = sizes else { return vec![(st, Value::Unknown)] };
    let mut out = Vec::new();
    for (st, sh) in require_rank(interp, st, t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{who}{kind}: ")) {
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

/// `torch.nn.functional.*`
pub fn functional(interp: &mut Interp, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let x = args.first().cloned().unwrap_or(Value::Unknown);
    let Value::Tensor(t) = &x else { return vec![(st, Value::Unknown)] };
    let t = t.clone();
    if let Some(v) = super::losses::functional_loss(interp, st.clone(), f, &args, &kwargs, span) {
        return v;
    }
    match f {
        "relu" | "relu6" | "gelu" | "silu" | "elu" | "selu" | "leaky_relu" | "sigmoid" | "tanh" | "dropout" | "dropout1d" | "dropout2d"
        | "dropout3d" | "hardswish" | "mish" | "softplus" | "normalize" | "relu_" | "leaky_relu_" | "hardtanh" | "logsigmoid" => {
            vec![(st, Value::Tensor(t))]
        }
        "softmax" | "log_softmax" | "softmin" => {
            let b = bind(&["input", "dim"], &args, &kwargs);
            let s = st.resolve(&t.shape);
            if let Some(d) = b.get("dim").and_then(|v| v.as_const_int()) {
                if check_dim(interp, &st, &s, d, span, f) == Some(usize::MAX) {
                    return Vec::new();
                }
            }
            vec![(st, Value::Tensor(t))]
        }
        "interpolate" | "upsample" => {
            let b = bind(&["input", "size", "scale_factor"], &args, &kwargs);
            super::tensor::interpolate(interp, st, &t, b.get("size"), b.get("scale_factor"))
        }
        "pad" => {
            let b = bind(&["input", "pad"], &args, &kwargs);
            let Some(p) = b.get("pad").and_then(|p| match p {
                Value::Tuple(items) => items.iter().map(|v| v.as_const_int()).collect::<Option<Vec<i128>>>(),
                _ => None,
            }) else {
                return vec![(st, Value::Unknown)];
            };
            let s = st.resolve(&t.shape);
            if s.prefix.is_some() || p.len() % 2 != 0 || p.len() / 2 > s.dims.len() {
                return vec![(st, Value::Unknown)];
            }
            let mut dims = s.dims.clone();
            let n = dims.len();
            for (k, pair) in p.chunks(2).enumerate() {
                let d = &mut dims[n - 1 - k];
                d.v = d.v.as_ref().and_then(|v| v.add_const(pair[0] + pair[1]));
                d.why = None;
            }
            if dims.iter().any(|d| d.as_const().is_some_and(|c| c < 0)) {
                return vec![(st, Value::Unknown)];
            }
            vec![(st, tensor_value(Shape::known(dims), t.dtype))]
        }
        "linear" => match args.get(1).or(kwargs.iter().find(|(k, _)| &**k == "weight").map(|(_, v)| v)) {
            Some(Value::Tensor(w)) => {
                let ws = st.resolve(&w.shape);
                if ws.rank() != Some(2) {
                    return vec![(st, Value::Unknown)];
                }
                let (Some(inf), outf) = (ws.dims[1].v.clone(), ws.dims[0].v.clone()) else { return vec![(st, Value::Unknown)] };
                let l = Layer { kind: Rc::from("Linear"), args: BTreeMap::new(), attrs: BTreeMap::new(), label: None, span };
                linear(interp, st, &t, &inf, outf, &l, span)
            }
            _ => vec![(st, Value::Unknown)],
        },
        "max_pool1d" | "max_pool2d" | "max_pool3d" | "avg_pool1d" | "avg_pool2d" | "avg_pool3d" => {
            let n = (f.as_bytes()[f.len() - 2] - b'0') as usize;
            let is_max = f.starts_with("max");
            let names: &[&str] = if is_max {
                &["input", "kernel_size", "stride", "padding", "dilation", "ceil_mode"]
            } else {
                &["input", "kernel_size", "stride", "padding", "ceil_mode"]
            };
            let b = bind(names, &args, &kwargs);
            let ceil = matches!(b.get("ceil_mode"), Some(Value::Bool(true)));
            if b.get("ceil_mode").is_some() && !matches!(b.get("ceil_mode"), Some(Value::Bool(_))) {
                return vec![(st, Value::Unknown)];
            }
            let kind = if is_max { format!("MaxPool{n}d") } else { format!("AvgPool{n}d") };
            pool(interp, st, &t, n, b.get("kernel_size"), b.get("stride"), b.get("padding"), b.get("dilation"), ceil, "", &format!("F.{f} ({kind})"), span)
        }
        "adaptive_avg_pool1d" | "adaptive_avg_pool2d" | "adaptive_avg_pool3d" | "adaptive_max_pool1d" | "adaptive_max_pool2d" | "adaptive_max_pool3d" => {
            let n = (f.as_bytes()[f.len() - 2] - b'0') as usize;
            let b = bind(&["input", "output_size"], &args, &kwargs);
            let Some(o) = b.get("output_size") else { return vec![(st, Value::Unknown)] };
            adaptive(interp, st, &t, n, o, "", &format!("F.{f}"), span)
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// `nn.RNN/GRU/LSTM`: input `[L, N, H_in]` (`[N, L, H_in]` with batch_first) or unbatched
/// `[L, H_in]`; output `[.., D*H_out]` and the final state `[D*num_layers, N, H_out]`.
fn rnn(interp: &mut Interp, st: State, t: &Tensor, l: &Layer, h0: Option<&Value>, span: Span) -> Vals {
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
    let (Some(input_size), Some(hidden)) = (int("input_size"), int("hidden_size")) else { return vec![(st, Value::Unknown)] };
    let layers = match l.args.get("num_layers") {
        None => Some(crate::shape::Poly::constant(1)),
        Some(v) => v.as_int().cloned(),
    };
    let flag = |k: &str| match l.args.get(k) {
        None => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    let (Some(layers), Some(batch_first), Some(bidir)) = (layers, flag("batch_first"), flag("bidirectional")) else { return vec![(st, Value::Unknown)] };
    if l.args.get("proj_size").is_some() {
        return vec![(st, Value::Unknown)];
    }
    // an initial state is not checked yet (LSTM's is a tuple); the outputs do not depend on it
    let _ = h0;
    let kind = l.kind.to_string();
    let who = layer_name(l);
    let d = if bidir { 2 } else { 1 };
    let mut out = Vec::new();
    let fixed = [(1usize, Some(input_size.clone()))];
    for (st, s) in require_rank(interp, st, t, &[2, 3], if batch_first { &["B", "T", "F"] } else { &["T", "B", "F"] }, &fixed, span, &format!("{who}{kind}: ")) {
        let r = s.dims.len();
        let feat = s.dims[r - 1].clone();
        if !interp.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &feat, &input_size, Vec::new(), |shown, fs, is| {
            format!("{who}{kind}(input_size={is}) got input {shown} whose last dim is {fs}")
        }) {
            continue;
        }
        let hid_out = hidden.mul(&crate::shape::Poly::constant(d));
        let why = l.label.clone().map(|lbl| Rc::from(format!("hidden_size of {lbl}")));
        let mut odims = s.dims[..r - 1].to_vec();
        odims.push(Dim { v: hid_out, why: why.clone() });
        let nl = layers.mul(&crate::shape::Poly::constant(d));
        let state_dims = if r == 3 {
            let n = if batch_first { s.dims[0].clone() } else { s.dims[1].clone() };
            vec![Dim { v: nl, why: None }, n, Dim { v: Some(hidden.clone()), why: why.clone() }]
        } else {
            vec![Dim { v: nl, why: None }, Dim { v: Some(hidden.clone()), why: why.clone() }]
        };
        let o = tensor_value(Shape::known(odims), t.dtype);
        let h = tensor_value(Shape::known(state_dims.clone()), t.dtype);
        let hstate = if kind == "LSTM" { Value::Tuple(Rc::new(vec![h.clone(), tensor_value(Shape::known(state_dims), t.dtype)])) } else { h };
        out.push((st, Value::Tuple(Rc::new(vec![o, hstate]))));
    }
    out
}
