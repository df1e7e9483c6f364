//! What autograd records of each tensor: whether it is part of a graph (`Tensor::grad`, for
//! `backward()` on a tensor without one, SHP309), and which tensors its graph needs saved and
//! unchanged (`Tensor::saved`, for in-place ops that break them, SHP310).
//!
//! The dispatch sets both on every result of a torch call ([`stamp`]):
//! - **grad.** While autograd is off on the path (`State::grad_mode`: `with torch.no_grad()`,
//!   `@torch.no_grad()`, `torch.inference_mode()`) a result is untracked; `detach()` gives an
//!   untracked tensor; an integer or bool result is never tracked; a creation function's result
//!   is a leaf only with `requires_grad=True` (as `nn.Parameter` and `requires_grad_()` make one);
//!   any other result is tracked when an input is, untracked when every input is known to be,
//!   and unknown otherwise. A layer's parameters require grad unless something on the path may
//!   have frozen some (`State::params_frozen`). What no model stamps (a dataset's batch, a
//!   parameter read off a layer) is unknown: never a report.
//! - **saved.** An op whose backward reads its own output ([`SAVES_OUTPUT`]: `sigmoid`,
//!   `tanh`, `exp`, `softmax`, `relu`, ...) marks a tracked result as saved, by the op's span;
//!   a view of it ([`VIEWS`]) shares that storage; every result needs what its inputs' graphs
//!   need. An in-place op on a saved storage ([`in_place`]) breaks every tensor on the path
//!   whose graph needs it, and `backward()` on a broken one raises. An in-place op on a leaf
//!   that requires grad raises outside `no_grad`.

use std::rc::Rc;

use crate::ir::{Name, Span};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::rules::training::backward_freed_graph::BackwardFreedGraph;
use crate::rules::training::backward_without_graph::BackwardWithoutGraph;
use crate::rules::training::inplace_modifies_saved::InplaceModifiesSaved;
use crate::shape::Tri;
use crate::value::*;

/// The ops whose backward reads their output: a tracked result is saved.
pub const SAVES_OUTPUT: &[&str] = &[
    "sigmoid", "tanh", "exp", "softmax", "log_softmax", "relu", "sqrt", "rsqrt", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "ReLU",
];

/// The ops whose backward reads a tensor they saved (an input, their output, a mask): a
/// backward through their node after another freed the graph raises ("Trying to backward
/// through the graph a second time", SHP314). Each is proven against torch
/// (`tests/test_autograd.py`); the ops that save only sizes or scalars (`+`, `-`, `sum`,
/// `mean`, `view`, `cat`, basic indexing) are not here.
pub const SAVES_TENSORS: &[&str] = &[
    // layers
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Embedding", "LSTM", "GRU", "RNN",
    "LSTMCell", "GRUCell", "RNNCell", "LayerNorm", "GroupNorm", "ReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "LeakyReLU", "GELU", "MSELoss", "L1Loss",
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "SmoothL1Loss",
    // functions and methods
    "linear", "conv1d", "conv2d", "conv3d", "matmul", "mm", "bmm", "mul", "div", "pow", "exp", "log", "sigmoid", "tanh", "relu", "softmax", "log_softmax",
    "sqrt", "rsqrt", "abs", "sin", "cos", "mse_loss", "l1_loss", "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "smooth_l1_loss", "leaky_relu", "gelu", "norm", "embedding",
    // operators (`device::around_binop`)
    "`*`", "`/`", "`@`", "`**`",
];

/// The ops whose result is a view of their input (sharing its storage and version): an
/// in-place op on the result changes the input. (`reshape`, `flatten` and `contiguous` may copy:
/// not counted, which can only miss a report.)
pub const VIEWS: &[&str] = &[
    "view", "view_as", "transpose", "permute", "t", "T", "mT", "squeeze", "unsqueeze", "expand", "expand_as", "narrow", "select", "unflatten", "detach", "swapaxes", "movedim",
    "<basic index>",
];

/// The grad of a result computed from inputs of these grads: tracked when one is, untracked
/// (for the reason of the first untracked one) when all are known to be, unknown otherwise.
pub fn combine(inputs: impl Iterator<Item = Grad>, span: Span) -> Grad {
    let mut why: Option<(NoGrad, Span)> = None;
    let mut unknown = false;
    for g in inputs {
        match g {
            Grad::Tracked | Grad::Leaf => return Grad::Tracked,
            Grad::Unknown => unknown = true,
            Grad::Untracked(w, s) => {
                if why.is_none_or(|(c, _)| c == NoGrad::Constant && w != NoGrad::Constant) {
                    why = Some((w, s));
                }
            }
        }
    }
    match why {
        _ if unknown => Grad::Unknown,
        Some((w, s)) => Grad::Untracked(w, s),
        None => Grad::Untracked(NoGrad::Constant, span),
    }
}

