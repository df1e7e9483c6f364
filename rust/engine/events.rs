//! Delivering engine events to the enabled rules' subscribers (`rules::events`).
//!
//! The subscribers of each event kind are chosen once per analysis from
//! `rules::events::SUBSCRIBERS` by `Settings::is_enabled`; with none, emitting costs one
//! branch and the arguments are not even kept. Events inside embedded library code (the zoo)
//! are not delivered: they are torchvision's, not the user's.
//!
//! Call summaries (`memo.rs`) replay a call's outcomes without re-running it, so its events
//! are not delivered again. That is sound for the subscribers we have: one that reports records
//! a verdict, which keeps its call from being summarised, and the one that keeps state across
//! events (SHP303's candidates, `rules::training::discarded_gradients`) keeps it for its own
//! warnings, which are such verdicts.

use super::interp::Interp;
use crate::ir::{Name, Span};
use crate::rules::Rule;
use crate::rules::events::{ApiCall, Event, EventKind, RuleCtx, SUBSCRIBERS, Subscriber};
use crate::shape::Symbols;
use crate::value::*;

const KINDS: [EventKind; 6] = [EventKind::ApiCall, EventKind::Backward, EventKind::AttrStore, EventKind::Gradients, EventKind::LoopBackEdge, EventKind::FunctionExit];

/// The enabled subscribers of each event kind.
#[derive(Default)]
pub struct Subscribers {
    by_kind: [Vec<&'static dyn Subscriber>; 6],
}

impl Subscribers {
    pub fn enabled(settings: &crate::Settings, extra: &[&'static dyn Subscriber]) -> Subscribers {
        let mut s = Subscribers::default();
        for sub in SUBSCRIBERS.iter().copied().chain(extra.iter().copied()) {
            if !settings.is_enabled(sub.rule()) {
                continue;
            }
            for (i, k) in KINDS.iter().enumerate() {
                if sub.events().contains(k) {
                    s.by_kind[i].push(sub);
                }
            }
        }
        s
    }

    fn of(&self, kind: EventKind) -> &[&'static dyn Subscriber] {
        &self.by_kind[KINDS.iter().position(|k| *k == kind).unwrap_or(0)]
    }
}

impl Interp<'_> {
    /// Whether any enabled rule wants events of this kind.
    pub fn wants(&self, kind: EventKind) -> bool {
        !self.subscribers.of(kind).is_empty()
    }

    /// Deliver `event` on the path `st` to the subscribers of its kind.
    pub fn emit(&mut self, event: &Event, st: &State, span: Span) {
        if crate::engine::modules::is_embedded(span) {
            return;
        }
        let subs: Vec<&'static dyn Subscriber> = self.subscribers.of(event.kind()).to_vec();
        for s in subs {
            s.on(event, st, self);
        }
    }

    /// Deliver an `ApiCall` for each path on which the call of `name` returned.
    #[allow(clippy::too_many_arguments)]
    pub fn emit_api_call(&mut self, name: &str, receiver: Option<&Value>, args: &[Value], kwargs: &[(Name, Value)], outcomes: &Vals, span: Span) {
        for (st, result) in outcomes {
            let ev = Event::ApiCall(ApiCall { name, receiver, args, kwargs, result, span });
            self.emit(&ev, st, span);
        }
    }
}

impl RuleCtx for Interp<'_> {
    fn syms(&self) -> &Symbols {
        &self.syms
    }

    fn place(&self, span: Span) -> String {
        Interp::place(self, span)
    }

    fn passes(&mut self, st: &State, site: Span) {
        crate::models::ctx::ModelCtx::passes(self, st, site)
    }

    fn warn(&mut self, st: &State, site: Span, rule: &'static Rule, message: String) {
        Interp::warn(self, st, site, rule, message)
    }
}
