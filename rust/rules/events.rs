//! Engine events, delivered to the rules that subscribe to them.
//!
//! Most rules are preconditions of a torch API and live in that API's model, which records
//! them through `ModelCtx::check`. A rule about the program around the model (the training
//! loop, autograd, a loss that only warns) has no model of its own: it is a [`Subscriber`] in
//! its rule file. The engine delivers each [`Event`] on each path, with that path's `State`,
//! to the subscribers of the enabled rules (ruff's deferred checks with `is_rule_enabled`),
//! and a subscriber reports through its [`RuleCtx`].
//!
//! Events, in the order the engine meets them on a path:
//! - [`Event::ApiCall`]: a library API (a function, a tensor method, a module call) returned
//!   on this path; it carries the receiver, the arguments and the result;
//! - [`Event::Backward`]: `tensor.backward()` was called;
//! - [`Event::AttrStore`]: `object.attr = value`;
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

#[derive(Debug)]
pub enum Event<'a> {
    ApiCall(ApiCall<'a>),
    Backward { tensor: &'a Value, span: Span },
    AttrStore { object: &'a Value, attr: &'a str, value: &'a Value, span: Span },
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
            Event::LoopBackEdge { .. } => EventKind::LoopBackEdge,
            Event::FunctionExit { .. } => EventKind::FunctionExit,
        }
    }
}

/// What a subscriber may ask of the engine.
pub trait RuleCtx {
    fn syms(&self) -> &Symbols;
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
pub static SUBSCRIBERS: &[&dyn Subscriber] = &[&super::may_fail::loss_target_broadcast::Check];
