use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP310
pub const RULE: Rule = Rule {
    code: "SHP310",
    name: "inplace-modifies-saved",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "An in-place op changes a tensor autograd saved for backward, or a leaf that requires grad",
    messages: <InplaceModifiesSaved as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Follows which tensors autograd saves for the backward pass: the outputs of `sigmoid`, `tanh`,
`exp`, `softmax`, `log_softmax`, `relu` and `sqrt` (their gradients are computed from the
output), and the views of them. Reports `backward()` on a loss whose graph needs such a tensor
after an in-place op changed it (`h.mul_(mask)`, `h += 1`, `h[:, 0] = 0`, `probs /= probs.sum()`),
and an in-place op on a leaf that requires grad (a parameter, `torch.randn(..., requires_grad=True)`)
outside `torch.no_grad()`.

## Why is this bad?
PyTorch raises `RuntimeError: one of the variables needed for gradient computation has been
modified by an inplace operation` at `loss.backward()`, and `RuntimeError: a leaf Variable that
requires grad is being used in an in-place operation` at the in-place op, on the first batch.

## Example
```python
h = torch.tanh(self.fc(x))
h.mul_(mask)                 # tanh's backward needs h as it was
...
loss.backward()              # SHP310
```

Use instead:
```python
h = torch.tanh(self.fc(x)) * mask
```

## References
- [Autograd mechanics: in-place operations with autograd](https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
"#,
};

crate::violation! {
    /// An in-place op autograd cannot undo.
    pub enum InplaceModifiesSaved for RULE {
        /// `backward()` through a tensor an in-place op changed after autograd saved it.
        Saved { shape, modified, saved_by } => "backward(): the graph of the loss {shape} needs a tensor {saved_by} saved for backward, which an in-place op at {modified} changed",
        /// An in-place op on a leaf that requires grad.
        Leaf { op, shape } => "{op}: in-place op on a leaf {shape} that requires grad, outside torch.no_grad()",
    }
}
