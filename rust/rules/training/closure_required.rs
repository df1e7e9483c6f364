use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP315
pub const RULE: Rule = Rule {
    code: "SHP315",
    name: "closure-required",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "LBFGS.step() called without the closure it must call",
    messages: <ClosureRequired as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Reports `optimizer.step()` with no argument on a `torch.optim.LBFGS`. LBFGS evaluates the loss
and its gradients several times per step (a line search), so it takes a closure that zeroes
the gradients, computes the loss, calls `backward()` and returns the loss: `step(closure)`.

## Why is this bad?
`step()` raises `TypeError: LBFGS.step() missing 1 required positional argument: 'closure'`,
after the first batch's forward and backward have run. It is the usual slip when `Adam` or
`SGD` is swapped for `LBFGS` (often behind an option) and the loop is left as it was.

## Example
```python
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5)
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()            # SHP315: LBFGS.step() needs a closure
```

Use instead:
```python
for x, y in loader:
    def closure():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        return loss
    optimizer.step(closure)
```

## References
- [torch.optim.LBFGS](https://pytorch.org/docs/stable/generated/torch.optim.LBFGS.html)
"#,
};

crate::violation! {
    /// An optimizer that needs a closure stepped without one.
    pub enum ClosureRequired for RULE {
        /// `step()` with no argument.
        Step { at } => "LBFGS.step() without a closure raises TypeError (missing 1 required positional argument: 'closure'; optimizer built at {at}): pass a closure that zeroes the gradients, computes the loss, calls backward() and returns the loss",
    }
}
