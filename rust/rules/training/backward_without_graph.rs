use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP309
pub const RULE: Rule = Rule {
    code: "SHP309",
    name: "backward-without-graph",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "backward() on a tensor that autograd did not record: computed under no_grad, detached, or from tensors that require no grad",
    messages: <BackwardWithoutGraph as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Follows whether each tensor carries an autograd graph: a tensor computed while gradients are
off (`with torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`, a
function decorated with `@torch.no_grad()`) has none, nor has a `.detach()`ed one, an integer
or bool result, or one computed only from tensors that require no gradient (data, constants).
Reports `backward()` on such a tensor. `torch.enable_grad()` inside a `no_grad` block turns
gradients back on, and `.requires_grad_()` makes a leaf that requires them.

## Why is this bad?
PyTorch raises `RuntimeError: element 0 of tensors does not require grad and does not have a
grad_fn` at the first step: typically the loss was computed inside the `no_grad` block meant for
a frozen teacher or feature extractor, or after a `.detach()` added for logging.

## Example
```python
with torch.no_grad():
    features = backbone(images)
    loss = criterion(head(features), labels)
loss.backward()                 # SHP309: the loss was computed under no_grad (line 1)
```

Use instead:
```python
with torch.no_grad():
    features = backbone(images)
loss = criterion(head(features), labels)
loss.backward()
```

## References
- [Autograd mechanics: locally disabling gradient computation](https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation)
"#,
};

crate::violation! {
    /// `backward()` on a tensor without a graph.
    pub enum BackwardWithoutGraph for RULE {
        /// The tensor has no grad_fn and does not require grad.
        NoGraph { shape, why } => "backward(): the loss {shape} has no autograd graph ({why}); torch raises 'element 0 of tensors does not require grad'",
    }
}
