//! `torch.nn` modules (construction and call) and their `torch.nn.functional` twins.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::models::bind;
use super::tensor::{check_dim, flatten, tensor_value};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::value::*;
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
        "Unflatten" => &["dim", "unflattened_size"],
        "ZeroPad1d" | "ZeroPad2d" | "ZeroPad3d" | "ReflectionPad1d" | "ReflectionPad2d" | "ReflectionPad3d" | "ReplicationPad1d" | "ReplicationPad2d"
        | "ReplicationPad3d" | "CircularPad1d" | "CircularPad2d" | "CircularPad3d" => &["padding"],
        "ConstantPad1d" | "ConstantPad2d" | "ConstantPad3d" => &["padding", "value"],
        "PixelShuffle" => &["upscale_factor"],
        "PixelUnshuffle" => &["downscale_factor"],
        "PReLU" => &["num_parameters", "init"],
        "GLU" => &["dim"],
        "Softmax" | "LogSoftmax" | "Softmin" => &["dim"],
        "MSELoss" | "L1Loss" | "BCELoss" => &["size_average", "reduce", "reduction"],
        "BCEWithLogitsLoss" => &["weight", "size_average", "reduce", "reduction", "pos_weight"],
        "SmoothL1Loss" | "HuberLoss" | "SoftMarginLoss" => &["size_average", "reduce", "reduction"],
        "KLDivLoss" => &["size_average", "reduce", "reduction", "log_target"],
        "CosineEmbeddingLoss" | "MarginRankingLoss" => &["margin", "size_average", "reduce", "reduction"],
        "TripletMarginLoss" => &["margin", "p", "eps", "swap", "size_average", "reduce", "reduction"],
        "CTCLoss" => &["blank", "reduction", "zero_infinity"],
        "Dropout" | "Dropout1d" | "Dropout2d" | "Dropout3d" | "AlphaDropout" => &["p", "inplace"],
        "LSTM" | "GRU" => &["input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional", "proj_size"],
        "RNN" => &["input_size", "hidden_size", "num_layers", "nonlinearity", "bias", "batch_first", "dropout", "bidirectional"],
        "LSTMCell" | "GRUCell" | "RNNCell" => &["input_size", "hidden_size", "bias"],
        "MultiheadAttention" => &["embed_dim", "num_heads", "dropout", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim", "batch_first"],
        "TransformerEncoderLayer" | "TransformerDecoderLayer" => &["d_model", "nhead", "dim_feedforward", "dropout"],
        "Transformer" => &["d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward", "dropout"],
        "TransformerEncoder" | "TransformerDecoder" => &["encoder_layer", "num_layers", "norm"],
        "Upsample" => &["size", "scale_factor", "mode", "align_corners"],
        "CrossEntropyLoss" | "NLLLoss" => &["weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"],
        _ => &[],
    }
}

pub fn construct(cx: &mut dyn ModelCtx, st: State, kind: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
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
                (ContainerKind::ModuleList, [it]) => cx.iterate(&mut st, it, span).map(|v| v.into_iter().map(|x| (None, x)).collect()),
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
            if kind.starts_with("Conv") && !conv_construct_checks(cx, &st, kind, &amap, span) {
                return Vec::new();
            }
            if matches!(kind, "LSTM" | "GRU" | "RNN") && !super::recurrent::construct_checks(cx, &st, kind, &amap, span) {
                return Vec::new();
            }
            if kind == "GroupNorm" {
                let g = amap.get("num_groups").and_then(|v| v.as_const_int());
                let c = amap.get("num_channels").and_then(|v| v.as_const_int());
                if let (Some(g), Some(c)) = (g, c)
                    && g > 0 && !cx.check(&st, span, Tri::from_bool(c % g != 0), &r::invalid_shape_argument::RULE, |_| {
                        (format!("GroupNorm: num_channels ({c}) must be divisible by num_groups ({g})"), Vec::new())
                    }) {
                        return Vec::new();
                    }
            }
            let heads = match kind {
                "MultiheadAttention" => Some(("embed_dim", "num_heads")),
                "TransformerEncoderLayer" | "TransformerDecoderLayer" | "Transformer" => Some(("d_model", "nhead")),
                _ => None,
            };
            if let Some((e, h)) = heads {
                let ev = amap.get(e).and_then(|v| v.as_int().cloned());
                let hv = amap.get(h).and_then(|v| v.as_int().cloned());
                if let (Some(ev), Some(hv)) = (ev, hv)
                    && let (Some(a), Some(b)) = (ev.as_const(), hv.as_const())
                        && b > 0
                            && !cx.check(&st, span, Tri::from_bool(a % b != 0), &r::invalid_shape_argument::RULE, |_| {
                                (format!("{kind}: {e}={a} must be divisible by {h}={b}"), Vec::new())
                            }) {
                                return Vec::new();
                            }
            }
            let label = cx.label().map(|n| Rc::from(format!("{n} (line {})", cx.line(span))));
            let id = st.alloc(Obj::Layer(Layer { kind: Rc::from(kind), args: amap, attrs: BTreeMap::new(), label, span }));
            vec![(st, Value::Ref(id))]
        }
    }
}

pub fn parameter(_cx: &mut dyn ModelCtx, _st: &State, l: &Layer, name: &str) -> Option<Value> {
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).map(|p| Dim::known(p.clone(), None));
    match (&*l.kind, name) {
        ("Linear", "weight") => Some(tensor_value(Shape::known(vec![int("out_features")?, int("in_features")?]), Some(DType::Float))),
        ("Linear", "bias") => Some(tensor_value(Shape::known(vec![int("out_features")?]), Some(DType::Float))),
        _ => None,
    }
}

