//! How many parameters a layer holds (`shape-lint summary`'s column, torch's
//! `sum(p.numel() for p in layer.parameters())`), from its constructor arguments. `None` when
//! not known: an argument that is not a constant, a weight stored into it, or a kind not listed
//! here. Never a guess.

use super::ntuple;
use crate::value::*;

/// The layers without parameters whatever their arguments (activations, pooling, dropout,
/// reshaping, losses).
const NO_PARAMS: &[&str] = &[
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Hardtanh",
    "Hardsigmoid", "Hardswish", "Softplus", "Softsign", "Tanhshrink", "Softshrink", "Hardshrink", "LogSigmoid",
    "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "Threshold", "GLU", "Identity", "Flatten", "Unflatten",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "Upsample",
    "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "ZeroPad1d",
    "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
    "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d",
    "CircularPad3d", "Fold", "Unfold", "CosineSimilarity", "PairwiseDistance", "MSELoss", "L1Loss", "CrossEntropyLoss",
    "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss",
];

/// The parameter count of a library layer, when its constructor arguments tell it.
pub fn count(l: &Layer) -> Option<i128> {
    let kind = &*l.kind;
    if NO_PARAMS.contains(&kind) {
        return Some(0);
    }
    if l.attrs.contains_key("weight") || l.attrs.contains_key("bias") {
        // a weight stored into it (tying): shared with another layer
        return None;
    }
    let int = |k: &str| l.args.get(k).and_then(|v| v.as_const_int());
    // a flag: absent is its default
    let flag = |k: &str, default: bool| match l.args.get(k) {
        None => Some(default),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => None,
    };
    let bias = |b: bool, n: i128| if b { n } else { 0 };
    match kind {
        "Linear" => {
            let (i, o) = (int("in_features")?, int("out_features")?);
            Some(i * o + bias(flag("bias", true)?, o))
        }
        "Bilinear" => {
            let (a, b, o) = (int("in1_features")?, int("in2_features")?, int("out_features")?);
            Some(o * a * b + bias(flag("bias", true)?, o))
        }
        "Conv1d" | "Conv2d" | "Conv3d" | "ConvTranspose1d" | "ConvTranspose2d" | "ConvTranspose3d" => {
            let n = kind.chars().rev().nth(1)?.to_digit(10)? as usize;
            let (i, o) = (int("in_channels")?, int("out_channels")?);
            let g = match l.args.get("groups") {
                None => 1,
                Some(v) => v.as_const_int()?,
            };
            if g <= 0 || i % g != 0 || o % g != 0 {
                return None;
            }
            let k: i128 = ntuple(l.args.get("kernel_size"), n, 1)?.iter().map(|p| p.as_const()).product::<Option<i128>>()?;
            Some(o * (i / g) * k + bias(flag("bias", true)?, o))
        }
        "BatchNorm1d" | "BatchNorm2d" | "BatchNorm3d" | "InstanceNorm1d" | "InstanceNorm2d" | "InstanceNorm3d" => {
            let default = kind.starts_with("BatchNorm");
            Some(bias(flag("affine", default)?, 2 * int("num_features")?))
        }
        "GroupNorm" => Some(bias(flag("affine", true)?, 2 * int("num_channels")?)),
        "LayerNorm" => {
            let n: i128 = match l.args.get("normalized_shape")? {
                Value::Int(p) => p.as_const()?,
                Value::Tuple(t) => t.iter().map(|x| x.as_const_int()).product::<Option<i128>>()?,
                _ => return None,
            };
            let affine = flag("elementwise_affine", true)?;
            Some(bias(affine, n) + bias(affine && flag("bias", true)?, n))
        }
        // (a `_weight` passed in becomes a new Parameter of this shape)
        "Embedding" | "EmbeddingBag" => Some(int("num_embeddings")? * int("embedding_dim")?),
        "RMSNorm" => {
            let n: i128 = match l.args.get("normalized_shape")? {
                Value::Int(p) => p.as_const()?,
                Value::Tuple(t) => t.iter().map(|x| x.as_const_int()).product::<Option<i128>>()?,
                _ => return None,
            };
            Some(bias(flag("elementwise_affine", true)?, n))
        }
        "MultiheadAttention" => {
            // in_proj (or q/k/v_proj when kdim or vdim differ), its bias, bias_k and bias_v,
            // and out_proj (a Linear, bias as `bias`)
            let e = int("embed_dim")?;
            let opt = |k: &str| match l.args.get(k) {
                None | Some(Value::None) => Some(e),
                Some(v) => v.as_const_int(),
            };
            let (kd, vd) = (opt("kdim")?, opt("vdim")?);
            let b = flag("bias", true)?;
            let kv = flag("add_bias_kv", false)?;
            Some(e * (e + kd + vd) + bias(b, 3 * e) + bias(kv, 2 * e) + e * e + bias(b, e))
        }
        "RNN" | "LSTM" | "GRU" => {
            let proj = match l.args.get("proj_size") {
                None => 0,
                Some(v) => v.as_const_int()?,
            };
            if proj < 0 || (proj > 0 && kind != "LSTM") {
                return None;
            }
            let gates = match kind {
                "LSTM" => 4,
                "GRU" => 3,
                _ => 1,
            };
            let (input, h) = (int("input_size")?, int("hidden_size")?);
            let layers = match l.args.get("num_layers") {
                None => 1,
                Some(v) => v.as_const_int()?,
            };
            let dirs = if flag("bidirectional", false)? { 2 } else { 1 };
            let b = flag("bias", true)?;
            let mut total = 0;
            // with `proj_size` the state fed back (and to the next layer) is the projection
            let out = if proj > 0 { proj } else { h };
            for layer in 0..layers {
                let inp = if layer == 0 { input } else { out * dirs };
                total += dirs * (gates * h * (inp + out) + bias(b, 2 * gates * h) + if proj > 0 { proj * h } else { 0 });
            }
            Some(total)
        }
        "RNNCell" | "LSTMCell" | "GRUCell" => {
            let gates = match kind {
                "LSTMCell" => 4,
                "GRUCell" => 3,
                _ => 1,
            };
            let (input, h) = (int("input_size")?, int("hidden_size")?);
            Some(gates * h * (input + h) + bias(flag("bias", true)?, 2 * gates * h))
        }
        "PReLU" => Some(match l.args.get("num_parameters") {
            None => 1,
            Some(v) => v.as_const_int()?,
        }),
        _ => None,
    }
}

/// What torch's forward hooks see of a call of a library layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hooks {
    /// The layer itself, a leaf (no child modules).
    Leaf,
    /// Nothing: it holds child modules but calls none of them as a module
    /// (`MultiheadAttention` passes `out_proj`'s weight to `F.multi_head_attention_forward`).
    Silent,
    /// Its children's calls, which depend on its mode and inputs (the Transformer layers'
    /// fast path calls none of them): not followed here.
    Children,
}

pub fn hooks(l: &Layer) -> Hooks {
    match &*l.kind {
        "MultiheadAttention" => Hooks::Silent,
        "Transformer" | "TransformerEncoder" | "TransformerDecoder" | "TransformerEncoderLayer" | "TransformerDecoderLayer" => Hooks::Children,
        _ => Hooks::Leaf,
    }
}
