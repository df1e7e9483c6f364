use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::ir::Span;
use crate::rules::events::{Event, EventKind, GradOp, Grads, Gradients, RuleCtx, Subscriber};
use crate::rules::violation::Violation;
use crate::value::State;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP303
pub const RULE: Rule = Rule {
    code: "SHP303",
    name: "discarded-gradients",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "zero_grad() between backward() and step(): the step uses no gradients",
    messages: <DiscardedGradients as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
Reports the `zero_grad()` that zeroed an optimizer's gradients after the last `backward()`
that reached its layers and before its `step()`: `zero_grad()` between `backward()` and
`step()`, or zeroing every iteration while stepping only every k iterations. The finding is
at the `zero_grad()`, the statement to move (at the `step()` when the `zero_grad()` is in
another file).

## Why is this bad?
Nothing raises. The step finds every gradient zero (or None): the weights never change
(Adam with weight decay only decays them), and the loss stays where it started.

## Example
```python
loss.backward()
optimizer.zero_grad()         # SHP303: discards the gradients of backward() before the step
optimizer.step()
```

Use instead:
```python
optimizer.zero_grad()
loss.backward()
optimizer.step()
```

## References
- [`torch.optim.Optimizer.zero_grad`](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
"#,
};

crate::violation! {
    /// A step after the gradients of the last backward were zeroed.
    pub enum DiscardedGradients for RULE {
        /// `step()` on zeroed gradients.
        Step { optimizer, step, backward } => "zero_grad(): discards the gradients the backward() at {backward} gave {optimizer} before the step() at {step} uses them: that step uses none (zero the gradients before the backward())",
        /// Zeroed every iteration, stepped every k: the iterations without a step lose theirs.
        Unstepped { optimizer, backward } => "zero_grad(): discards the gradients the backward() at {backward} gave {optimizer} on an iteration that did not step: a step() uses that backward's gradients on other iterations, so they were meant to accumulate (zero the gradients after the step() only)",
    }
}

thread_local! {
    /// The zeroings of gradients no step used yet, by their message: the optimizer (where it
    /// was built) and the backward ([`settled`]).
    static CANDIDATES: RefCell<BTreeMap<String, (Span, Span)>> = const { RefCell::new(BTreeMap::new()) };
}

/// A new program's run begins.
pub(super) fn begin_program() {
    CANDIDATES.with(|c| c.borrow_mut().clear());
}

/// Settle a warning of this rule once the entry has run (`engine::report::settle`): `Some(false)`
/// for a zeroing of gradients that no step of that optimizer ever used, on any path or
/// iteration (it passes); `None` for a warning that was no candidate. `used(built, backward)`:
/// whether a step of the optimizer built at `built` used the gradients of that backward
/// (`models::torch::optim::used`).
pub fn settled(message: &str, used: impl Fn(Span, Span) -> bool) -> Option<bool> {
    let (built, backward) = CANDIDATES.with(|c| c.borrow().get(message).copied())?;
    Some(used(built, backward))
}

/// The check:
/// - a `step()` that finds the gradients of the last backward zeroed since: at the `zero_grad()`
///   (at the `step()` when that is in another file);
/// - a `zero_grad()` that zeroes the gradients of a backward no step used yet, directly or as
///   the next iteration of a loop that zeroes them at one place on every path
///   ([`GradOp::Iteration`]). That alone is no bug (a GAN zeroes the gradients its
///   discriminator's backward gave the generator), so it is a candidate, settled when the entry
///   has run ([`settled`]): reported when a step used that same backward's gradients on another
///   path or iteration (the loop steps every k iterations and zeroes at every one: the gradients
///   it means to accumulate are discarded). Other paths pass there, so the report carries its
///   condition.
pub struct Check;

impl Subscriber for Check {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn events(&self) -> &'static [EventKind] {
        &[EventKind::Gradients]
    }

    fn on(&self, event: &Event, st: &State, cx: &mut dyn RuleCtx) {
        let Event::Gradients { op, optimizer: g, span } = event else { return };
        match op {
            GradOp::Step => {
                if let (Some(Grads::Zeroed), Some(z), Some(b)) = (g.grads, g.zeroed, g.backward) {
                    let v = DiscardedGradients::Step { optimizer: super::optimizer_label(cx, g), step: cx.place(*span), backward: cx.place(b) };
                    let at = if z.file == span.file { z } else { *span };
                    cx.warn(st, at, &RULE, v.message());
                }
            }
            GradOp::ZeroGrad => candidate(cx, st, g, *span),
            GradOp::Iteration { zeroed_each: Some(z), .. } if g.zeroed == Some(*z) => candidate(cx, st, g, *z),
            _ => {}
        }
    }
}

/// The zeroing at `site` of the gradients `g`: a candidate when they are a backward's.
fn candidate(cx: &mut dyn RuleCtx, st: &State, g: &Gradients, site: Span) {
    if let (Some(Grads::Backward), Some(built), Some(b)) = (g.grads, g.built, g.backward) {
        let message = DiscardedGradients::Unstepped { optimizer: super::optimizer_label(cx, g), backward: cx.place(b) }.message();
        CANDIDATES.with(|c| c.borrow_mut().insert(message.clone(), (built, b)));
        cx.warn(st, site, &RULE, message);
    } else {
        cx.passes(st, site);
    }
}
