use crate::rules::{Family, Rule, RuleStatus};

/// SHP901
pub const RULE: Rule = Rule {
    code: "SHP901",
    name: "loss-target-broadcast",
    family: Family::MayFail,
    status: RuleStatus::Preview,
    summary: "{loss}: target {target} and input {input} differ in shape and are broadcast",
    default_enabled: false,
    doc: r#"## What it does
Flags the elementwise regression losses (`MSELoss`, `L1Loss`, `SmoothL1Loss`, `HuberLoss` and
their `F.*` twins) when the input and the target have different shapes that broadcast. Opt-in:
the core produces it only with `--may-fail` (`may-fail = true`), and it must be selected
(`--extend-select SHP9` under flake8).

## Why is this bad?
torch does not raise: it warns `Using a target size (torch.Size([64])) that is different to the
input size (torch.Size([64, 1])). This will likely lead to incorrect results due to
broadcasting.` and computes the loss over a `[64, 64]` matrix of all pairs. Training runs, the
loss goes down slowly or not at all, and nothing points at the line.

## Example
```python
pred = model(x)                 # [batch, 1]
loss = F.mse_loss(pred, y)      # SHP901: y is [batch]; the loss compares all pairs
```

Use instead:
```python
loss = F.mse_loss(pred.squeeze(1), y)
```

## References
- [`torch.nn.MSELoss`](https://pytorch.org/docs/stable/generated/torch.nn.MSELoss.html)
"#,
};
