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
    doc: r#"## What it does
Reports an optimizer's `step()` when its gradients were zeroed after the last `backward()`
that reached its layers: `zero_grad()` between `backward()` and `step()`, or zeroing every
iteration while stepping only every k iterations.

## Why is this bad?
Nothing raises. The step finds every gradient zero (or None): the weights never change
(Adam with weight decay only decays them), and the loss stays where it started.

## Example
```python
loss.backward()
optimizer.zero_grad()
optimizer.step()              # SHP303: zero_grad() discarded the gradients of backward()
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
        Step { optimizer, zeroed, backward } => "step(): the zero_grad() at {zeroed} discarded the gradients the backward() at {backward} gave {optimizer}: this step uses none",
    }
}
