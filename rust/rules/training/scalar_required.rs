use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP311
pub const RULE: Rule = Rule {
    code: "SHP311",
    name: "scalar-required",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "backward() without a gradient, or .item(), on a tensor that does not hold exactly one element",
    messages: <ScalarRequired as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Reports `loss.backward()` called without a `gradient` on a tensor of more than one element
(typically a loss built with `reduction="none"` and never reduced), and `.item()` on a tensor of
more than one element (a per-sample loss or a batch of predictions), where the shape is known.

## Why is this bad?
PyTorch raises `RuntimeError: grad can be implicitly created only for scalar outputs` and
`RuntimeError: a Tensor with 64 elements cannot be converted to Scalar`, after the forward pass
of the first batch.

## Example
```python
criterion = nn.CrossEntropyLoss(reduction="none")
loss = criterion(model(x), y)        # [64]
loss.backward()                      # SHP311: the loss [64] has 64 elements
```

Use instead:
```python
loss = criterion(model(x), y).mean()
loss.backward()
```

## References
- [`torch.Tensor.backward`](https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html)
- [`torch.Tensor.item`](https://pytorch.org/docs/stable/generated/torch.Tensor.item.html)
"#,
};

crate::violation! {
    /// A method that needs a one-element tensor got another.
    pub enum ScalarRequired for RULE {
        /// `backward()` without a gradient on a tensor of more than one element.
        Backward { shape, count } => "backward(): the loss {shape} holds {count}, backward() without a gradient needs one (reduce it with .mean() or .sum())",
        /// `.item()` on a tensor of more than one element.
        Item { shape, count } => ".item(): {shape} holds {count}, only a one-element tensor converts to a Python number",
    }
}
