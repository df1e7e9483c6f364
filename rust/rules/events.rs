//! Engine events, delivered to the rules that subscribe to them.
//!
//! Most rules are preconditions of a torch API and live in that API's model, which records
//! them through `ModelCtx::check`. A rule about the program around the model (the training
//! loop, autograd, a loss that only warns) has no model of its own: it is a [`Subscriber`] in
//! its rule file. A model tells such rules what happened through an event (the optimizer model
//! delivers [`Event::Gradients`] before each change of an optimizer's gradients), and the rule
//! file judges it. The engine delivers each [`Event`] on each path, with that path's `State`,
//! to the subscribers of the enabled rules (ruff's deferred checks with `is_rule_enabled`),
//! and a subscriber reports through its [`RuleCtx`].
//!
//! Events, in the order the engine meets them on a path:
//! - [`Event::ApiCall`]: a library API (a function, a tensor method, a module call) returned
//!   on this path; it carries the receiver, the arguments and the result;
//! - [`Event::Backward`]: `tensor.backward()` was called;
//! - [`Event::AttrStore`]: `object.attr = value`;
//! - [`Event::Gradients`]: an optimizer's gradients are about to change (`zero_grad()`,
//!   `step()`, clipping), or a loop iteration run once for all of them ended; it carries the
//!   optimizer's [`Gradients`] *before* the change, as `models/torch/optim.rs` follows them;
//! - [`Event::LoopBackEdge`]: one iteration of a loop body ended and the loop goes round;
//! - [`Event::FunctionExit`]: a user function returned.

use crate::ir::{Name, Span};
use crate::rules::Rule;
use crate::shape::Symbols;
use crate::value::{State, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    ApiCall,
    Backward,
    AttrStore,
    Gradients,
    LoopBackEdge,
    FunctionExit,
}

/// A library API call that returned.
#[derive(Debug)]
pub struct ApiCall<'a> {
    /// The qualified name: `torch.nn.functional.mse_loss`, `torch.Tensor.view`, and for a
    /// call of a module object its class, `torch.nn.MSELoss`.
    pub name: &'a str,
    /// The tensor of a method call, the module object of a module call.
    pub receiver: Option<&'a Value>,
    pub args: &'a [Value],
    pub kwargs: &'a [(Name, Value)],
    pub result: &'a Value,
    pub span: Span,
}

/// What an optimizer's gradients hold (`models/torch/optim.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grads {
    /// No backward reached its layers yet.
    None,
    /// `zero_grad()` cleared them.
    Zeroed,
    /// A backward whose loss reaches its layers added to them.
    Backward,
    /// A step used them.
    Stepped,
}

/// One optimizer's gradients on a path, and the places that made them what they are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gradients {
    /// Where the optimizer was built: the same optimizer on every path and iteration.
    pub built: Option<Span>,
    /// `None` when not known (the optimizer was handed to code the core does not follow).
    pub grads: Option<Grads>,
    /// The last `zero_grad()`.
    pub zeroed: Option<Span>,
    /// The last backward that reached its layers.
    pub backward: Option<Span>,
    /// The last `step()`.
    pub stepped: Option<Span>,
    /// The first backward that added to gradients a step had used, when nothing zeroed them
    /// since.
    pub stale: Option<Span>,
}

/// What is about to happen to an optimizer's gradients ([`Event::Gradients`]).
#[derive(Debug)]
pub enum GradOp<'a> {
    /// `optimizer.zero_grad()`, or `model.zero_grad()` of a module that holds all its layers.
    ZeroGrad,
    /// `optimizer.step()` (after its closure ran, for `step(closure)`).
    Step,
    /// `op` (`clip_grad_norm_`, `clip_grad_value_`) at a finite limit, on exactly its layers.
    Clip { op: &'a str },
    /// A loop iteration that stands for all of them ended (`interp/loops.rs`) and goes round:
    /// the optimizer's gradients when it began, whether this path may have zeroed them in it,
    /// and the place where every path of it zeroed them, if one did. The event's gradients are
    /// those it ends with.
    Iteration { began: &'a Gradients, zeroed_here: bool, zeroed_each: Option<Span> },
}

#[derive(Debug)]
pub enum Event<'a> {
    ApiCall(ApiCall<'a>),
    Backward { tensor: &'a Value, span: Span },
    AttrStore { object: &'a Value, attr: &'a str, value: &'a Value, span: Span },
    /// `span` is the call's (the loop's first statement for [`GradOp::Iteration`]).
    Gradients { op: GradOp<'a>, optimizer: &'a Gradients, span: Span },
    /// `span` is the loop statement's.
    LoopBackEdge { span: Span },
    /// `span` is the function definition's.
    FunctionExit { function: &'a str, returned: &'a Value, span: Span },
}

impl Event<'_> {
    pub fn kind(&self) -> EventKind {
        match self {
            Event::ApiCall(_) => EventKind::ApiCall,
            Event::Backward { .. } => EventKind::Backward,
            Event::AttrStore { .. } => EventKind::AttrStore,
            Event::Gradients { .. } => EventKind::Gradients,
            Event::LoopBackEdge { .. } => EventKind::LoopBackEdge,
            Event::FunctionExit { .. } => EventKind::FunctionExit,
        }
    }
}

/// What a subscriber may ask of the engine.
pub trait RuleCtx {
    fn syms(&self) -> &Symbols;
    /// A place in the user's terms: `line 12`, `model.py:10`.
    fn place(&self, span: Span) -> String;
    /// This path reached `site` and passes there (so that a failure at `site` on another path
    /// is reported with its condition).
    fn passes(&mut self, st: &State, site: Span);
    /// Report `rule` at `site` on this path without ending it (the line runs).
    fn warn(&mut self, st: &State, site: Span, rule: &'static Rule, message: String);
}

/// A rule with logic of its own, run on engine events.
pub trait Subscriber: Sync {
    fn rule(&self) -> &'static Rule;
    /// The kinds of event it wants; it is never called for others.
    fn events(&self) -> &'static [EventKind];
    fn on(&self, event: &Event, st: &State, cx: &mut dyn RuleCtx);
}

/// Every subscriber, one per rule that has one.
pub static SUBSCRIBERS: &[&dyn Subscriber] = &[
    &super::may_fail::loss_target_broadcast::Check,
    &super::training::stale_gradients::Check,
    &super::training::discarded_gradients::Check,
    &super::training::clip_order::Check,
];
