use crate::rules::events::{Event, EventKind, GradOp, Grads, RuleCtx, Subscriber};
use crate::rules::violation::Violation;
use crate::value::State;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP304
pub const RULE: Rule = Rule {
    code: "SHP304",
    name: "clip-order",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "Gradient clipping before backward() or after step(): it clips nothing the step uses",
    messages: <ClipOrder as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
Reports `torch.nn.utils.clip_grad_norm_`/`clip_grad_value_` over a model's parameters when
the optimizer of those parameters has no gradient of a `backward()` to clip: after
`zero_grad()` and before `backward()`, or after `step()` and before the next `backward()`.

## Why is this bad?
Nothing raises. Clipping must sit between `backward()` (which makes the gradients) and
`step()` (which uses them); anywhere else the step uses unclipped gradients, and the run can
explode exactly as if clipping were absent.

## Example
```python
loss.backward()
optimizer.step()
clip_grad_norm_(model.parameters(), 1.0)   # SHP304: after the step
```

Use instead:
```python
loss.backward()
clip_grad_norm_(model.parameters(), 1.0)
optimizer.step()
```

## References
- [`torch.nn.utils.clip_grad_norm_`](https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html)
"#,
};

crate::violation! {
    /// Clipping where no gradient of a backward waits for a step.
    pub enum ClipOrder for RULE {
        /// Before `backward()`.
        BeforeBackward { op, optimizer, zeroed } => "{op}: the gradients of {optimizer} were zeroed at {zeroed} and no backward() ran since: clip after backward()",
        /// After `step()`.
        AfterStep { op, optimizer, stepped } => "{op}: the step at {stepped} already used the gradients of {optimizer}: clip before step()",
    }
}

/// The check: clipping ([`GradOp::Clip`], on exactly an optimizer's layers at a finite limit)
/// that finds its gradients zeroed, or already used by a step.
pub struct Check;

impl Subscriber for Check {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn events(&self) -> &'static [EventKind] {
        &[EventKind::Gradients]
    }

    fn on(&self, event: &Event, st: &State, cx: &mut dyn RuleCtx) {
        let Event::Gradients { op: GradOp::Clip { op }, optimizer: g, span } = event else { return };
        let optimizer = super::optimizer_label(cx, g);
        let v = match (g.grads, g.zeroed, g.stepped) {
            (Some(Grads::Zeroed), Some(z), _) => ClipOrder::BeforeBackward { op: op.to_string(), optimizer, zeroed: cx.place(z) },
            (Some(Grads::Stepped), _, Some(s)) => ClipOrder::AfterStep { op: op.to_string(), optimizer, stepped: cx.place(s) },
            _ => return,
        };
        cx.warn(st, *span, &RULE, v.message());
    }
}
