use crate::rules::events::{Event, EventKind, GradOp, Grads, Gradients, RuleCtx, Subscriber};
use crate::rules::violation::Violation;
use crate::value::State;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP301
pub const RULE: Rule = Rule {
    code: "SHP301",
    name: "stale-gradients",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "backward() adds to gradients an optimizer already stepped with: zero_grad() is missing",
    messages: <StaleGradients as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
Follows each optimizer's gradients through the training loop: `zero_grad()` (of the optimizer,
or `model.zero_grad()`) clears them, `loss.backward()` adds to the gradients of the layers the
loss reaches, `step()` uses them. Reports a `backward()` that adds to gradients the optimizer
has already stepped with and nothing cleared since: the next `step()` applies the old gradients
again. Accumulating over several backward passes before one step is correct and not
reported, nor is zeroing after the step, in a helper, or every k steps.

## Why is this bad?
Nothing raises. PyTorch accumulates gradients into `.grad` until they are cleared, so each
step applies the sum of every gradient since the first: the updates grow, and training
diverges or oscillates. Zeroing once before the loop is the classic form of this bug.

## Example
```python
optimizer.zero_grad()
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()            # SHP301: adds to the gradients of the previous step
    optimizer.step()
```

Use instead:
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## References
- [Zeroing out gradients in PyTorch](https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html)
"#,
};

crate::violation! {
    /// Gradients a step used, not cleared before the next backward.
    pub enum StaleGradients for RULE {
        /// `backward()` into gradients already stepped with.
        Backward { optimizer, stepped } => "backward(): the gradients of {optimizer} were used by the step at {stepped} and never zeroed since: this backward adds to them (call zero_grad() first)",
    }
}

/// The check, reported at the last backward before the step (the one whose gradients the step
/// means to use: the zeroing belongs before it):
/// - a `step()` that finds gradients a backward added to those a step had already used, with
///   nothing zeroing them since;
/// - a loop iteration that stands for all of them and ran a backward and a step, but never
///   zeroed: the next iteration's backward adds to this one's gradients, and its step applies
///   both.
pub struct Check;

impl Subscriber for Check {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn events(&self) -> &'static [EventKind] {
        &[EventKind::Gradients]
    }

    fn on(&self, event: &Event, st: &State, cx: &mut dyn RuleCtx) {
        let Event::Gradients { op, optimizer: g, .. } = event else { return };
        let stale = match op {
            GradOp::Step => g.grads == Some(Grads::Backward) && g.stale.is_some(),
            GradOp::Iteration { began, zeroed_here, .. } => g.grads == Some(Grads::Stepped) && !zeroed_here && began.backward != g.backward,
            _ => false,
        };
        if let (true, Some(b), Some(s)) = (stale, g.backward, g.stepped) {
            report(cx, st, g, b, s);
        }
    }
}

fn report(cx: &mut dyn RuleCtx, st: &State, g: &Gradients, backward: crate::ir::Span, stepped: crate::ir::Span) {
    let v = StaleGradients::Backward { optimizer: super::optimizer_label(cx, g), stepped: cx.place(stepped) };
    cx.warn(st, backward, &RULE, v.message());
}
