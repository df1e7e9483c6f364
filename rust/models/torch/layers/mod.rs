//! `torch.nn` modules (construction and call) and their `torch.nn.functional` twins.
//!
//! Every modelled API is one [`Nn`] entry, declared next to its model: the registry's
//! [`Decl`] (the constructor's and the call's parameters that the model reads, the
//! functional twin, the rules of the preconditions it checks) and how it is modelled, a
//! [`Module`] or a [`Function`] with what tells the variants apart as data
//! (`Module::Conv { dims: 2, transposed: false }`). The entries live in the family files
//! (`container.rs`, `linear.rs`, `conv.rs`, `pool.rs`, `fold.rs`, `norm.rs`, `activation.rs` here, and
//! `losses.rs`, `recurrent.rs`, `attention.rs`, `resample.rs` beside this module); [`APIS`]
//! collects their declarations for the registry.
//!
//! The gate: `nn.X(...)` ([`construct`]), a call of a library layer ([`call_layer`]) and
//! `F.x(...)` ([`functional`]) resolve the registry entry once; an unregistered name, or an
//! argument the entry does not declare (`Api::accepts`, `Api::accepts_call`), is `Unknown`.
//! Arguments are then bound to the entry's parameters ([`bind`]): a constructor's bound
//! arguments are the layer's `args`, which its calls and attributes (`fc.in_features`) read.

mod activation;
mod container;
mod conv;
mod fold;
mod linear;
mod norm;
mod pool;
pub mod params;

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use super::losses::Loss;
use super::recurrent::Rnn;
use super::{attention, device, dtype, layout, losses, recurrent, resample};
use crate::rules::shape::{LayerInputRankMismatch, OutputSizeTooSmall};
use crate::ir::{Name, Span};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::models::registry::{self, Api, Decl, Param, ParamKind};
use crate::shape::{Formula, Poly, Rel, Tri};
use crate::value::*;

/// How a `torch.nn.X` is modelled, resolved once from its registry entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Module {
    /// `Sequential`, `ModuleList`, `ModuleDict`.
    Container(ContainerKind),
    /// `nn.Parameter(t)` is `t`.
    Parameter,
    /// `nn.DataParallel(m)` is `m`.
    Wrapper,
    Linear,
    Bilinear,
    Conv { dims: usize, transposed: bool },
    Pool { dims: usize, max: bool },
    AdaptivePool { dims: usize, max: bool },
    Unfold,
    Fold,
    BatchNorm { dims: usize },
    InstanceNorm { dims: usize },
    /// `LayerNorm`, `RMSNorm`.
    LayerNorm,
    GroupNorm,
    Embedding,
    EmbeddingBag,
    Flatten,
    Unflatten,
    /// `ZeroPad2d`, `ReflectionPad1d`, ...: `dims` padded dims, `F.pad`'s `mode`.
    Pad { dims: usize, mode: &'static str },
    PixelShuffle { unshuffle: bool },
    PReLU,
    Glu,
    /// `Softmax`, `LogSoftmax`, `Softmin`.
    Softmax,
    /// The input's shape: activations, most dropouts, `Identity`.
    Elementwise,
    Dropout1d,
    /// `Dropout2d` (`dims: 2`), `Dropout3d`.
    FeatureDropout { dims: usize },
    Loss(Loss),
    Recurrent(Rnn),
    Cell(Rnn),
    MultiheadAttention,
    TransformerEncoderLayer,
    TransformerDecoderLayer,
    Transformer,
    /// `TransformerEncoder`, `TransformerDecoder`: their layer's output.
    TransformerStack,
    /// `Upsample`; `UpsamplingNearest2d`/`UpsamplingBilinear2d` with their fixed mode.
    Upsample { mode: Option<&'static str> },
}

/// How a `torch.nn.functional.x` is modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// The input's shape: activations, dropouts.
    Elementwise,
    Dropout1d,
    FeatureDropout { dims: usize },
    Softmax,
    Normalize,
    Glu,
    Linear,
    Bilinear,
    Embedding,
    EmbeddingBag,
    OneHot,
    Conv { dims: usize, transposed: bool },
    Pool { dims: usize, max: bool },
    AdaptivePool { dims: usize, max: bool },
    Unfold,
    Fold,
    BatchNorm,
    InstanceNorm,
    LayerNorm,
    GroupNorm,
    Pad,
    PixelShuffle { unshuffle: bool },
    Interpolate,
    ScaledDotProductAttention,
    Loss(Loss),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    Module(Module),
    Function(Function),
}

/// One `nn` API: its declaration and its model.
#[derive(Debug, Clone, Copy)]
pub struct Nn {
    pub decl: Decl,
    pub model: Model,
}

impl Nn {
    pub const fn module(decl: Decl, m: Module) -> Nn {
        Nn { decl, model: Model::Module(m) }
    }
    pub const fn function(decl: Decl, f: Function) -> Nn {
        Nn { decl, model: Model::Function(f) }
    }
}

/// Every family's entries.
const TABLES: &[&[Nn]] = &[container::NN, linear::NN, conv::NN, pool::NN, fold::NN, norm::NN, activation::NN, resample::NN, losses::NN, recurrent::NN, attention::NN];