/// A library layer's hidden attribute: whether its parameters require grad, set by
/// `module.requires_grad_(flag)` on a module that holds it (and by `for p in
/// module.parameters(): p.requires_grad = flag`): `Bool(flag)`, or Unknown (a flag not known).
/// Absent: they do (unless `State::params_frozen`: something may have frozen any of them).
pub const REQUIRES_GRAD: &str = "<requires_grad>";

/// Whether the parameters of this layer require grad (`None`: not known).
pub fn layer_requires_grad(st: &State, l: &Layer) -> Option<bool> {
    match l.attrs.get(REQUIRES_GRAD) {
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => None,
        None if st.params_frozen => None,
        None => Some(true),
    }
}

/// How a call's results relate to autograd.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Source {
    /// computed from the inputs (and, with `params`, from the parameters of a layer)
    Inputs { params: bool },
    /// computed from the inputs and from the parameters of a layer, which require grad or not
    /// (`None`: not known; [`layer_requires_grad`])
    Layer { requires_grad: Option<bool> },
    /// a new tensor (a creation function), a leaf only with `requires_grad=True`
    Created { requires_grad: Option<bool> },
    /// `x.detach()`
    Detached,
    /// `x.requires_grad_(flag)`
    RequiresGrad(Option<bool>),
}

/// The grad and the saved tensors of each tensor among the results (in tuples too) of the op
/// `name` (a function's or method's last name, a layer's class, `<basic index>`). Only in a
/// program that calls `backward` (`device::follows_autograd`): elsewhere every grad stays
/// unknown.
pub fn stamp(out: Vals, inputs: &[Rc<Tensor>], source: Source, name: &str, span: Span) -> Vals {
    stamp_layer(out, inputs, source, name, None, None, span)
}

/// Whether some argument of a call is a value the core does not follow ([`unfollowed`]).
pub fn any_unfollowed<'v>(mut args: impl Iterator<Item = &'v Value>) -> bool {
    args.any(|a| matches!(a, Value::Unknown))
}

/// Results computed from an argument the core does not follow (`Value::Unknown`: a loss's
/// target read from data it cannot read) may carry that argument's graph: a recorded result
/// reaches layers its saved set does not name (`Saved::layers_lost`), so a backward through
/// it leaves the other optimizers' gradients unknown; one computed otherwise only from
/// constants may be recorded after all (its grad is not known).
pub fn unfollowed(out: Vals, unfollowed: bool) -> Vals {
    if !unfollowed {
        return out;
    }
    out.into_iter()
        .map(|(st, v)| {
            let v = set(v, &|t: &Tensor| {
                // (computed from constants it knows of, and from that argument, which may
                // require grad: not known, unless autograd was off)
                if matches!(t.grad, Grad::Untracked(NoGrad::Constant, _)) {
                    return (Grad::Unknown, None);
                }
                if !matches!(t.grad, Grad::Tracked | Grad::Leaf) {
                    return (t.grad, t.saved.clone());
                }
                let mut s = t.saved.as_deref().cloned().unwrap_or_default();
                s.layers_lost = true;
                (t.grad, Some(Rc::new(s)))
            });
            (st, v)
        })
        .collect()
}

/// [`stamp`] for the call of the library layer built at `built`, whose parameters the
/// results' graph reaches when `layer` (its span) is given.
pub fn stamp_layer(out: Vals, inputs: &[Rc<Tensor>], source: Source, name: &str, layer: Option<Span>, built: Option<Span>, span: Span) -> Vals {
    // (a program that calls no backward has nothing for these facts to decide)
    if !super::device::follows_autograd() {
        return out;
    }
    out.into_iter()
        .map(|(mut st, v)| {
            let mut g = grad_of(&st, inputs, source, span);
            // (a view of a leaf that requires grad is one for in-place ops: torch raises there too)
            if g == Grad::Tracked && name != "detach" && VIEWS.contains(&name) && inputs.first().is_some_and(|t| matches!(t.grad, Grad::Leaf)) {
                g = Grad::Leaf;
            }
            // a node that saves tensors (SHP314), once per evaluation of the op on the path
            let node = g == Grad::Tracked && SAVES_TENSORS.contains(&name) && has_floating(&v);
            // (the members of an `nn.Sequential` share its call's span: each is named by where
            // it was built as well)
            let key = (span, built.unwrap_or_default());
            if node {
                st.make_node(key);
            }
            let saved = saved_of(inputs, g, name, layer, node.then_some(key), span);
            let untracked = saved.as_ref().map(|s| Rc::new(Saved { nodes: Vec::new(), freed: None, ..(**s).clone() }));
            // (an integer or bool tensor never requires grad, and has no graph to free)
            let v = set(v, &|t: &Tensor| {
                if t.dtype.is_some_and(|d| !d.is_floating()) { (Grad::Untracked(NoGrad::Constant, span), untracked.clone()) } else { (g, saved.clone()) }
            });
            (st, v)
        })
        .collect()
}

