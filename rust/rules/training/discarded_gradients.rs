use crate::rules::violation::Violation;
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