const fn count(tables: &[&[Nn]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < tables.len() {
        n += tables[i].len();
        i += 1;
    }
    n
}

const fn decls<const N: usize>(tables: &[&[Nn]]) -> [Decl; N] {
    let mut out = [Decl::function("", ""); N];
    let (mut k, mut i) = (0, 0);
    while i < tables.len() {
        let mut j = 0;
        while j < tables[i].len() {
            out[k] = tables[i][j].decl;
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

static DECLS: [Decl; count(TABLES)] = decls(TABLES);

/// The APIs this family models, for the registry (`models/registry.rs`).
pub const APIS: &[Decl] = &DECLS;

/// The models by qualified name.
fn models() -> &'static FxHashMap<&'static str, Model> {
    static MODELS: OnceLock<FxHashMap<&'static str, Model>> = OnceLock::new();
    MODELS.get_or_init(|| TABLES.iter().flat_map(|t| t.iter()).map(|e| (e.decl.name, e.model)).collect())
}

/// The registry entry of `prefix.name` and its model.
fn resolve(prefix: &str, name: &str) -> Option<(&'static Api, Model)> {
    let api = registry::lookup_in(prefix, name)?;
    Some((api, *models().get(api.name)?))
}

/// The short name of a twin (`CrossEntropyLoss` for `F.cross_entropy`), for messages.
fn twin_name(api: &Api) -> &'static str {
    api.twin.and_then(|t| t.rsplit('.').next()).unwrap_or(api.short_name())
}

/// Arguments bound to parameter names.
pub type Bound = BTreeMap<&'static str, Value>;

/// Bind a call's arguments to `params` (the entry accepted them): positional arguments in
/// order, keywords by name.
pub fn bind(params: &[Param], args: &[Value], kwargs: &[(Name, Value)]) -> Bound {
    let mut out = Bound::new();
    for (p, a) in params.iter().filter(|p| p.kind == ParamKind::Positional).zip(args) {
        out.insert(p.name, a.clone());
    }
    for (k, v) in kwargs {
        if let Some(p) = params.iter().find(|p| p.name == &**k && matches!(p.kind, ParamKind::Positional | ParamKind::Keyword)) {
            out.insert(p.name, v.clone());
        }
    }
    out
}

/// `torch.nn.X(...)`: a container, a pass-through or a library layer.
pub fn construct(cx: &mut dyn ModelCtx, st: State, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Some((api, Model::Module(m))) = resolve("torch.nn", name) else { return vec![(st, Value::Unknown)] };
    if !api.accepts(&args, &kwargs) {
        return vec![(st, Value::Unknown)];
    }
    let b = bind(&api.params, &args, &kwargs);
    match m {
        Module::Container(ContainerKind::Sequential) => container::construct(cx, st, ContainerKind::Sequential, &args, span),
        Module::Container(ck) => container::construct(cx, st, ck, &b.get("modules").cloned().into_iter().collect::<Vec<_>>(), span),
        Module::Parameter => {
            // torch raises for an integer or bool tensor that requires grad (the default): Unknown
            let data = b.get("data").cloned().unwrap_or(Value::Unknown);
            let grad = !matches!(b.get("requires_grad"), Some(Value::Bool(false)));
            let integral = matches!(&data, Value::Tensor(t) if t.dtype.is_some_and(|d| !d.is_floating()));
            // a parameter moves with the module it is assigned to
            let data = match data {
                // (its grad only in a program whose autograd is followed: elsewhere `.data` and the other
                // ops that would make it untracked are not stamped, `autograd::stamp`)
                Value::Tensor(t) if !crate::models::torch::device::follows_autograd() => Value::Tensor(Rc::new((*t).clone().registered())),
                Value::Tensor(t) => Value::Tensor(Rc::new(Tensor { grad: if grad { Grad::Leaf } else { Grad::Untracked(NoGrad::Detached, span) }, ..(*t).clone().registered() })),
                v => v,
            };
            vec![(st, if grad && integral { Value::Unknown } else { data })]
        }
        Module::Wrapper => {
            // `nn.DataParallel(m)` scatters its inputs to the devices of `m`: where `m`'s
            // parameters are is no longer a precondition on the inputs
            let mut st = st;
            let m = b.get("module").cloned().unwrap_or(Value::Unknown);
            if let Value::Ref(id) = m {
                device::move_module(cx, &mut st, id, (Some(None), None));
                // and a later `model.cuda()` of the wrapper still scatters them
                crate::models::for_each_module(cx, &mut st, id, &mut |attrs, _| {
                    attrs.insert(Name::from(device::SCATTERED), Value::Bool(true));
                });
            }
            vec![(st, m)]
        }
        _ => {
            let mut st = st;
            let amap: BTreeMap<Rc<str>, Value> = b.into_iter().map(|(k, v)| (Rc::from(k), v)).collect();
            if !construct_checks(cx, &st, m, name, &amap, span) {
                return Vec::new();
            }
            let label = cx.label().map(|n| Rc::from(format!("{n} ({})", cx.place(span))));
            let id = st.alloc(Obj::Layer(Layer { kind: Rc::from(name), args: amap, attrs: BTreeMap::new(), label, span }));
            vec![(st, Value::Ref(id))]
        }
    }
}

/// The preconditions torch checks when a layer is built. False when torch raises.
fn construct_checks(cx: &mut dyn ModelCtx, st: &State, m: Module, name: &str, amap: &BTreeMap<Rc<str>, Value>, span: Span) -> bool {
    match m {
        Module::Conv { dims, transposed } => conv::construct_checks(cx, st, name, dims, transposed, amap, span),
        Module::Recurrent(which) => recurrent::construct_checks(cx, st, name, which, amap, span),
        Module::GroupNorm => norm::group_norm_construct_checks(cx, st, amap, span),
        Module::Embedding | Module::EmbeddingBag => linear::embedding_construct_checks(cx, st, name, amap, span),
        Module::Elementwise if name == "Hardtanh" => activation::hardtanh_construct_checks(cx, st, amap, span),
        Module::Loss(Loss::TripletMargin) => losses::triplet_construct_checks(cx, st, name, amap, span),
        Module::MultiheadAttention => attention::heads_check(cx, st, name, amap, ("embed_dim", "num_heads"), span),
        Module::TransformerEncoderLayer | Module::TransformerDecoderLayer | Module::Transformer => {
            attention::heads_check(cx, st, name, amap, ("d_model", "nhead"), span) && attention::activation_check(cx, st, name, m, amap, span)
        }
        _ => true,
    }
}

/// A parameter of a library layer (`fc.weight`), when modelled.
pub fn parameter(l: &Layer, name: &str) -> Option<Value> {
    match resolve("torch.nn", &l.kind)? {
        (_, Model::Module(Module::Linear)) => linear::parameter(l, name),
        (_, Model::Module(Module::Embedding)) => linear::embedding_parameter(l, name),
        (_, Model::Module(Module::Conv { dims, transposed })) if matches!(name, "weight" | "bias") => conv::attr(l, name, dims, transposed),
        _ => None,
    }
}

/// An attribute of a library layer that torch stores in another form than the constructor's
/// argument, or has without one (a convolution's `stride` is a tuple, `groups` defaults to 1),
/// when modelled.
pub fn stored_attr(l: &Layer, name: &str) -> Option<Value> {
    match resolve("torch.nn", &l.kind)? {
        (_, Model::Module(Module::Conv { dims, transposed })) => conv::attr(l, name, dims, transposed),
        _ => None,
    }
}

/// The layer a user class may derive from and keep its model (`class MyLinear(nn.Linear)`):
/// the short name of a modelled library layer (`Linear`) for the base `torch.nn.Linear`, and
/// `Sequential` (`class ConvBlock(nn.Sequential)`, whose `super().__init__(*layers)` builds
/// the container it holds); not the other containers and pass-throughs.
pub fn subclassable_layer(base: &str) -> Option<&'static str> {
    let short = base.strip_prefix("torch.nn.")?;
    match resolve("torch.nn", short)? {
        (api, Model::Module(Module::Container(ContainerKind::Sequential))) => Some(api.short_name()),
        (_, Model::Module(Module::Container(_) | Module::Parameter | Module::Wrapper)) => None,
        (api, Model::Module(_)) => Some(api.short_name()),
        _ => None,
    }
}

/// The public names a modelled library layer's class or instance has besides `nn.Module`'s
/// (attributes its `__init__` sets, parameters, buffers, submodules, methods its `forward` may
/// call), taken from torch's sources: the union over every modelled layer. A user subclass
/// that defines one of them (or a private `_name`) may change what torch's `forward` computes,
/// and a store of one into its instance goes to the layer.
pub const LAYER_NAMES: &[&str] = &[
    "activation", "activation_relu_or_gelu", "activations", "add_bias_kv", "add_zero_attn", "affine", "align_corners", "all_weights", "alpha", "append", "approximate",
    "batch_first", "beta", "bias", "bias_hh", "bias_ih", "bias_k", "bias_v", "bidirectional", "blank", "ceil_mode", "check_forward_args", "check_hidden_size",
    "check_input", "choices", "clear", "count_include_pad", "custom_decoder", "custom_encoder", "d_model", "decoder", "decoder_layer", "delta", "device", "device_ids",
    "dilation", "dim", "dim_feedforward", "divisor_override", "downscale_factor", "dropout", "dropout1", "dropout2", "dropout3", "dtype", "elementwise_affine",
    "embed_dim", "embedding_dim", "enable_nested_tensor", "encoder", "encoder_layer", "end_dim", "eps", "extend", "flatten_parameters", "from_pretrained", "gather",
    "generate_square_subsequent_mask", "get_expected_cell_size", "get_expected_hidden_size", "groups", "head_dim", "hidden_size", "ignore_index", "in1_features",
    "in2_features", "in_channels", "in_features", "in_proj_bias", "in_proj_weight", "include_last_offset", "init", "inplace", "input_size", "insert", "items",
    "k_proj_weight", "kdim", "kernel_size", "keys", "label_smoothing", "lambd", "layer_norm_eps", "layers", "linear1", "linear2", "linears", "log_target", "lower",
    "margin", "mask_check", "max_norm", "max_val", "max_value", "merge_masks", "min_val", "min_value", "mode", "module", "momentum", "multihead_attn", "name",
    "negative_slope", "nhead", "nonlinearity", "norm", "norm1", "norm2", "norm3", "norm_first", "norm_type", "normalized_shape", "num_batches_tracked",
    "num_channels", "num_decoder_layers", "num_embeddings", "num_encoder_layers", "num_features", "num_groups", "num_heads", "num_layers", "num_parameters",
    "out_channels", "out_features", "out_proj", "output_device", "output_padding", "output_size", "p", "padding", "padding_idx", "padding_mode", "parallel_apply",
    "permute_hidden", "pop", "pos_weight", "proj_size", "q_proj_weight", "recompute_scale_factor", "reduce", "reduction", "replicate", "reset_parameters",
    "reset_running_stats", "return_indices", "running_mean", "running_var", "scale_factor", "scale_grad_by_freq", "scatter", "self_attn", "size", "size_average",
    "sparse", "src_device_obj", "start_dim", "stride", "swap", "threshold", "track_running_stats", "transposed", "unflattened_size", "update", "upper",
    "upscale_factor", "use_nested_tensor", "v_proj_weight", "value", "values", "vdim", "weight", "weight_hh", "weight_ih", "zero_infinity",
];

/// Is `name` (possibly) a public attribute of a library layer: one of [`LAYER_NAMES`], or a
/// recurrent layer's per-layer parameter (`weight_ih_l0`, `bias_hh_l1_reverse`)?
pub fn is_layer_name(name: &str) -> bool {
    name.starts_with("weight_") || name.starts_with("bias_") || LAYER_NAMES.binary_search(&name).is_ok()
}

/// Calling a library layer.
/// The mark `attr_stored` leaves on a layer whose computation a store may have changed.
const MODIFIED: &str = "<modified>";

/// `layer.name = v` on a library layer. Its model reads the constructor's arguments, so a
/// store that may change what it computes (`conv.stride = (1, 1)`, `conv.padding = 0`,
/// `fc.weight = nn.Parameter(w)` of another shape, `fc.in_features = 5`, which torch ignores
/// but a model may read) makes its calls Unknown. Harmless: `training`, and a new `weight`
/// or `bias` tensor of the shape the model has for it (weight tying between equal shapes).
pub fn attr_stored(st: &State, l: &mut Layer, name: &str, v: &Value) {
    let same_parameter = matches!(name, "weight" | "bias")
        && match (parameter(l, name), v) {
            (Some(Value::Tensor(old)), Value::Tensor(new)) => st.resolve(&old.shape) == st.resolve(&new.shape) && old.dtype == new.dtype,
            _ => false,
        };
    // weight tying (`decoder.weight = encoder.weight`): a Linear's and an Embedding's call
    // use the stored parameter (`linear::call`, `linear::call_embedding`), of any shape; torch
    // raises at the call when it does not fit (a tensor that is no `nn.Parameter` raises at
    // the store, which the value model does not tell apart)
    let tied = match (resolve("torch.nn", &l.kind), name, v) {
        (Some((_, Model::Module(Module::Linear | Module::Embedding))), "weight", Value::Tensor(_)) => true,
        (Some((_, Model::Module(Module::Linear))), "bias", Value::Tensor(_) | Value::None) => true,
        _ => false,
    };
    if name == "training" || same_parameter || tied {
        return;
    }
    mark_modified(l);
}

/// Make a layer's calls Unknown: something the model does not follow changed what it computes
/// (a forward hook, a parameter's `.data` replaced).
pub fn mark_modified(l: &mut Layer) {
    l.attrs.insert(Rc::from(MODIFIED), Value::Bool(true));
}

/// `x.data = y` / `x.set_(y)` of a tensor of another (or an unknown) shape: `x` is `y` in every
/// alias, and since `x` may be a layer's parameter (`emb.weight.data = ...`), which the layer
/// models do not read from the tensor, every layer's calls become Unknown.
pub fn tensor_replaced(st: &mut State, old: &Rc<Tensor>, new: &Value) {
    let same = matches!(new, Value::Tensor(n) if st.resolve(&n.shape) == st.resolve(&old.shape) && n.shape.prefix.is_none());
    if same {
        return;
    }
    st.replace_tensor(old, new);
    for id in 0..st.heap.len() {
        if matches!(st.get(id), Obj::Layer(l) if !l.attrs.contains_key(MODIFIED)) {
            if let Obj::Layer(l) = st.get_mut(id) {
                mark_modified(l);
            }
        }
    }
}

pub fn call_layer(cx: &mut dyn ModelCtx, st: State, l: &Layer, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    if l.attrs.contains_key(MODIFIED) {
        return vec![(st, Value::Unknown)];
    }
    let Some((api, Model::Module(m))) = resolve("torch.nn", &l.kind) else { return vec![(st, Value::Unknown)] };
    if !api.accepts_call(&args, &kwargs) {
        return vec![(st, Value::Unknown)];
    }
    // a loaded object as the input or target: a tensor (`loaded.rs`)
    let (mut st, mut args, mut kwargs) = (st, args, kwargs);
    super::loaded::tensor_args(cx, &mut st, &api.call_params, &mut args, &mut kwargs);
    let x = args.first().cloned().or_else(|| kwargs.first().map(|(_, v)| v.clone())).unwrap_or(Value::Unknown);
    // a recurrent layer's PackedSequence input (`packed.rs`)
    if let Module::Recurrent(which) = m
        && super::packed::of(&st, &x).is_some()
    {
        let b = bind(&api.call_params, &args, &kwargs);
        return super::packed::rnn(cx, st, l, which, &b, span);
    }
    // a value the core does not follow, into a layer only a tensor can enter (Linear,
    // Embedding): a tensor of unknown shape and dtype on every path that goes on (torch raises
    // for anything else), so the output's known dims (`[*, out_features]`) are kept
    let x = match (x, m) {
        // (so is a softmax or sigmoid layer, `nn.Softmax(dim=1)(x)` calls `x.softmax`: its
        // output is probabilities of unknown shape, which a loss that applies the function
        // itself must not take, SHP308)
        (Value::Unknown, m) if matches!(m, Module::Linear | Module::Embedding) || super::activation::of(&l.kind).is_some() => cx.any_tensor(),
        (x, _) => x,
    };
    let Value::Tensor(t) = x else { return vec![(st, Value::Unknown)] };
    let Some((st, dev)) = devices_and_dtypes(cx, st, l, m, api, &t, &args, &kwargs, span) else { return Vec::new() };
    // strides (`layout.rs`): a layer handing back its input does not always keep them
    // what autograd records of the output: the inputs, and the parameters (of unknown grad: they
    // may be frozen) of a layer that holds some (`autograd.rs`)
    let mut inputs = vec![t.clone()];
    inputs.extend(device::tensors_in(&st, args.iter().skip(1).chain(kwargs.iter().map(|(_, v)| v))));
    let params = holds_tensors(l, m) && !matches!(m, Module::Loss(_));
    // (frozen parameters give no graph, and the layer no gradient: `autograd::REQUIRES_GRAD`)
    let requires_grad = if params { super::autograd::layer_requires_grad(&st, l) } else { Some(false) };
    let unfollowed = super::autograd::any_unfollowed(args.iter().skip(1).chain(kwargs.iter().map(|(_, v)| v)));
    let out = call_module(cx, st, l, m, api, &t, args, kwargs, span);
    let out = super::autograd::stamp_layer(out, &inputs, super::autograd::Source::Layer { requires_grad }, &l.kind, (requires_grad == Some(true)).then_some(l.span), Some(l.span), span);
    let out = super::autograd::unfollowed(out, unfollowed);
    // (a softmax or sigmoid layer's probabilities are named by where the layer was built)
    let out = super::activation::after(out, &l.kind, Some(&Value::Tensor(t.clone())), if super::activation::of(&l.kind).is_some() { l.span } else { span });
    device::stamp(layout::forget_permuted(out, &t), dev)
}

/// Whether a layer holds parameters or buffers that must be on its input's device (a norm
/// without affine weights or running statistics holds none).
fn holds_tensors(l: &Layer, m: Module) -> bool {
    let on = |k: &str, default: bool| flag(l, k, default);
    match m {
        Module::Linear | Module::Bilinear | Module::Conv { .. } | Module::Embedding | Module::EmbeddingBag | Module::PReLU | Module::Recurrent(_) | Module::Cell(_) | Module::MultiheadAttention => true,
        Module::TransformerEncoderLayer | Module::TransformerDecoderLayer | Module::Transformer | Module::TransformerStack => true,
        Module::BatchNorm { .. } => on("affine", true) || on("track_running_stats", true),
        Module::InstanceNorm { .. } => on("affine", false) || on("track_running_stats", false),
        Module::LayerNorm => on("elementwise_affine", true),
        Module::GroupNorm => on("affine", true),
        _ => false,
    }
}

/// A layer's boolean constructor argument (`affine=`): its default when not given, true when not
/// a known bool.
fn flag(l: &Layer, k: &str, default: bool) -> bool {
    match l.args.get(k) {
        None => default,
        Some(Value::Bool(b)) => *b,
        Some(_) => true,
    }
}

/// The device and dtype checks of a layer call (`device.rs`): its input and hidden state on the
/// device of its parameters (a loss: input, target and class weights on one device), an input
/// of its weights' dtype, integer indices, class-index targets of int64. Returns the device of
/// the result, or None when the path ends (torch raises).
#[allow(clippy::too_many_arguments)]
fn devices_and_dtypes(cx: &mut dyn ModelCtx, st: State, l: &Layer, m: Module, api: &'static Api, t: &Rc<Tensor>, args: &[Value], kwargs: &[(Name, Value)], span: Span) -> Option<(State, Option<Device>)> {
    let op = format!("{}{}", layer_name(l), l.kind);
    if let Module::Loss(kind) = m {
        let b = bind(&api.call_params, args, kwargs);
        let mut ts: Vec<(String, Rc<Tensor>)> = ["input", "target"].iter().filter_map(|k| match b.get(k) { Some(Value::Tensor(x)) => Some((k.to_string(), x.clone())), _ => None }).collect();
        for k in ["weight", "pos_weight"] {
            if let Some(Value::Tensor(w)) = l.args.get(k) {
                // a loss's weights are buffers: moved with it
                let w = match l.attrs.get(device::DEVICE_ATTR) {
                    Some(d) => Rc::new((**w).clone().on(device::named(d))),
                    None => w.clone(),
                };
                ts.push((k.to_string(), w));
            }
        }
        if !device::check_operands(cx, &st, &op, &ts, span) {
            return None;
        }
        // SHP308: probabilities where the loss applies softmax or sigmoid itself
        let applies = match kind {
            Loss::CrossEntropy => Some(super::activation::Applies::LogSoftmax),
            Loss::Nll => Some(super::activation::Applies::TakesLog),
            Loss::BceWithLogits => Some(super::activation::Applies::Sigmoid),
            _ => None,
        };
        if let (Some(a), Some(Value::Tensor(i))) = (applies, b.get("input")) {
            super::activation::check_loss(cx, &st, &op, a, i, span);
        }
        let dtypes = match kind {
            Loss::CrossEntropy | Loss::Nll => Some(dtype::LossKind::Class),
            Loss::Bce => Some(dtype::LossKind::Bce),
            Loss::BceWithLogits => Some(dtype::LossKind::BceWithLogits),
            _ => None,
        };
        if let (Some(k), Some(Value::Tensor(i)), Some(Value::Tensor(g))) = (dtypes, b.get("input"), b.get("target")) {
            let weight = ts.iter().find(|(n, _)| n == "weight").map(|(_, w)| w.clone());
            if !dtype::check_loss(cx, &st, &op, k, i, g, weight.as_deref(), span) {
                return None;
            }
        }
        let dev = device::common(&st, &ts.into_iter().map(|(_, x)| x).collect::<Vec<_>>());
        return Some((st, dev));
    }
    let mut inputs: Vec<(&str, Rc<Tensor>)> = vec![("input", t.clone())];
    let more = if matches!(m, Module::Recurrent(_) | Module::Cell(_)) { "hidden state" } else { "argument" };
    for v in args.iter().skip(1).chain(kwargs.iter().map(|(_, v)| v)) {
        inputs.extend(device::tensors_in(&st, std::iter::once(v)).into_iter().map(|x| (more, x)));
    }
    let dev = if holds_tensors(l, m) {
        match device::module_device(&l.attrs, &l.args) {
            Some(p) => {
                if !device::check_layer(cx, &st, &op, p, &inputs, span) {
                    return None;
                }
                Some(p)
            }
            None => None,
        }
    } else {
        device::common(&st, &inputs.iter().map(|(_, x)| x.clone()).collect::<Vec<_>>())
    };
    let weights = device::module_dtype(&l.attrs, &l.args);
    let ok = match m {
        Module::Linear | Module::Conv { .. } | Module::Recurrent(_) | Module::Cell(_) => dtype::check_weights(cx, &st, &op, weights, t, span),
        // every input: query, key and value; both of a bilinear form
        Module::Bilinear | Module::MultiheadAttention => {
            let n = if m == Module::Bilinear { 2 } else { 3 };
            let b = bind(&api.call_params, args, kwargs);
            api.call_params.iter().take(n).filter_map(|p| match b.get(p.name) { Some(Value::Tensor(x)) => Some(x.clone()), _ => None }).all(|x| dtype::check_weights(cx, &st, &op, weights, &x, span))
        }
        Module::Embedding | Module::EmbeddingBag => dtype::check_indices(cx, &st, &op, t, &[DType::Long, DType::Int], span),
        // a floating input, of the dtype of the norm's affine weights and running statistics
        // (RMSNorm computes in the input's dtype; an instance norm's running statistics are not
        // its input's dtype's business)
        Module::BatchNorm { .. } | Module::LayerNorm | Module::GroupNorm | Module::InstanceNorm { .. } => {
            let weighted = l.kind.as_ref() != "RMSNorm" && if matches!(m, Module::InstanceNorm { .. }) { flag(l, "affine", false) } else { holds_tensors(l, m) };
            dtype::check_floating(cx, &st, &op, t, span) && (!weighted || dtype::check_norm(cx, &st, &op, weights, t, true, span))
        }
        Module::PReLU => dtype::check_norm(cx, &st, &op, weights, t, false, span),
        Module::Softmax => dtype::check_floating(cx, &st, &op, t, span),
        _ => true,
    };
    ok.then_some((st, dev))
}

#[allow(clippy::too_many_arguments)]
fn call_module(cx: &mut dyn ModelCtx, st: State, l: &Layer, m: Module, api: &'static Api, t: &Rc<Tensor>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let t = t.clone();
    let b = bind(&api.call_params, &args, &kwargs);
    match m {
        // (`layout.rs`: their results are contiguous, for a convolution and a pooling when the
        // input is)
        Module::Linear => layout::contiguous(linear::call(cx, st, &t, l, span)),
        Module::Bilinear => linear::call_bilinear(cx, st, &t, l, &b, span),
        Module::Conv { dims, transposed } => layout::contiguous_if(conv::call(cx, st, &t, l, dims, transposed, b.get("output_size"), span), &t),
        Module::Pool { dims, max } => layout::contiguous_if(pool::call(cx, st, &t, l, dims, max, span), &t),
        Module::AdaptivePool { dims, max } => layout::contiguous_if(pool::call_adaptive(cx, st, &t, l, dims, max, span), &t),
        Module::Unfold => fold::call(cx, st, &t, l, false, span),
        Module::Fold => fold::call(cx, st, &t, l, true, span),
        Module::BatchNorm { dims } => norm::call_batch_norm(cx, st, &t, l, dims, span),
        Module::InstanceNorm { dims } => norm::call_instance_norm(cx, st, &t, l, dims, span),
        Module::LayerNorm => norm::call_layer_norm(cx, st, &t, l, span),
        Module::GroupNorm => norm::call_group_norm(cx, st, &t, l, span),
        Module::Embedding => linear::call_embedding(cx, st, &t, l, span),
        Module::EmbeddingBag => linear::call_embedding_bag(cx, st, &t, l, &b, span),
        Module::Flatten => activation::call_flatten(cx, st, &t, l, span),
        Module::Unflatten => activation::call_unflatten(cx, st, &t, l, span),
        Module::Pad { dims, mode } => resample::call_pad(cx, st, &t, l, dims, mode, span),
        Module::PixelShuffle { unshuffle } => resample::call_pixel_shuffle(cx, st, &t, l, unshuffle, span),
        Module::Upsample { mode } => resample::call_upsample(cx, st, &t, l, mode, span),
        Module::PReLU => activation::prelu(cx, st, &t, l, span),
        Module::Glu => activation::glu_dim(cx, st, &t, l.args.get("dim"), &format!("{}GLU", layer_name(l)), span),
        Module::Softmax => activation::softmax(cx, st, &t, l.args.get("dim"), &l.kind, span),
        Module::Elementwise => vec![(st, Value::Tensor(t))],
        Module::Dropout1d => activation::dropout1d(cx, st, &t, &format!("{}Dropout1d", layer_name(l)), span),
        Module::FeatureDropout { dims } => {
            let training = if is_training(l, span) { Some(true) } else { None };
            activation::feature_dropout(cx, st, &t, dims, l.args.get("p"), training, &format!("{}{}", layer_name(l), l.kind), span)
        }
        Module::Loss(kind) => losses::call_module(cx, st, kind, l, api, &b, span),
        Module::Recurrent(which) => recurrent::rnn(cx, st, &t, l, which, &b, span),
        Module::Cell(which) => recurrent::cell(cx, st, &t, l, which, &b, span),
        Module::MultiheadAttention => attention::mha(cx, st, l, &b, span),
        Module::TransformerEncoderLayer => attention::encoder_layer(cx, st, l, &b, span),
        Module::TransformerDecoderLayer => attention::decoder_layer(cx, st, l, &b, span),
        Module::Transformer => attention::transformer(cx, st, l, &b, span),
        Module::TransformerStack => attention::stack(cx, st, l, args, kwargs, span),
        Module::Container(_) | Module::Parameter | Module::Wrapper => vec![(st, Value::Unknown)],
    }
}

/// `torch.nn.functional.x(...)`.
pub fn functional(cx: &mut dyn ModelCtx, st: State, f: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Some((api, Model::Function(k))) = resolve("torch.nn.functional", f) else { return vec![(st, Value::Unknown)] };
    if !api.accepts(&args, &kwargs) {
        return vec![(st, Value::Unknown)];
    }
    let Some(Value::Tensor(t)) = args.first() else { return vec![(st, Value::Unknown)] };
    let t = t.clone();
    // strides (`layout.rs`): a function handing back its input does not always keep them
    let out = call_function(cx, st, f, k, api, &t, args, kwargs, span);
    layout::forget_permuted(out, &t)
}

#[allow(clippy::too_many_arguments)]
fn call_function(cx: &mut dyn ModelCtx, st: State, f: &str, k: Function, api: &'static Api, t: &Rc<Tensor>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let t = t.clone();
    let b = bind(&api.params, &args, &kwargs);
    let what = format!("F.{f}");
    match k {
        Function::Elementwise if f == "hardtanh" => activation::hardtanh(cx, st, t, b.get("min_val"), b.get("max_val"), span),
        Function::Elementwise => vec![(st, Value::Tensor(t))],
        Function::Dropout1d => activation::dropout1d(cx, st, &t, &what, span),
        Function::FeatureDropout { dims } => {
            let training = match b.get("training") {
                None => Some(true),
                Some(Value::Bool(x)) => Some(*x),
                Some(_) => None,
            };
            activation::feature_dropout(cx, st, &t, dims, b.get("p"), training, &what, span)
        }
        Function::Softmax => activation::softmax(cx, st, &t, b.get("dim"), f, span),
        Function::Normalize => activation::normalize(cx, st, &t, b.get("dim"), span),
        Function::Glu => activation::glu_dim(cx, st, &t, b.get("dim"), &what, span),
        Function::Linear => layout::contiguous(linear::functional(cx, st, &t, &b, span)),
        Function::Bilinear => linear::functional_bilinear(cx, st, &t, &b, span),
        Function::Embedding => linear::functional_embedding(cx, st, &t, &b, span),
        Function::EmbeddingBag => linear::functional_embedding_bag(cx, st, &t, &b, span),
        Function::OneHot => linear::one_hot(cx, st, &t, &b, span),
        Function::Conv { dims, transposed } => layout::contiguous_if(conv::functional(cx, st, &t, dims, transposed, &b, &what, span), &t),
        Function::Pool { dims, max } => layout::contiguous_if(pool::functional(cx, st, &t, dims, max, &b, &format!("{what} ({})", twin_name(api)), span), &t),
        Function::AdaptivePool { dims, max } => layout::contiguous_if(pool::functional_adaptive(cx, st, &t, dims, max, &b, &what, span), &t),
        Function::Unfold => fold::functional(cx, st, &t, false, &b, &what, span),
        Function::Fold => fold::functional(cx, st, &t, true, &b, &what, span),
        Function::BatchNorm => norm::functional_batch_norm(cx, st, &t, &b, span),
        Function::InstanceNorm => norm::functional_instance_norm(cx, st, &t, &b, span),
        Function::LayerNorm => norm::functional_layer_norm(cx, st, &t, &b, span),
        Function::GroupNorm => norm::functional_group_norm(cx, st, &t, &b, span),
        Function::Pad => resample::functional_pad(cx, st, &t, &b, span),
        Function::PixelShuffle { unshuffle } => resample::functional_pixel_shuffle(cx, st, &t, unshuffle, &b, &what, span),
        Function::Interpolate => resample::functional_interpolate(cx, st, &t, &b, &what, span),
        Function::ScaledDotProductAttention => attention::sdpa(cx, st, &b, span),
        Function::Loss(kind) => losses::functional(cx, st, kind, api, &b, &format!("{what} {}", twin_name(api)), span),
    }
}

/// What the origins of a layer's or a function's output sizes name (`value::Origin::Output`'s
/// `by`): the layer's label of `what` (`conv1 (line 9)` of `conv1 (line 9): Conv2d`), else the
/// layer's type or the function (`Conv2d`, `F.max_pool2d` of `F.max_pool2d (line 4)`).
pub(in crate::models::torch) fn made_by(what: &str) -> Rc<str> {
    let by = match what.split_once(": ") {
        Some((label, _)) => label,
        None => what.split(" (").next().unwrap_or(what),
    };
    Rc::from(by)
}

/// The label of a layer for messages ("fc2 (line 20): "), or nothing.
pub(super) fn layer_name(l: &Layer) -> String {
    match &l.label {
        Some(lbl) => format!("{lbl}: "),
        None => String::new(),
    }
}

/// Was this layer built inside the expression that calls it (`nn.BatchNorm1d(4)(x)`)? Then it
/// is certainly in training mode.
fn is_fresh(l: &Layer, span: Span) -> bool {
    l.span.start >= span.start && l.span.end <= span.end && l.span != span
}

/// Is this layer certainly in training mode at this call? Switched to it by a `.train()` of
/// its own or of a module that holds it, on this path (`models::set_training`), or built in
/// the calling expression and not switched by `.eval()`/`.train(False)` (or a `.train(mode)`
/// of unknown mode) on the way. A layer whose mode was never set (a `forward` checked on its
/// own, a model built elsewhere) is not taken to be in training.
pub(in crate::models::torch) fn is_training(l: &Layer, span: Span) -> bool {
    match l.attrs.get("training") {
        Some(Value::Bool(b)) => *b,
        None => is_fresh(l, span),
        Some(_) => false,
    }
}

/// An optional tensor argument the model does not check itself (`bias`, `weight`): absent or
/// None, or a tensor that certainly has the shape `want` (torch accepts it). Otherwise the
/// caller is Unknown.
fn optional_exact(cx: &dyn ModelCtx, st: &State, v: Option<&Value>, want: &[Dim]) -> bool {
    match v {
        None | Some(Value::None) => true,
        Some(Value::Tensor(t)) => {
            let s = st.resolve(&t.shape);
            s.rank() == Some(want.len()) && s.dims.iter().zip(want).all(|(a, b)| cx.dim_eq(st, a, b) == Tri::True)
        }
        _ => false,
    }
}

/// A number argument (`eps`, `margin`, `dropout`, `min_val`) when its value is known: an int
/// or a float (a bool is an int to Python's comparisons).
pub(in crate::models::torch) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Float(f) => *f,
        v => v.as_const_int().map(|i| i as f64),
    }
}