fn grad_of(st: &State, inputs: &[Rc<Tensor>], source: Source, span: Span) -> Grad {
    match source {
        Source::Detached => return Grad::Untracked(NoGrad::Detached, span),
        Source::RequiresGrad(Some(true)) => return Grad::Leaf,
        Source::RequiresGrad(Some(false)) => return Grad::Untracked(NoGrad::Detached, span),
        Source::RequiresGrad(None) => return Grad::Unknown,
        _ => {}
    }
    match st.grad_mode {
        GradMode::Off(at) => return Grad::Untracked(NoGrad::Mode, at),
        GradMode::Unknown => return Grad::Unknown,
        GradMode::On => {}
    }
    match source {
        Source::Created { requires_grad: Some(true) } => Grad::Leaf,
        Source::Created { requires_grad: Some(false) } => Grad::Untracked(NoGrad::Constant, span),
        Source::Created { requires_grad: None } => Grad::Unknown,
        Source::Inputs { params } => {
            let p = if st.params_frozen { Grad::Unknown } else { Grad::Tracked };
            combine(inputs.iter().map(|t| t.grad).chain(params.then_some(p)), span)
        }
        Source::Layer { requires_grad } => {
            let p = match requires_grad {
                Some(true) => Some(Grad::Tracked),
                Some(false) => None,
                None => Some(Grad::Unknown),
            };
            combine(inputs.iter().map(|t| t.grad).chain(p), span)
        }
        _ => Grad::Unknown,
    }
}

/// Whether a result holds a tensor that may be floating (one autograd can record).
fn has_floating(v: &Value) -> bool {
    match v {
        Value::Tensor(t) => t.dtype.is_none_or(|d| d.is_floating()),
        Value::Tuple(items) => items.iter().any(has_floating),
        _ => false,
    }
}

/// What a result of `name` computed from `inputs` needs saved, when it is known to be tracked
/// (`node`: the op made a graph node that saves tensors, named by this span).
fn saved_of(inputs: &[Rc<Tensor>], g: Grad, name: &str, layer: Option<Span>, node: Option<Node>, span: Span) -> Option<Rc<Saved>> {
    let view = VIEWS.contains(&name);
    let mut s = Saved::default();
    for t in inputs {
        if let Some(i) = &t.saved {
            for n in &i.needs {
                if !s.needs.contains(n) && s.needs.len() < Saved::MAX {
                    s.needs.push(*n);
                }
            }
            s.broken = s.broken.or(i.broken);
            add_layers(&mut s, &i.layers);
            s.layers_lost |= i.layers_lost;
            // (the graph of a result goes through the nodes of its recorded inputs)
            if matches!(t.grad, Grad::Tracked | Grad::Leaf) {
                add_nodes(&mut s, &i.nodes);
                s.freed = s.freed.or(i.freed);
            }
        }
    }
    if let Some(n) = node {
        add_nodes(&mut s, &[n]);
    }
    if let Some(l) = layer
        && matches!(g, Grad::Tracked | Grad::Leaf)
    {
        add_layers(&mut s, &[l]);
    }
    // a leaf that requires grad (a raw nn.Parameter) is a parameter of no layer the set names
    if inputs.iter().any(|t| matches!(t.grad, Grad::Leaf)) {
        s.layers_lost = true;
    }
    // a tensor autograd does not record has no graph: it needs nothing and reaches no layer
    // (`fake.detach()`); its storage stays what it is
    if matches!(g, Grad::Untracked(..)) {
        s.needs.clear();
        s.layers.clear();
        s.layers_lost = false;
        s.broken = None;
        s.nodes.clear();
        s.freed = None;
    }
    if view {
        // (a view of a saved tensor is that storage; `detach()` shares it too)
        s.storage = inputs.first().and_then(|t| t.saved.as_ref()).and_then(|i| i.storage);
    } else if matches!(g, Grad::Tracked | Grad::Leaf) && SAVES_OUTPUT.contains(&name) {
        s.storage = Some(span);
        if s.needs.len() < Saved::MAX && !s.needs.contains(&span) {
            s.needs.push(span);
        }
    }
    (s != Saved::default()).then(|| Rc::new(s))
}

