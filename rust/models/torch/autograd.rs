//! Which tensors autograd records (`Tensor::grad`), for `backward()` on a tensor without a
//! graph (SHP309, `rules/training/backward_without_graph.rs`).
//!
//! The dispatch sets the grad of every result of a torch call ([`stamp`]): while autograd is off
//! on the path (`State::grad_mode`: `with torch.no_grad()`, `@torch.no_grad()`,
//! `torch.inference_mode()`) a result is untracked; `detach()` gives an untracked tensor; an
//! integer or bool result is never tracked; a creation function's result is tracked only with
//! `requires_grad=True`; any other result is tracked when an input is, untracked when every
//! input is known to be, and unknown otherwise. A layer with parameters counts them as an input
//! of unknown grad (they may be frozen), so its output is tracked only when its input is. What
//! no model stamps (a dataset's batch, a parameter read off a layer) is unknown: never a report.

use std::rc::Rc;

use crate::ir::{Name, Span};
use crate::models::ctx::{ModelCtx, ModelCtxExt};
use crate::rules::training::backward_without_graph::BackwardWithoutGraph;
use crate::shape::Tri;
use crate::value::*;

/// The grad of a result computed from inputs of these grads: tracked when one is, untracked
/// (for the reason of the first untracked one) when all are known to be, unknown otherwise.
pub fn combine(inputs: impl Iterator<Item = Grad>, span: Span) -> Grad {
    let mut why: Option<(NoGrad, Span)> = None;
    let mut unknown = false;
    for g in inputs {
        match g {
            Grad::Tracked => return Grad::Tracked,
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

/// How a call's results relate to autograd.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Source {
    /// computed from these inputs (and, with `params`, from parameters of unknown grad)
    Inputs { params: bool },
    /// a new tensor (a creation function), tracked only with `requires_grad=True`
    Created { requires_grad: Option<bool> },
    /// `x.detach()`
    Detached,
    /// `x.requires_grad_(flag)`
    RequiresGrad(Option<bool>),
}

/// The grad of each tensor among the results (in tuples too).
pub fn stamp(out: Vals, inputs: &[Rc<Tensor>], source: Source, span: Span) -> Vals {
    out.into_iter()
        .map(|(st, v)| {
            let g = grad_of(&st, inputs, source, span);
            // (an integer or bool tensor never requires grad)
            let v = set(v, &|t: &Tensor| if t.dtype.is_some_and(|d| !d.is_floating()) { Grad::Untracked(NoGrad::Constant, span) } else { g });
            (st, v)
        })
        .collect()
}

fn grad_of(st: &State, inputs: &[Rc<Tensor>], source: Source, span: Span) -> Grad {
    match source {
        Source::Detached => return Grad::Untracked(NoGrad::Detached, span),
        Source::RequiresGrad(Some(true)) => return Grad::Tracked,
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
        Source::Created { requires_grad: Some(true) } => Grad::Tracked,
        Source::Created { requires_grad: Some(false) } => Grad::Untracked(NoGrad::Constant, span),
        Source::Created { requires_grad: None } => Grad::Unknown,
        Source::Inputs { params } => combine(inputs.iter().map(|t| t.grad).chain(params.then_some(Grad::Unknown)), span),
        _ => Grad::Unknown,
    }
}

fn set(v: Value, g: &dyn Fn(&Tensor) -> Grad) -> Value {
    match v {
        Value::Tensor(t) => {
            let n = g(&t);
            if t.grad == n { Value::Tensor(t) } else { Value::Tensor(Rc::new(Tensor { grad: n, ..(*t).clone() })) }
        }
        Value::Tuple(items) if items.iter().any(|i| matches!(i, Value::Tensor(_))) => Value::Tuple(Rc::new(items.iter().map(|i| set(i.clone(), g)).collect())),
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

/// SHP309: `t.backward()` on a tensor without a graph: torch raises. False when the path ends.
pub fn check_backward(cx: &mut dyn ModelCtx, st: &State, t: &Tensor, span: Span) -> bool {
    let Grad::Untracked(why, at) = t.grad else { return true };
    let why = match why {
        NoGrad::Mode => format!("computed while gradients were off, since {}", cx.place(at)),
        NoGrad::Detached => format!("detached at {}", cx.place(at)),
        NoGrad::Constant => "computed only from tensors that require no gradient".to_string(),
    };
    cx.check(st, span, Tri::True, |cx| (BackwardWithoutGraph::NoGraph { shape: cx.show_shape(st, &t.shape), why }, Vec::new()))
}