/// A known number as Python shows it (`1.0`, `-1`, `0.5`), for messages.
pub(in crate::models::torch) fn show_number(v: &Value) -> String {
    match v {
        Value::Float(Some(f)) if f.is_finite() && f.fract() == 0.0 => format!("{f:.1}"),
        Value::Float(Some(f)) => format!("{f}"),
        Value::Bool(b) => if *b { "True".into() } else { "False".into() },
        v => v.as_const_int().map(|i| i.to_string()).unwrap_or_else(|| "?".into()),
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

/// Output sizes of a conv or pool must be at least 1.
fn check_spatial(cx: &mut dyn ModelCtx, st: &State, out: &[Option<Poly>], inp: &[Dim], what: &str, span: Span) -> bool {
    for o in out {
        let Some(o) = o else { continue };
        let violated = Formula::cmp(o, Rel::Lt, &Poly::constant(1));
        if !cx.check(st, span, violated, |cx| {
            let os = o.display(cx.syms());
            let ins: Vec<String> = inp.iter().map(|d| cx.show_dim(d)).collect();
            let outs: Vec<String> = out.iter().map(|o| o.as_ref().map(|p| p.display(cx.syms())).unwrap_or("?".into())).collect();
            let (ins, outs) = (ins.join("x"), outs.join("x"));
            (OutputSizeTooSmall::TooSmall { op: what.into(), input: ins, output: outs, size: os }, Vec::new())
        }) {
            return false;
        }
    }
    true
}

/// Make sure a tensor's rank is one of `ranks`, refining an unknown-rank input by this first
/// use: each allowed rank becomes a path (an opaque choice when there are several), with the
/// dims `fixed` (aligned right) set to what the layer expects and the others fresh. `prefix`
/// starts the message (`"conv1 (line 4): Conv2d: "`).
#[allow(clippy::too_many_arguments)]
pub(super) fn require_rank(cx: &mut dyn ModelCtx, st: State, t: &Tensor, ranks: &[usize], names: &[&str], fixed: &[(usize, Option<Poly>)], span: Span, prefix: &str) -> Vec<(State, Shape)> {
    let s = st.resolve(&t.shape);
    match s.rank() {
        Some(r) => {
            let want: Vec<String> = ranks.iter().map(|r| format!("{r}-D")).collect();
            let want = want.join(" or ");
            if !cx.check(&st, span, Tri::from_bool(!ranks.contains(&r)), |cx| {
                let shown = cx.show_shape(&st, &s);
                (LayerInputRankMismatch::Expected { prefix: prefix.into(), want, rank: r.to_string(), shape: shown }, Vec::new())
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
                        Some(v) => {
                            cx.fixed_by(var, i, span);
                            Dim::known(v, None)
                        }
                        None => cx.refine_dim(var, i, name),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_registered_once_under_its_prefix() {
        for e in TABLES.iter().flat_map(|t| t.iter()) {
            let (prefix, last) = e.decl.name.rsplit_once('.').unwrap();
            assert!(prefix == "torch.nn" || prefix == "torch.nn.functional", "{}", e.decl.name);
            assert!(matches!(e.model, Model::Function(_)) == (prefix == "torch.nn.functional"), "{}: a function's model under torch.nn.functional, a module's under torch.nn", e.decl.name);
            let (api, model) = resolve(prefix, last).unwrap_or_else(|| panic!("{} is not registered", e.decl.name));
            assert_eq!(api.name, e.decl.name);
            assert_eq!(model, e.model);
        }
        assert_eq!(models().len(), APIS.len(), "a name is declared twice");
    }

    #[test]
    fn twins_are_declared() {
        for d in APIS {
            if let Some(t) = d.twin {
                assert!(registry::lookup(t).is_some(), "{}: twin {t} is not declared", d.name);
            }
        }
    }

    #[test]
    fn binding_follows_the_signature() {
        let api = registry::lookup("torch.nn.Conv2d").unwrap();
        let b = bind(&api.params, &[Value::int(3), Value::int(8), Value::int(3)], &[(Name::from("padding"), Value::int(1))]);
        assert_eq!(b.keys().copied().collect::<Vec<_>>(), ["in_channels", "kernel_size", "out_channels", "padding"]);
        assert!(!api.accepts(&[], &[(Name::from("dtype"), Value::None)]), "an undeclared keyword is not read");
    }
}