fn add_nodes(s: &mut Saved, nodes: &[Node]) {
    for n in nodes {
        if !s.nodes.contains(n) && s.nodes.len() < Saved::MAX {
            s.nodes.push(*n);
        }
    }
}

fn add_layers(s: &mut Saved, layers: &[Span]) {
    for l in layers {
        if !s.layers.contains(l) {
            if s.layers.len() < Saved::MAX_LAYERS {
                s.layers.push(*l);
            } else {
                s.layers_lost = true;
            }
        }
    }
}

fn set(v: Value, f: &dyn Fn(&Tensor) -> (Grad, Option<Rc<Saved>>)) -> Value {
    match v {
        Value::Tensor(t) => {
            let (g, s) = f(&t);
            if t.grad == g && std::mem::discriminant(&t.grad) == std::mem::discriminant(&g) && t.saved == s {
                Value::Tensor(t)
            } else {
                Value::Tensor(Rc::new(Tensor { grad: g, saved: s, ..(*t).clone() }))
            }
        }
        Value::Tuple(items) if items.iter().any(|i| matches!(i, Value::Tensor(_))) => Value::Tuple(Rc::new(items.iter().map(|i| set(i.clone(), f)).collect())),
        v => v,
    }
}

/// The `requires_grad=` argument of a creation call: `Some(false)` when absent.
pub fn requires_grad_arg(kwargs: &[(Name, Value)]) -> Option<bool> {
    match kwargs.iter().find(|(k, _)| &**k == "requires_grad").map(|(_, v)| v) {
        None => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => None,
    }
}

/// The grad mode a context manager value sets (`torch.no_grad()` and its kin are
/// [`mode_value`]s): `Some(None)` for a mode not known.
pub fn mode_of(v: &Value) -> Option<Option<bool>> {
    match v {
        Value::LibMethod(inner, name) if &**name == MODE => Some(match **inner {
            Value::Bool(b) => Some(b),
            _ => None,
        }),
        _ => None,
    }
}

const MODE: &str = "<grad_mode>";

/// The value of `torch.no_grad()` (`enabled` false), `torch.enable_grad()` (true),
/// `torch.set_grad_enabled(mode)`, `torch.inference_mode(mode)`: a context manager that sets
/// the grad mode of its body (`None`: a mode not known).
pub fn mode_value(enabled: Option<bool>) -> Value {
    Value::LibMethod(Box::new(enabled.map(Value::Bool).unwrap_or(Value::Unknown)), Rc::from(MODE))
}

/// The mode a path is in with grads `enabled` since `at`.
pub fn mode(enabled: Option<bool>, at: Span) -> GradMode {
    match enabled {
        Some(true) => GradMode::On,
        Some(false) => GradMode::Off(at),
        None => GradMode::Unknown,
    }
}

/// The in-place ops on a tensor that change no values (`x.requires_grad_()`).
pub fn changes_values(name: &str) -> bool {
    name.ends_with('_') && !matches!(name, "requires_grad_" | "detach_" | "share_memory_" | "retain_grad")
}

/// An in-place op `op` at `span` writes into `target` (`x.mul_(m)`, `x += 1`, `x[i] = v`):
/// on a leaf that requires grad outside `no_grad` torch raises (SHP310, false: the path ends);
/// on a saved storage, every tensor of the path whose graph needs it is broken, and the
/// returned tensor is `target` broken too (it needs it as well).
pub fn in_place(cx: &mut dyn ModelCtx, st: &mut State, op: &str, target: &Rc<Tensor>, span: Span) -> Option<Rc<Tensor>> {
    // (grads are followed only where `stamp` runs: `device::follows_autograd`)
    if target.grad == Grad::Leaf && st.grad_mode == GradMode::On && super::device::follows_autograd() {
        let op = op.to_string();
        cx.check(st, span, Tri::True, |cx| (InplaceModifiesSaved::Leaf { op, shape: cx.show_shape(st, &target.shape) }, Vec::new()));
        return None;
    }
    let Some(at) = target.saved.as_ref().and_then(|s| s.storage) else { return Some(target.clone()) };
    st.break_saved(at, span);
    let mut s = (**target.saved.as_ref().unwrap_or(&Rc::new(Saved::default()))).clone();
    s.broken = s.broken.or(Some((span, at)));
    Some(Rc::new(Tensor { saved: Some(Rc::new(s)), ..(**target).clone() }))
}

