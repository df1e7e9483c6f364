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
        "Embedding" => Some(int("num_embeddings")? * int("embedding_dim")?),
        "RNN" | "LSTM" | "GRU" => {
            if l.args.get("proj_size").is_some_and(|v| v.as_const_int() != Some(0)) {
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
            for layer in 0..layers {
                let inp = if layer == 0 { input } else { h * dirs };
                total += dirs * (gates * h * (inp + h) + bias(b, 2 * gates * h));
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

/// Whether torch's class of this kind holds child modules (so forward hooks do not see it as a
/// leaf, and what it runs inside is not followed here).
pub fn has_children(l: &Layer) -> bool {
    matches!(&*l.kind, "MultiheadAttention" | "Transformer" | "TransformerEncoder" | "TransformerDecoder" | "TransformerEncoderLayer" | "TransformerDecoderLayer")
}