pub(super) fn layer_name(l: &Layer) -> String {
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
pub(super) fn require_rank(cx: &mut dyn ModelCtx, st: State, t: &Tensor, ranks: &[usize], names: &[&str], fixed: &[(usize, Option<Poly>)], span: Span, rule_msg: &str) -> Vec<(State, Shape)> {
    let s = st.resolve(&t.shape);
    match s.rank() {
        Some(r) => {
            let shown = cx.show_shape(&st, &s);
            let want: Vec<String> = ranks.iter().map(|r| format!("{r}-D")).collect();
            let want = want.join(" or ");
            if !cx.check(&st, span, Tri::from_bool(!ranks.contains(&r)), &r::layer_input_rank_mismatch::RULE, |_| {
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
            let alternatives = cx.assume(&st, span, options.len());
            for (r, mut st2) in options.iter().zip(alternatives) {
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
                        None => cx.fresh_dim(name),
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

pub fn call_layer(cx: &mut dyn ModelCtx, st: State, l: &Layer, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
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
            linear(cx, st, &t, &inf, outf, l, span)
        }
        "Conv1d" | "Conv2d" | "Conv3d" => {
            let n = (kind.as_bytes()[4] - b'0') as usize;
            conv(cx, st, &t, l, n, span)
        }
        "ConvTranspose1d" | "ConvTranspose2d" | "ConvTranspose3d" => {
            if args.len() > 1 || !kwargs.is_empty() {
                return vec![(st, Value::Unknown)]; // output_size=...
            }
            let n = (kind.as_bytes()[kind.len() - 2] - b'0') as usize;
            conv(cx, st, &t, l, n, span)
        }
        "MaxPool1d" | "MaxPool2d" | "MaxPool3d" | "AvgPool1d" | "AvgPool2d" | "AvgPool3d" => {
            let n = (kind.as_bytes()[kind.len() - 2] - b'0') as usize;
            let is_max = kind.starts_with("Max");
            let k = l.args.get("kernel_size").cloned();
            let s = l.args.get("stride").cloned();
            let p = l.args.get("padding").cloned();
            let d = if is_max { l.args.get("dilation").cloned() } else { None };
            let ceil = matches!(l.args.get("ceil_mode"), Some(Value::Bool(true)));
            if l.args.contains_key("ceil_mode") && !matches!(l.args.get("ceil_mode"), Some(Value::Bool(_))) {
                return vec![(st, Value::Unknown)];
            }
            pool(cx, st, &t, n, k.as_ref(), s.as_ref(), p.as_ref(), d.as_ref(), ceil, &who, kind, span)
        }
        "AdaptiveAvgPool1d" | "AdaptiveAvgPool2d" | "AdaptiveAvgPool3d" | "AdaptiveMaxPool1d" | "AdaptiveMaxPool2d" | "AdaptiveMaxPool3d" => {
            let n = (kind.as_bytes()[kind.len() - 2] - b'0') as usize;
            let Some(outs) = l.args.get("output_size") else { return vec![(st, Value::Unknown)] };
            adaptive(cx, st, &t, n, outs, &who, kind, span)
        }
        "BatchNorm1d" | "BatchNorm2d" | "BatchNorm3d" => {
            let ranks: &[usize] = match kind {
                "BatchNorm1d" => &[2, 3],
                "BatchNorm2d" => &[4],
                _ => &[5],
            };
            let Some(nf) = int("num_features") else { return vec![(st, Value::Unknown)] };
            // a module built in this very expression is in training mode
            let training = is_fresh(l, span);
            let mut out = Vec::new();
            for (st, s) in require_rank(cx, st, &t, ranks, &["N", "C", "D", "H", "W"][5 - ranks.iter().copied().max().unwrap_or(2).min(5)..], &[], span, &format!("{who}{kind}: ")) {
                // channels at dim 1; refine the fresh channel dim by this first use
                let c = s.dims[1].clone();
                if !cx.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &c, &nf, Vec::new(), |shown, cs, ns| {
                    format!("{who}{kind}(num_features={ns}) got input {shown} with {cs} channels")
                }) {
                    continue;
                }
                if training && !batch_stats_check(cx, &st, &s, span, &format!("{who}{kind}")) {
                    continue;
                }
                out.push((st, tensor_value(s, t.dtype)));
            }
            out
        }
        "GroupNorm" => {
            let Some(c) = int("num_channels") else { return vec![(st, Value::Unknown)] };
            let Some(g) = int("num_groups") else { return vec![(st, Value::Unknown)] };
            group_norm(cx, st, &t, &g, Some(&c), &format!("{who}GroupNorm"), span)
        }
        "InstanceNorm1d" | "InstanceNorm2d" | "InstanceNorm3d" => {
            // (a channel mismatch only warns when affine=False)
            let n = (kind.as_bytes()[kind.len() - 2] - b'0') as usize;
            let flag = |k: &str| matches!(l.args.get(k), Some(Value::Bool(true)));
            let affine = flag("affine");
            // instance statistics are used unless running stats are tracked (then: in training)
            let input_stats = if matches!(l.args.get("track_running_stats"), None | Some(Value::Bool(false))) {
                true
            } else {
                is_fresh(l, span)
            };
            let nf = int("num_features");
            let mut out = Vec::new();
            for (st, s) in require_rank(cx, st, &t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{who}{kind}: ")) {
                let r = s.dims.len();
                if affine {
                    let (Some(nf), c) = (nf.as_ref(), s.dims[r - n - 1].clone()) else { continue };
                    if !cx.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &c, nf, Vec::new(), |shown, cs, ns| {
                        format!("{who}{kind}(num_features={ns}, affine=True) got input {shown} with {cs} channels")
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
        "MultiheadAttention" => super::attention::mha(cx, st, l, &args, &kwargs, span),
        "TransformerEncoderLayer" => super::attention::encoder_layer(cx, st, l, &args, &kwargs, span),
        "TransformerDecoderLayer" => super::attention::decoder_layer(cx, st, l, &args, &kwargs, span),
        "Transformer" => super::attention::transformer(cx, st, l, &args, &kwargs, span),
        "TransformerEncoder" | "TransformerDecoder" => match l.args.get("encoder_layer").or(l.args.get("decoder_layer")) {
            Some(layer @ Value::Ref(_)) => cx.call(layer.clone(), args, kwargs, st, span),
            _ => vec![(st, Value::Unknown)],
        },
        "Upsample" => {
            if l.args.contains_key("align_corners") {
                return vec![(st, Value::Unknown)];
            }
            super::resample::interpolate(cx, st, &t, l.args.get("size"), l.args.get("scale_factor"), l.args.get("mode"), &format!("{who}Upsample"), span)
        }
        k if k.contains("Pad") && k.ends_with('d') && !k.starts_with("Max") => {
            let n = (k.as_bytes()[k.len() - 2] - b'0') as usize;
            let Some(p) = super::resample::module_padding(l.args.get("padding"), n) else { return vec![(st, Value::Unknown)] };
            let mode = if k.starts_with("Reflection") {
                "reflect"
            } else if k.starts_with("Replication") {
                "replicate"
            } else if k.starts_with("Circular") {
                "circular"
            } else {
                "constant"
            };
            super::resample::pad(cx, st, &t, &p, mode, &format!("{who}{k}"), span)
        }
        "PixelShuffle" | "PixelUnshuffle" => {
            let key = if kind == "PixelShuffle" { "upscale_factor" } else { "downscale_factor" };
            let Some(f) = l.args.get(key).cloned() else { return vec![(st, Value::Unknown)] };
            super::resample::pixel_shuffle(cx, st, &t, &f, kind == "PixelUnshuffle", &format!("{who}{kind}"), span)
        }
        "Unflatten" => {
            let (Some(d), Some(sizes)) = (l.args.get("dim").and_then(|v| v.as_const_int()), l.args.get("unflattened_size").cloned()) else { return vec![(st, Value::Unknown)] };
            unflatten(cx, st, &t, d, &sizes, &format!("{who}Unflatten"), span)
        }
        "Bilinear" => {
            let (Some(i1), Some(i2), o) = (int("in1_features"), int("in2_features"), int("out_features")) else { return vec![(st, Value::Unknown)] };
            let Some(Value::Tensor(x2)) = args.get(1) else { return vec![(st, Value::Unknown)] };
            bilinear(cx, st, &t, x2, &i1, &i2, o, &format!("{who}Bilinear"), span)
        }
        "PReLU" => {
            let n = match l.args.get("num_parameters") {
                None => Some(1),
                Some(v) => v.as_const_int(),
            };
            let Some(n) = n else { return vec![(st, Value::Unknown)] };
            let s = st.resolve(&t.shape);
            let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
            if n != 1 {
                let shown = cx.show_shape(&st, &s);
                if !cx.check(&st, span, Tri::from_bool(rank == 0), &r::layer_input_rank_mismatch::RULE, |_| (format!("{who}PReLU({n}) got a 0-D input"), Vec::new())) {
                    return Vec::new();
                }
                let c = if rank >= 2 { s.dims[1].clone() } else { Dim::konst(1) };
                if !cx.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &c, &Poly::constant(n), Vec::new(), |_, cs, ns| {
                    format!("{who}PReLU(num_parameters={ns}) got input {shown} with {cs} channels")
                }) {
                    return Vec::new();
                }
            }
            vec![(st, Value::Tensor(t))]
        }
        "GLU" => {
            let d = match l.args.get("dim") {
                None => Some(-1),
                Some(v) => v.as_const_int(),
            };
            let Some(d) = d else { return vec![(st, Value::Unknown)] };
            glu(cx, st, &t, d, &format!("{who}GLU"), span)
        }
        "Dropout1d" => {
            let mut out = Vec::new();
            for (st, s) in require_rank(cx, st, &t, &[2, 3], &["N", "C", "L"], &[], span, &format!("{who}Dropout1d: ")) {
                out.push((st, tensor_value(s, t.dtype)));
            }
            out
        }
        "LayerNorm" | "RMSNorm" => {
            let ns: Option<Vec<Poly>> = normalized_shape(&st, l.args.get("normalized_shape"));
            let Some(ns) = ns else { return vec![(st, Value::Unknown)] };
            layer_norm(cx, st, &t, &ns, &format!("{who}{kind}"), span)
        }
        "Flatten" => {
            let sd = l.args.get("start_dim").and_then(|v| v.as_const_int()).unwrap_or(1);
            let ed = l.args.get("end_dim").and_then(|v| v.as_const_int()).unwrap_or(-1);
            flatten(cx, st, &t, sd, ed, span, "nn.Flatten")
        }
        "Softmax" | "LogSoftmax" | "Softmin" => {
            let s = st.resolve(&t.shape);
            if let Some(d) = l.args.get("dim").and_then(|v| v.as_const_int())
                && check_dim(cx, &st, &s, d, span, kind) == Some(usize::MAX) {
                    return Vec::new();
                }
            vec![(st, Value::Tensor(t))]
        }
        "ReLU" | "ReLU6" | "GELU" | "Tanh" | "Sigmoid" | "LeakyReLU" | "ELU" | "SELU" | "SiLU" | "Mish" | "Hardswish" | "Hardsigmoid"
        | "Softplus" | "Identity" | "Dropout" | "Dropout2d" | "Dropout3d" | "AlphaDropout" | "FeatureAlphaDropout" | "Hardtanh"
        | "LogSigmoid" | "Tanhshrink" | "Softsign" | "CELU" | "Hardshrink" | "Softshrink" | "Threshold" | "RReLU" => vec![(st, Value::Tensor(t))],
        k if super::losses::is_loss(k) => {
            let red = l.args.get("reduction").cloned();
            super::losses::call_loss_args(cx, st, k, &args, &kwargs, red.as_ref(), &who, span)
        }
        "LSTM" | "GRU" | "RNN" => super::recurrent::rnn(cx, st, &t, l, args.get(1), span),
        "LSTMCell" | "GRUCell" | "RNNCell" => super::recurrent::cell(cx, st, &t, l, args.get(1), span),
        "EmbeddingBag" => {
            let Some(dim) = int("embedding_dim") else { return vec![(st, Value::Unknown)] };
            if args.len() > 1 || !kwargs.is_empty() {
                return vec![(st, Value::Unknown)];
            }
            let why = l.label.clone().map(|lbl| Rc::from(format!("embedding_dim of {lbl}")));
            embedding_bag(cx, st, &t, Dim { v: Some(dim), why }, Some(DType::Float), &format!("{who}EmbeddingBag"), span)
        }
        "Embedding" => {
            let Some(dim) = int("embedding_dim") else { return vec![(st, Value::Unknown)] };
            let why = l.label.clone().map(|lbl| Rc::from(format!("embedding_dim of {lbl}")));
            embedding(cx, st, &t, Dim { v: Some(dim), why }, Some(DType::Float), &format!("{who}Embedding"), span)
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// Was this layer built inside the expression that calls it (`nn.BatchNorm1d(4)(x)`)? Then it
/// is certainly in training mode.
pub(super) fn is_fresh(l: &Layer, span: Span) -> bool {
    l.span.start >= span.start && l.span.end <= span.end && l.span != span
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
    let shown = cx.show_shape(st, s);
    cx.check(st, span, Tri::from_bool(p == 1), &r::invalid_shape_argument::RULE, |_| {
        (format!("{what}: expected more than 1 value per channel when training, got input {shown}"), Vec::new())
    })
}

/// Instance statistics need more than one spatial element.
fn spatial_stats_check(cx: &mut dyn ModelCtx, st: &State, spatial: &[Dim], s: &Shape, span: Span, what: &str) -> bool {
    let Some(p) = const_product(spatial) else { return true };
    let shown = cx.show_shape(st, s);
    cx.check(st, span, Tri::from_bool(p == 1), &r::invalid_shape_argument::RULE, |_| {
        (format!("{what}: expected more than 1 spatial element when training, got input {shown}"), Vec::new())
    })
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

/// Layer norm: the input's trailing dims must be `ns`.
/// `who`: the module's label and kind (`ln (line 5): LayerNorm`), for messages.
fn layer_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, ns: &[Poly], who: &str, span: Span) -> Vals {
    let mut st = st;
    let mut s = st.resolve(&t.shape);
    if s.prefix.is_some() && s.dims.len() < ns.len() {
        // first use: the trailing dims are the normalized shape
        let var = s.prefix.unwrap();
        let rest = cx.fresh_shape_var();
        let dims: Vec<Dim> = ns[..ns.len() - s.dims.len()].iter().map(|p| Dim::known(p.clone(), None)).collect();
        st.bind_shape(var, Shape { prefix: Some(rest), dims });
        s = st.resolve(&t.shape);
    }
    let nshow: Vec<String> = ns.iter().map(|p| p.display(cx.syms())).collect();
    let nshow = nshow.join(", ");
    if s.dims.len() < ns.len() {
        let shown = cx.show_shape(&st, &s);
        cx.check(&st, span, Tri::True, &r::layer_channel_mismatch::RULE, |_| (format!("{who}(normalized_shape=[{nshow}]): input {shown} has fewer dims than normalized_shape"), Vec::new()));
        return Vec::new();
    }
    let tail = &s.dims[s.dims.len() - ns.len()..];
    for (d, n) in tail.iter().zip(ns.iter()) {
        let eq = cx.dim_eq_f(d, &Dim::known(n.clone(), None));
        let shown = cx.show_shape(&st, &s);
        if !cx.check(&st, span, eq.not(), &r::layer_channel_mismatch::RULE, |_| {
            (format!("{who}(normalized_shape=[{nshow}]) got input {shown}"), Vec::new())
        }) {
            return Vec::new();
        }
    }
    vec![(st, tensor_value(t.shape.clone(), t.dtype))]
}

/// Group norm: at least 2-D, channels (`c` when given) divisible by the groups, and more than
/// one value per group.
fn group_norm(cx: &mut dyn ModelCtx, st: State, t: &Tensor, g: &Poly, c: Option<&Poly>, what: &str, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    let Some(r) = s.rank() else { return vec![(st, Value::Unknown)] };
    let shown = cx.show_shape(&st, &s);
    if !cx.check(&st, span, Tri::from_bool(r < 2), &r::layer_input_rank_mismatch::RULE, |_| (format!("{what}: expected at least 2-D input, got {shown}"), Vec::new())) {
        return Vec::new();
    }
    let got = s.dims[1].clone();
    if let Some(c) = c
        && !cx.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &got, c, Vec::new(), |shown, ds, cs| format!("{what}(num_channels={cs}) got input {shown} with {ds} channels")) {
            return Vec::new();
        }
    if let (Some(n), Some(ch), Some(gc)) = (s.dims[0].as_const(), got.as_const(), g.as_const())
        && gc > 0 {
            let mut dims = vec![Dim::konst(n * ch / gc)];
            dims.extend(s.dims[2..].iter().cloned());
            if let Some(p) = const_product(&dims)
                && !cx.check(&st, span, Tri::from_bool(p == 1), &r::invalid_shape_argument::RULE, |_| (format!("{what}: expected more than 1 value per group, got input {shown}"), Vec::new())) {
                    return Vec::new();
                }
            if !cx.check(&st, span, Tri::from_bool(ch % gc != 0), &r::layer_channel_mismatch::RULE, |_| (format!("{what}: {ch} channels of input {shown} are not divisible by num_groups={gc}"), Vec::new())) {
                return Vec::new();
            }
        }
    vec![(st, tensor_value(t.shape.clone(), t.dtype))]
}

fn linear(cx: &mut dyn ModelCtx, st: State, t: &Tensor, inf: &Poly, outf: Option<Poly>, l: &Layer, span: Span) -> Vals {
    let mut st = st;
    let mut s = st.resolve(&t.shape);
    if s.dims.is_empty() {
        match s.prefix {
            Some(var) => {
                // first use: the input's last dim is in_features
                let rest = cx.fresh_shape_var();
                st.bind_shape(var, Shape { prefix: Some(rest), dims: vec![Dim::known(inf.clone(), None)] });
                s = st.resolve(&t.shape);
            }
            None => {
                let who = layer_name(l);
                cx.check(&st, span, Tri::True, &r::layer_input_rank_mismatch::RULE, |_| (format!("{who}Linear got a 0-D input"), Vec::new()));
                return Vec::new();
            }
        }
    }
    let last = s.dims.last().unwrap().clone();
    let who = layer_name(l);
    let extra = l.label.iter().map(|lbl| format!("{lbl} expects in_features={}", inf.display(cx.syms()))).collect();
    if !cx.expect_dim(&st, span, &r::matmul_shape_mismatch::RULE, &s, &last, inf, extra, |shown, ls, is| {
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

/// A transposed conv's output sizes must not be negative.
fn check_nonnegative(cx: &mut dyn ModelCtx, st: &State, out: &[Option<Poly>], inp: &[Dim], what: &str, span: Span) -> bool {
    for o in out.iter().flatten() {
        let violated = Formula::cmp(o, Rel::Lt, &Poly::constant(0));
        let os = o.display(cx.syms());
        let ins: Vec<String> = inp.iter().map(|d| cx.show_dim(d)).collect();
        let ins = ins.join("x");
        if !cx.check(st, span, violated, &r::output_size_too_small::RULE, |_| (format!("{what}: input size {ins} gives a negative output size {os}"), Vec::new())) {
            return false;
        }
    }
    true
}

fn check_spatial(cx: &mut dyn ModelCtx, st: &State, out: &[Option<Poly>], inp: &[Dim], what: &str, span: Span) -> bool {
    for o in out {
        let Some(o) = o else { continue };
        let violated = Formula::cmp(o, Rel::Lt, &Poly::constant(1));
        let os = o.display(cx.syms());
        let ins: Vec<String> = inp.iter().map(|d| cx.show_dim(d)).collect();
        let outs: Vec<String> = out.iter().map(|o| o.as_ref().map(|p| p.display(cx.syms())).unwrap_or("?".into())).collect();
        let (ins, outs) = (ins.join("x"), outs.join("x"));
        if !cx.check(st, span, violated, &r::output_size_too_small::RULE, |_| {
            (format!("{what}: input size {ins} gives output size {outs}, which is too small ({os} < 1)"), Vec::new())
        }) {
            return false;
        }
    }
    true
}

/// A convolution's configuration, from a module's arguments or an `F.conv*` call.
struct ConvCfg {
    /// Input channels the weight expects.
    ic: Poly,
    oc: Option<Poly>,
    k: Vec<Poly>,
    s: Vec<Poly>,
    p: Vec<Poly>,
    d: Vec<Poly>,
    op: Vec<Poly>,
    same: bool,
    transposed: bool,
    /// "out_channels of conv1 (line 3)", for traces.
    why: Option<Rc<str>>,
}

impl ConvCfg {
    /// From an `nn.Conv*`/`nn.ConvTranspose*` layer's arguments.
    fn from_layer(l: &Layer, n: usize) -> Option<ConvCfg> {
        let int = |k: &str| l.args.get(k).and_then(|v| v.as_int()).cloned();
        let transposed = l.kind.starts_with("ConvTranspose");
        let (same, p) = conv_padding(l.args.get("padding"), n)?;
        if transposed && l.args.get("padding").is_some_and(|v| matches!(v, Value::Str(_))) {
            return None;
        }
        Some(ConvCfg {
            ic: int("in_channels")?,
            oc: int("out_channels"),
            k: ntuple(l.args.get("kernel_size"), n, 1)?,
            s: ntuple(l.args.get("stride"), n, 1)?,
            p,
            d: ntuple(l.args.get("dilation"), n, 1)?,
            op: if transposed { ntuple(l.args.get("output_padding"), n, 0)? } else { vec![Poly::constant(0); n] },
            same,
            transposed,
            why: l.label.clone().map(|lbl| Rc::from(format!("out_channels of {lbl}"))),
        })
    }
}

/// `padding=`: an int or tuple, `'valid'` (0) or `'same'` (the flag).
fn conv_padding(v: Option<&Value>, n: usize) -> Option<(bool, Vec<Poly>)> {
    match v {
        Some(Value::Str(Some(p))) if &**p == "same" => Some((true, vec![Poly::constant(0); n])),
        Some(Value::Str(Some(p))) if &**p == "valid" => Some((false, vec![Poly::constant(0); n])),
        Some(Value::Str(_)) => None,
        v => Some((false, ntuple(v, n, 0)?)),
    }
}

/// Check `a % b == 0` for constant ints; false when the path ends (torch raises).
#[allow(clippy::too_many_arguments)]
pub(super) fn check_divisible(cx: &mut dyn ModelCtx, st: &State, span: Span, a: &Poly, b: &Poly, rule: &'static crate::rules::Rule, msg: impl FnOnce(String, String) -> String) -> bool {
    if b.as_const().is_some_and(|y| y <= 0) {
        return true;
    }
    // a symbolic remainder is a formula the facts (or the solver) may decide
    let Some(rem) = a.modulo(b) else { return true };
    let violated = match rem.as_const() {
        Some(c) => Formula::Const(c != 0),
        None => Formula::cmp(&rem, Rel::Ne, &Poly::constant(0)),
    };
    let (x, y) = (a.display(cx.syms()), b.display(cx.syms()));
    cx.check(st, span, violated, rule, |_| (msg(x, y), Vec::new()))
}

/// Construction-time checks of a conv layer: channels divisible by groups, `'same'` padding
/// only without stride, `proj_size` etc. Returns false when torch raises.
fn conv_construct_checks(cx: &mut dyn ModelCtx, st: &State, kind: &str, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    let int = |k: &str| amap.get(k).and_then(|v| v.as_int()).cloned();
    if let Some(g) = int("groups") {
        for key in ["in_channels", "out_channels"] {
            if let Some(c) = int(key)
                && !check_divisible(cx, st, span, &c, &g, &r::invalid_shape_argument::RULE, |c, g| format!("{kind}: {key}={c} must be divisible by groups={g}")) {
                    return false;
                }
        }
    }
    if !kind.starts_with("ConvTranspose") && matches!(amap.get("padding"), Some(Value::Str(Some(p))) if &**p == "same") {
        let n = (kind.as_bytes()[4] - b'0') as usize;
        if let Some(s) = ntuple(amap.get("stride"), n, 1) {
            let strided = s.iter().any(|x| x.as_const().is_some_and(|c| c != 1));
            if !cx.check(st, span, Tri::from_bool(strided), &r::invalid_shape_argument::RULE, |_| {
                (format!("{kind}: padding='same' is not supported for strided convolutions"), Vec::new())
            }) {
                return false;
            }
        }
    }
    true
}

fn conv(cx: &mut dyn ModelCtx, st: State, t: &Tensor, l: &Layer, n: usize, span: Span) -> Vals {
    let Some(cfg) = ConvCfg::from_layer(l, n) else { return vec![(st, Value::Unknown)] };
    let who = layer_name(l);
    conv_with(cx, st, t, &cfg, n, &format!("{who}{}", l.kind), span)
}

/// The output of a convolution with `cfg` on `t`; `what` names it in messages.
fn conv_with(cx: &mut dyn ModelCtx, st: State, t: &Tensor, cfg: &ConvCfg, n: usize, what: &str, span: Span) -> Vals {
    let ConvCfg { ic, k, s, p, d, op, .. } = cfg;
    if cfg.transposed {
        // output_padding must be smaller than either stride or dilation
        for i in 0..n {
            let (Some(o), Some(sv), Some(dv)) = (op[i].as_const(), s[i].as_const(), d[i].as_const()) else { continue };
            if !cx.check(&st, span, Tri::from_bool(o >= sv.max(dv)), &r::invalid_shape_argument::RULE, |_| {
                (format!("{what}: output_padding={o} must be smaller than either stride={sv} or dilation={dv}"), Vec::new())
            }) {
                return Vec::new();
            }
        }
    }
    let mut out = Vec::new();
    let fixed = [(n + 1, Some(ic.clone()))];
    for (st, sh) in require_rank(cx, st, t, &[n + 1, n + 2], spatial_names(n), &fixed, span, &format!("{what}: ")) {
        let r = sh.dims.len();
        let c = sh.dims[r - n - 1].clone();
        if !cx.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &sh, &c, ic, Vec::new(), |shown, cs, is| {
            format!("{what}(in_channels={is}) got input {shown} with {cs} channels")
        }) {
            continue;
        }
        let spatial = &sh.dims[r - n..];
        let outs: Vec<Option<Poly>> = (0..n)
            .map(|i| {
                if cfg.same {
                    return spatial[i].v.clone();
                }
                if cfg.transposed {
                    return conv_transpose_out(spatial[i].v.as_ref()?, &k[i], &s[i], &p[i], &d[i], &op[i]);
                }
                conv_out(spatial[i].v.as_ref()?, &k[i], &s[i], &p[i], &d[i], false)
            })
            .collect();
        // a transposed conv of output size 0 fails or not depending on the backend: unknown
        let outs: Vec<Option<Poly>> = if cfg.transposed {
            if !check_nonnegative(cx, &st, &outs, spatial, what, span) {
                continue;
            }
            outs.into_iter().map(|o| o.filter(|p| p.as_const() != Some(0))).collect()
        } else {
            if !check_spatial(cx, &st, &outs, spatial, what, span) {
                continue;
            }
            outs
        };
        let mut dims = sh.dims[..r - n - 1].to_vec();
        dims.push(Dim { v: cfg.oc.clone(), why: cfg.why.clone() });
        dims.extend(outs.into_iter().map(|o| Dim { v: o, why: None }));
        out.push((st, tensor_value(Shape::known(dims), t.dtype)));
    }
    out
}

/// `F.conv{n}d(input, weight, bias, stride, padding, dilation, groups)` and
/// `F.conv_transpose{n}d(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
fn functional_conv(cx: &mut dyn ModelCtx, st: State, t: &Tensor, f: &str, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Vals {
    let transposed = f.starts_with("conv_transpose");
    let n = (f.as_bytes()[f.len() - 2] - b'0') as usize;
    let names: &[&str] = if transposed {
        &["input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"]
    } else {
        &["input", "weight", "bias", "stride", "padding", "dilation", "groups"]
    };
    let b = bind(names, args, kwargs);
    let Some(Value::Tensor(w)) = b.get("weight") else { return vec![(st, Value::Unknown)] };
    let ws = st.resolve(&w.shape);
    let what = format!("F.{f}");
    if ws.rank() != Some(n + 2) {
        let bad = Tri::from_bool(ws.rank().is_some());
        cx.check(&st, span, bad, &r::layer_input_rank_mismatch::RULE, |_| (format!("{what}: weight must be {}-D", n + 2), Vec::new()));
        return if bad == Tri::True { Vec::new() } else { vec![(st, Value::Unknown)] };
    }
    let groups = match b.get("groups") {
        None => Some(Poly::constant(1)),
        Some(v) => v.as_int().cloned(),
    };
    let (Some(groups), Some(w0), Some(w1)) = (groups, ws.dims[0].v.clone(), ws.dims[1].v.clone()) else { return vec![(st, Value::Unknown)] };
    let Some((same, p)) = conv_padding(b.get("padding"), n) else { return vec![(st, Value::Unknown)] };
    let (Some(k), Some(s), Some(d)) = (ws.dims[2..].iter().map(|d| d.v.clone()).collect::<Option<Vec<Poly>>>(), ntuple(b.get("stride"), n, 1), ntuple(b.get("dilation"), n, 1)) else {
        return vec![(st, Value::Unknown)];
    };
    let op = if transposed { ntuple(b.get("output_padding"), n, 0) } else { Some(vec![Poly::constant(0); n]) };
    let Some(op) = op else { return vec![(st, Value::Unknown)] };
    if transposed && same {
        return vec![(st, Value::Unknown)];
    }
    if same {
        let strided = s.iter().any(|x| x.as_const().is_some_and(|c| c != 1));
        if !cx.check(&st, span, Tri::from_bool(strided), &r::invalid_shape_argument::RULE, |_| {
            (format!("{what}: padding='same' is not supported for strided convolutions"), Vec::new())
        }) {
            return Vec::new();
        }
    }
    // weight [out, in/groups, k...] (transposed: [in, out/groups, k...])
    let (ic, oc) = if transposed { (w0.clone(), w1.mul(&groups)) } else { (w1.mul(&groups).unwrap_or(w1.clone()), Some(w0.clone())) };
    if !check_divisible(cx, &st, span, &w0, &groups, &r::invalid_shape_argument::RULE, |a, g| format!("{what}: weight dim 0 ({a}) must be divisible by groups={g}")) {
        return Vec::new();
    }
    let cfg = ConvCfg { ic, oc, k, s, p, d, op, same, transposed, why: None };
    conv_with(cx, st, t, &cfg, n, &what, span)
}

#[allow(clippy::too_many_arguments)]
fn pool(cx: &mut dyn ModelCtx, st: State, t: &Tensor, n: usize, k: Option<&Value>, s: Option<&Value>, p: Option<&Value>, d: Option<&Value>, ceil: bool, who: &str, kind: &str, span: Span) -> Vals {
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
        if !cx.check(&st, span, Tri::from_bool(pc > kc / 2), &r::invalid_shape_argument::RULE, |_| {
            (format!("{who}{kind}: padding={pc} should be at most half of kernel_size={kc}"), Vec::new())
        }) {
            return Vec::new();
        }
    }
    let mut out = Vec::new();
    for (st, sh) in require_rank(cx, st, t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{who}{kind}: ")) {
        let r = sh.dims.len();
        let spatial = &sh.dims[r - n..];
        if n == 3 && kind.contains("Avg") || kind.contains("avg_pool3d") {
            // avg_pool3d: each input size at least the kernel size (padding aside)
            let small = spatial.iter().zip(&k).any(|(d, kk)| d.as_const().zip(kk.as_const()).is_some_and(|(a, b)| a < b));
            let shown = cx.show_shape(&st, &sh);
            if !cx.check(&st, span, Tri::from_bool(small), &r::output_size_too_small::RULE, |_| (format!("{who}{kind}: input {shown} is smaller than the kernel size"), Vec::new())) {
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
        if !check_spatial(cx, &st, &outs, spatial, &format!("{who}{kind}"), span) {
            continue;
        }
        let mut dims = sh.dims[..r - n].to_vec();
        dims.extend(outs.into_iter().map(|o| Dim { v: o, why: None }));
        out.push((st, tensor_value(Shape::known(dims), t.dtype)));
    }
    out
}

/// Adaptive pools: the spatial dims become `outs` (`None` keeps a size). Average pools with an
/// all-ones output take torch's `mean` shortcut, which accepts any rank >= n (>= n + 1 when
/// the output size is a tuple, checked in Python for the 2-D and 3-D pools).
#[allow(clippy::too_many_arguments)]
fn adaptive(cx: &mut dyn ModelCtx, st: State, t: &Tensor, n: usize, outs: &Value, who: &str, kind: &str, span: Span) -> Vals {
    let sizes: Option<Vec<Option<Poly>>> = match outs {
        Value::Int(p) => Some(vec![Some(p.clone()); n]),
        Value::Tuple(items) if items.len() == n => items.iter().map(|v| if matches!(v, Value::None) { Some(None) } else { v.as_int().cloned().map(Some) }).collect(),
        _ => None,
    };
    let Some(sizes) = sizes else { return vec![(st, Value::Unknown)] };
    let is_avg = kind.contains("Avg") || kind.contains("avg");
    let tuple = matches!(outs, Value::Tuple(_)) && n > 1;
    let s = st.resolve(&t.shape);
    let rank = s.rank();
    if tuple
        && let Some(r) = rank {
            let shown = cx.show_shape(&st, &s);
            if !cx.check(&st, span, Tri::from_bool(r <= n), &r::layer_input_rank_mismatch::RULE, |_| {
                (format!("{who}{kind}: input {shown} should have at least {} dims", n + 1), Vec::new())
            }) {
                return Vec::new();
            }
        }
    let ones = sizes.iter().all(|o| o.as_ref().is_some_and(|p| p.as_const() == Some(1)));
    if is_avg && ones && n > 1 {
        let Some(r) = rank else { return vec![(st, Value::Unknown)] };
        let shown = cx.show_shape(&st, &s);
        if !cx.check(&st, span, Tri::from_bool(r < n), &r::layer_input_rank_mismatch::RULE, |_| {
            (format!("{who}{kind}: input {shown} has fewer than {n} dims"), Vec::new())
        }) {
            return Vec::new();
        }
        let mut dims = s.dims[..r - n].to_vec();
        dims.extend((0..n).map(|_| Dim::konst(1)));
        return vec![(st, tensor_value(Shape::known(dims), t.dtype))];
    }
    let mut out = Vec::new();
    for (st, sh) in require_rank(cx, st, t, &[n + 1, n + 2], spatial_names(n), &[], span, &format!("{who}{kind}: ")) {
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
pub fn functional(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let x = args.first().cloned().unwrap_or(Value::Unknown);
    let Value::Tensor(t) = &x else { return vec![(st, Value::Unknown)] };
    let t = t.clone();
    if let Some(v) = super::losses::functional_loss(cx, st.clone(), f, &args, &kwargs, span) {
        return v;
    }
    match f {
        "relu" | "relu6" | "gelu" | "silu" | "elu" | "selu" | "leaky_relu" | "sigmoid" | "tanh" | "dropout" | "dropout2d" | "dropout3d"
        | "hardswish" | "mish" | "softplus" | "relu_" | "leaky_relu_" | "hardtanh" | "logsigmoid" | "hardsigmoid" | "softsign" | "tanhshrink"
        | "celu" | "alpha_dropout" | "feature_alpha_dropout" | "hardshrink" | "softshrink" | "elu_" | "hardtanh_" | "rrelu" | "threshold" => {
            vec![(st, Value::Tensor(t))]
        }
        "dropout1d" => {
            let mut out = Vec::new();
            for (st, s) in require_rank(cx, st, &t, &[2, 3], &["N", "C", "L"], &[], span, "F.dropout1d: ") {
                out.push((st, tensor_value(s, t.dtype)));
            }
            out
        }
        "normalize" => {
            let b = bind(&["input", "p", "dim"], &args, &kwargs);
            let d = match b.get("dim") {
                None => Some(1),
                Some(v) => v.as_const_int(),
            };
            let s = st.resolve(&t.shape);
            if let Some(d) = d
                && check_dim(cx, &st, &s, d, span, "F.normalize") == Some(usize::MAX) {
                    return Vec::new();
                }
            vec![(st, Value::Tensor(t))]
        }
        "glu" => {
            let b = bind(&["input", "dim"], &args, &kwargs);
            let d = match b.get("dim") {
                None => Some(-1),
                Some(v) => v.as_const_int(),
            };
            let Some(d) = d else { return vec![(st, Value::Unknown)] };
            glu(cx, st, &t, d, "F.glu", span)
        }
        "pad" => super::resample::functional_pad(cx, st, &t, &args, &kwargs, span),
        "pixel_shuffle" | "pixel_unshuffle" => {
            let b = bind(&["input", "factor"], &args, &kwargs);
            let f2 = kwargs.iter().find(|(k, _)| k.ends_with("scale_factor")).map(|(_, v)| v.clone());
            let Some(fac) = b.get("factor").cloned().or(f2) else { return vec![(st, Value::Unknown)] };
            super::resample::pixel_shuffle(cx, st, &t, &fac, f == "pixel_unshuffle", &format!("F.{f}"), span)
        }
        "embedding" => {
            let b = bind(&["input", "weight"], &args, &kwargs);
            let Some(Value::Tensor(w)) = b.get("weight") else { return vec![(st, Value::Unknown)] };
            let ws = st.resolve(&w.shape);
            if ws.rank() != Some(2) {
                return vec![(st, Value::Unknown)];
            }
            embedding(cx, st, &t, ws.dims[1].clone(), w.dtype, "F.embedding", span)
        }
        "embedding_bag" => {
            let b = bind(&["input", "weight", "offsets"], &args, &kwargs);
            let Some(Value::Tensor(w)) = b.get("weight") else { return vec![(st, Value::Unknown)] };
            let ws = st.resolve(&w.shape);
            if ws.rank() != Some(2) || !matches!(b.get("offsets"), None | Some(Value::None)) {
                return vec![(st, Value::Unknown)];
            }
            embedding_bag(cx, st, &t, ws.dims[1].clone(), w.dtype, "F.embedding_bag", span)
        }
        "one_hot" => {
            let b = bind(&["input", "num_classes"], &args, &kwargs);
            let shown = cx.show_shape(&st, &t.shape);
            let bad = Tri::from_bool(t.dtype.is_some_and(|d| d != DType::Long));
            if !cx.check(&st, span, bad, &r::invalid_shape_argument::RULE, |_| (format!("F.one_hot: input {shown} must be a LongTensor of class indices"), Vec::new())) {
                return Vec::new();
            }
            let k = match b.get("num_classes") {
                Some(Value::Int(p)) if p.as_const() != Some(-1) => Dim::known(p.clone(), None),
                _ => Dim::unknown(),
            };
            let s = st.resolve(&t.shape);
            let mut dims = s.dims.clone();
            dims.push(k);
            vec![(st, tensor_value(Shape { prefix: s.prefix, dims }, Some(DType::Long)))]
        }
        "bilinear" => {
            let b = bind(&["input1", "input2", "weight", "bias"], &args, &kwargs);
            let (Some(Value::Tensor(x2)), Some(Value::Tensor(w))) = (b.get("input2"), b.get("weight")) else { return vec![(st, Value::Unknown)] };
            let ws = st.resolve(&w.shape);
            if ws.rank() != Some(3) {
                return vec![(st, Value::Unknown)];
            }
            let (Some(i1), Some(i2)) = (ws.dims[1].v.clone(), ws.dims[2].v.clone()) else { return vec![(st, Value::Unknown)] };
            let x2 = x2.clone();
            bilinear(cx, st, &t, &x2, &i1, &i2, ws.dims[0].v.clone(), "F.bilinear", span)
        }
        "softmax" | "log_softmax" | "softmin" => {
            let b = bind(&["input", "dim"], &args, &kwargs);
            let s = st.resolve(&t.shape);
            if let Some(d) = b.get("dim").and_then(|v| v.as_const_int())
                && check_dim(cx, &st, &s, d, span, f) == Some(usize::MAX) {
                    return Vec::new();
                }
            vec![(st, Value::Tensor(t))]
        }
        "interpolate" | "upsample" => {
            let b = bind(&["input", "size", "scale_factor", "mode", "align_corners"], &args, &kwargs);
            if b.contains_key("align_corners") || kwargs.iter().any(|(k, _)| &**k == "recompute_scale_factor" || &**k == "antialias") {
                return vec![(st, Value::Unknown)];
            }
            super::resample::interpolate(cx, st, &t, b.get("size"), b.get("scale_factor"), b.get("mode"), &format!("F.{f}"), span)
        }
        "linear" => match args.get(1).or(kwargs.iter().find(|(k, _)| &**k == "weight").map(|(_, v)| v)) {
            Some(Value::Tensor(w)) => {
                let ws = st.resolve(&w.shape);
                if ws.rank() != Some(2) {
                    return vec![(st, Value::Unknown)];
                }
                let (Some(inf), outf) = (ws.dims[1].v.clone(), ws.dims[0].v.clone()) else { return vec![(st, Value::Unknown)] };
                let l = Layer { kind: Rc::from("Linear"), args: BTreeMap::new(), attrs: BTreeMap::new(), label: None, span };
                let bias = bind(&["input", "weight", "bias"], &args, &kwargs).get("bias").cloned();
                let mut out = Vec::new();
                for (st, y) in linear(cx, st, &t, &inf, outf, &l, span) {
                    // the bias is added to the output: it must broadcast to it without growing it
                    let (Some(Value::Tensor(b)), Value::Tensor(yt)) = (&bias, &y) else {
                        out.push((st, if matches!(bias, None | Some(Value::None)) { y } else { Value::Unknown }));
                        continue;
                    };
                    let (bs, ys) = (st.resolve(&b.shape), st.resolve(&yt.shape));
                    match super::tensor::broadcast(cx, &st, &ys, &bs, span, "F.linear bias") {
                        None => {}
                        Some(r) if r.rank() == ys.rank() && r.dims.iter().zip(&ys.dims).all(|(a, b)| a.v.is_some() && a.v == b.v) => out.push((st, y)),
                        Some(_) => out.push((st, Value::Unknown)),
                    }
                }
                out
            }
            _ => vec![(st, Value::Unknown)],
        },
        "scaled_dot_product_attention" => super::attention::sdpa(cx, st, &args, &kwargs, span),
        "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => functional_conv(cx, st, &t, f, &args, &kwargs, span),
        "batch_norm" => {
            let b = bind(&["input", "running_mean", "running_var", "weight", "bias", "training"], &args, &kwargs);
            let s = st.resolve(&t.shape);
            let Some(r) = s.rank() else { return vec![(st, Value::Unknown)] };
            if r < 2 {
                return vec![(st, Value::Unknown)];
            }
            for key in ["running_mean", "running_var", "weight", "bias"] {
                let Some(Value::Tensor(m)) = b.get(key) else { continue };
                let ms = st.resolve(&m.shape);
                if ms.rank() != Some(1) {
                    continue;
                }
                if !cx.expect_dim(&st, span, &r::layer_channel_mismatch::RULE, &s, &s.dims[1].clone(), &match ms.dims[0].v.clone() { Some(v) => v, None => continue }, Vec::new(), |shown, cs, ns| {
                    format!("F.batch_norm: {key} has {ns} elements but input {shown} has {cs} channels")
                }) {
                    return Vec::new();
                }
            }
            match b.get("training") {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => {
                    if !batch_stats_check(cx, &st, &s, span, "F.batch_norm") {
                        return Vec::new();
                    }
                }
                _ => return vec![(st, Value::Unknown)],
            }
            vec![(st, tensor_value(s, t.dtype))]
        }
        "layer_norm" => {
            let b = bind(&["input", "normalized_shape"], &args, &kwargs);
            let Some(ns) = normalized_shape(&st, b.get("normalized_shape")) else { return vec![(st, Value::Unknown)] };
            layer_norm(cx, st, &t, &ns, "F.layer_norm: LayerNorm", span)
        }
        "group_norm" => {
            let b = bind(&["input", "num_groups"], &args, &kwargs);
            let Some(g) = b.get("num_groups").and_then(|v| v.as_int().cloned()) else { return vec![(st, Value::Unknown)] };
            group_norm(cx, st, &t, &g, None, "F.group_norm", span)
        }
        "instance_norm" => {
            let b = bind(&["input", "running_mean", "running_var", "weight", "bias", "use_input_stats"], &args, &kwargs);
            if !matches!(b.get("use_input_stats"), None | Some(Value::Bool(true))) {
                return vec![(st, Value::Unknown)];
            }
            let s = st.resolve(&t.shape);
            let Some(r) = s.rank() else { return vec![(st, Value::Unknown)] };
            if r < 2 {
                return vec![(st, Value::Unknown)];
            }
            if !spatial_stats_check(cx, &st, &s.dims[2..], &s, span, "F.instance_norm") {
                return Vec::new();
            }
            vec![(st, tensor_value(s, t.dtype))]
        }
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
            if b.contains_key("ceil_mode") && !matches!(b.get("ceil_mode"), Some(Value::Bool(_))) {
                return vec![(st, Value::Unknown)];
            }
            let kind = if is_max { format!("MaxPool{n}d") } else { format!("AvgPool{n}d") };
            pool(cx, st, &t, n, b.get("kernel_size"), b.get("stride"), b.get("padding"), b.get("dilation"), ceil, "", &format!("F.{f} ({kind})"), span)
        }
        "adaptive_avg_pool1d" | "adaptive_avg_pool2d" | "adaptive_avg_pool3d" | "adaptive_max_pool1d" | "adaptive_max_pool2d" | "adaptive_max_pool3d" => {
            let n = (f.as_bytes()[f.len() - 2] - b'0') as usize;
            let b = bind(&["input", "output_size"], &args, &kwargs);
            let Some(o) = b.get("output_size") else { return vec![(st, Value::Unknown)] };
            adaptive(cx, st, &t, n, o, "", &format!("F.{f}"), span)
        }
        _ => vec![(st, Value::Unknown)],
    }
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
        cx.check(&st, span, Tri::True, &r::invalid_shape_argument::RULE, |_| (format!("{what}: sizes {sizes:?} may contain at most one -1"), Vec::new()));
        return Vec::new();
    }
    let Some(size) = s.dims[i].as_const() else { return vec![(st, Value::Unknown)] };
    let known: i128 = sizes.iter().filter(|x| **x != -1).product();
    let shown = cx.show_shape(&st, &s);
    let bad = if holes == 1 { known == 0 || size % known != 0 } else { known != size };
    if !cx.check(&st, span, Tri::from_bool(bad), &r::reshape_size_mismatch::RULE, |_| {
        (format!("{what}: sizes {sizes:?} don't multiply up to the size {size} of dim {d} of input {shown}"), Vec::new())
    }) {
        return Vec::new();
    }
    let mut dims = s.dims[..i].to_vec();
    dims.extend(sizes.iter().map(|x| Dim::konst(if *x == -1 { size / known } else { *x })));
    dims.extend(s.dims[i + 1..].iter().cloned());
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

/// `bilinear(x1 [*, in1], x2 [*, in2])`: `[*, out]`; both inputs have the same batch dims.
#[allow(clippy::too_many_arguments)]
fn bilinear(cx: &mut dyn ModelCtx, st: State, x1: &Tensor, x2: &Tensor, i1: &Poly, i2: &Poly, o: Option<Poly>, what: &str, span: Span) -> Vals {
    let (a, b) = (st.resolve(&x1.shape), st.resolve(&x2.shape));
    let (Some(ra), Some(rb)) = (a.rank(), b.rank()) else { return vec![(st, Value::Unknown)] };
    let (sa, sb) = (cx.show_shape(&st, &a), cx.show_shape(&st, &b));
    if !cx.check(&st, span, Tri::from_bool(ra != rb || ra == 0), &r::layer_input_rank_mismatch::RULE, |_| {
        (format!("{what}: inputs {sa} and {sb} must have the same number of dims (at least 1)"), Vec::new())
    }) {
        return Vec::new();
    }
    for k in 0..ra - 1 {
        let eq = cx.dim_eq_f(&a.dims[k], &b.dims[k]);
        if !cx.check(&st, span, eq.not(), &r::invalid_shape_argument::RULE, |_| (format!("{what}: batch dims of {sa} and {sb} do not match at dim {k}"), Vec::new())) {
            return Vec::new();
        }
    }
    for (s, want, shown, n) in [(&a, i1, &sa, "in1_features"), (&b, i2, &sb, "in2_features")] {
        let last = s.dims[ra - 1].clone();
        if !cx.expect_dim(&st, span, &r::matmul_shape_mismatch::RULE, s, &last, want, Vec::new(), |_, ls, ws| format!("{what}({n}={ws}) got input {shown} whose last dim is {ls}")) {
            return Vec::new();
        }
    }
    let mut dims = a.dims[..ra - 1].to_vec();
    dims.push(Dim { v: o, why: None });
    vec![(st, tensor_value(Shape::known(dims), x1.dtype))]
}

/// `glu(x, dim)`: the size along `dim` must be even, and halves.
fn glu(cx: &mut dyn ModelCtx, st: State, t: &Tensor, d: i128, what: &str, span: Span) -> Vals {
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    if !cx.check(&st, span, Tri::from_bool(rank == 0), &r::layer_input_rank_mismatch::RULE, |_| (format!("{what} does not support 0-D input"), Vec::new())) {
        return Vec::new();
    }
    let i = match check_dim(cx, &st, &s, d, span, what) {
        Some(usize::MAX) => return Vec::new(),
        Some(i) => i,
        None => return vec![(st, Value::Unknown)],
    };
    let Some(size) = s.dims[i].as_const() else { return vec![(st, Value::Unknown)] };
    let shown = cx.show_shape(&st, &s);
    if !cx.check(&st, span, Tri::from_bool(size % 2 != 0), &r::invalid_shape_argument::RULE, |_| (format!("{what}: halving dim {d} of input {shown} needs an even size, got {size}"), Vec::new())) {
        return Vec::new();
    }
    let mut dims = s.dims.clone();
    dims[i] = Dim::konst(size / 2);
    vec![(st, tensor_value(Shape::known(dims), t.dtype))]
}

/// Indices of an embedding lookup must be integers.
fn check_index_dtype(cx: &mut dyn ModelCtx, st: &State, t: &Tensor, what: &str, span: Span) -> bool {
    let bad = Tri::from_bool(t.dtype.is_some_and(|d| !matches!(d, DType::Long | DType::Int)));
    let shown = cx.show_shape(st, &t.shape);
    cx.check(st, span, bad, &r::invalid_shape_argument::RULE, |_| (format!("{what}: indices {shown} must be a Long or Int tensor"), Vec::new()))
}

/// `embedding(indices)`: indices' shape plus the embedding dim.
fn embedding(cx: &mut dyn ModelCtx, st: State, t: &Tensor, dim: Dim, dtype: Option<DType>, what: &str, span: Span) -> Vals {
    if !check_index_dtype(cx, &st, t, what, span) {
        return Vec::new();
    }
    let s = st.resolve(&t.shape);
    let mut dims = s.dims.clone();
    dims.push(dim);
    vec![(st, tensor_value(Shape { prefix: s.prefix, dims }, dtype))]
}

/// `embedding_bag(indices [B, N])`: one bag per row, `[B, dim]` (a 1-D input needs offsets).
fn embedding_bag(cx: &mut dyn ModelCtx, st: State, t: &Tensor, dim: Dim, dtype: Option<DType>, what: &str, span: Span) -> Vals {
    if !check_index_dtype(cx, &st, t, what, span) {
        return Vec::new();
    }
    let s = st.resolve(&t.shape);
    let Some(rank) = s.rank() else { return vec![(st, Value::Unknown)] };
    let shown = cx.show_shape(&st, &s);
    if !cx.check(&st, span, Tri::from_bool(rank != 2), &r::layer_input_rank_mismatch::RULE, |_| {
        (format!("{what}: without offsets the input must be 2-D (one bag per row), got {shown}"), Vec::new())
    }) {
        return Vec::new();
    }
    vec![(st, tensor_value(Shape::known(vec![s.dims[0].clone(), dim]), dtype))]
}

/// The APIs this family models, for the registry (`models/registry.rs`).
pub const APIS: &[crate::models::registry::Decl] = &[];