/// The results of an in-place op carry what its target needs, and its breakage (`written`: the
/// target as [`in_place`] left it).
pub fn written(out: Vals, w: &Tensor) -> Vals {
    let Some(ws) = &w.saved else { return out };
    out.into_iter()
        .map(|(st, v)| {
            let v = set(v, &|t: &Tensor| {
                let mut s = t.saved.as_deref().cloned().unwrap_or_default();
                for n in &ws.needs {
                    if !s.needs.contains(n) && s.needs.len() < Saved::MAX {
                        s.needs.push(*n);
                    }
                }
                s.storage = s.storage.or(ws.storage);
                s.broken = s.broken.or(ws.broken);
                if matches!(w.grad, Grad::Tracked | Grad::Leaf) {
                    add_nodes(&mut s, &ws.nodes);
                    s.freed = s.freed.or(ws.freed);
                }
                (t.grad, Some(Rc::new(s)))
            });
            (st, v)
        })
        .collect()
}

/// SHP309 and SHP310 at `t.backward()`: a tensor without a graph, or whose graph an in-place op
/// broke: torch raises. False when the path ends.
pub fn check_backward(cx: &mut dyn ModelCtx, st: &State, t: &Tensor, span: Span) -> bool {
    if let Some((freed_at, node)) = t.saved.as_ref().and_then(|s| s.freed)
        && matches!(t.grad, Grad::Tracked | Grad::Leaf)
    {
        let again = if freed_at == span { " (in an earlier iteration)" } else { "" };
        let (freed_at, node) = (format!("{}{again}", cx.place(freed_at)), cx.place(node.0));
        return cx.check(st, span, Tri::True, |_| (BackwardFreedGraph::Freed { node, freed_at }, Vec::new()));
    }
    if let Some((modified, saved)) = t.saved.as_ref().and_then(|s| s.broken)
        && matches!(t.grad, Grad::Tracked | Grad::Leaf)
    {
        let (modified, saved_by) = (cx.place(modified), format!("at {}", cx.place(saved)));
        return cx.check(st, span, Tri::True, |cx| (InplaceModifiesSaved::Saved { shape: cx.show_shape(st, &t.shape), modified, saved_by }, Vec::new()));
    }
    let Grad::Untracked(why, at) = t.grad else { return true };
    let why = match why {
        NoGrad::Mode => format!("computed while gradients were off, since {}", cx.place(at)),
        NoGrad::Detached => format!("detached at {}", cx.place(at)),
        NoGrad::Constant => "computed only from tensors that require no gradient".to_string(),
    };
    cx.check(st, span, Tri::True, |cx| (BackwardWithoutGraph::NoGraph { shape: cx.show_shape(st, &t.shape), why }, Vec::new()))
}

/// What `t.backward(...)` at `span` frees, unless `retain_graph` (or `create_graph`) is true:
/// the saved tensors of every node of its graph. The nodes its span names alone
/// (`State::made`) are marked freed in every tensor of the path whose graph goes through them
/// (SHP314 at a later `backward()` through one).
pub fn free_after_backward(st: &mut State, t: &Tensor, args: &[Value], kwargs: &[(Name, Value)], span: Span) {
    let flag = |name: &str, pos: usize| kwargs.iter().find(|(k, _)| &**k == name).map(|(_, v)| v).or(args.get(pos));
    let create = match flag("create_graph", 2) {
        None | Some(Value::None) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return,
    };
    let retain = match flag("retain_graph", 1) {
        None | Some(Value::None) => create,
        Some(Value::Bool(b)) => *b,
        Some(_) => return,
    };
    // (with `inputs=` only the nodes on the way to them run and are freed)
    if retain || flag("inputs", 3).is_some_and(|v| !matches!(v, Value::None)) || !matches!(t.grad, Grad::Tracked | Grad::Leaf) {
        return;
    }
    let Some(s) = &t.saved else { return };
    let keys: Vec<Node> = s.nodes.iter().filter(|n| st.made.count(n) == 1).copied().collect();
    if !keys.is_empty() {
        st.free_graph(&keys, span);
    }
}
