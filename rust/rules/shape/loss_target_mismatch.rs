use crate::rules::{Family, Rule, RuleStatus};

/// SHP108
pub const RULE: Rule = Rule {
    code: "SHP108",
    name: "loss-target-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "{loss}: input {input} and target {target} do not fit: {reason}",
    messages: &[],
    default_enabled: true,
    doc: r#"## What it does
Checks the input and target of loss functions: `CrossEntropyLoss`/`F.cross_entropy` and
`NLLLoss`/`F.nll_loss` (class-index targets must have the input's shape without the class
dim 1 and the same batch size; probability targets must have the input's shape),
`BCELoss`/`BCEWithLogitsLoss` and their functional forms (target and input must have the same
shape) and other losses whose input and target must broadcast.

## Why is this bad?
PyTorch raises `RuntimeError: 0D or 1D target tensor expected, multi-target not supported`
when the target is a `[batch, 1]` column of class indices (for a batch mismatch:
`ValueError: Expected input batch_size (8) to match target batch_size (16).`; for BCE:
`ValueError: Target size (torch.Size([8])) must be the same as input size
(torch.Size([8, 1]))`). It fails on the first training step, after data loading.

## Example
```python
criterion = nn.CrossEntropyLoss()
logits = model(x)                      # [batch, 10]
labels = batch["label"].view(-1, 1)    # [batch, 1]
loss = criterion(logits, labels)       # SHP108: class-index target must be [batch]
```

Use instead:
```python
labels = batch["label"].view(-1)       # [batch]
loss = criterion(logits, labels)
```

## References
- [`torch.nn.CrossEntropyLoss`](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
- [`torch.nn.NLLLoss`](https://pytorch.org/docs/stable/generated/torch.nn.NLLLoss.html)
- [`torch.nn.BCEWithLogitsLoss`](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
"#,
};
