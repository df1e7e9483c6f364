use crate::rules::{Family, Rule, RuleStatus};

/// SHP106
pub const RULE: Rule = Rule {
    code: "SHP106",
    name: "layer-input-rank-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "{layer} expects a {expected} input, got a {rank}-D tensor {shape}",
    messages: &[],
    default_enabled: true,
    doc: r#"## What it does
Checks that a layer or functional op gets an input of a rank it accepts: `Conv1d`/`Conv2d`/
`Conv3d` and their transposes (2-D/3-D, 3-D/4-D, 4-D/5-D), pooling layers, `BatchNorm1d`
(2-D or 3-D), `BatchNorm2d` (4-D), `BatchNorm3d` (5-D), `InstanceNorm*`, `LSTM`/`GRU`/`RNN`
(2-D or 3-D) and `MultiheadAttention` (2-D or 3-D query, key and value).

## Why is this bad?
PyTorch raises `RuntimeError: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got
input of size: [64, 784]` (for `BatchNorm1d` given a 4-D tensor: `ValueError: expected 2D or
3D input (got 4D input)`) when the line runs. Images flattened for an MLP baseline and then
fed to a convolution, or a norm layer of the wrong dimensionality, are common causes.

## Example
```python
self.conv1 = nn.Conv2d(1, 32, 3)
...
x = images.view(images.size(0), -1)  # [batch, 784]
x = self.conv1(x)                    # SHP106: Conv2d expects a 3-D or 4-D input
```

Use instead:
```python
x = self.conv1(images)               # [batch, 1, 28, 28]
```

## References
- [`torch.nn.Conv2d`](https://pytorch.org/docs/stable/generated/torch.nn.Conv2d.html)
- [`torch.nn.BatchNorm1d`](https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html)
- [`torch.nn.LSTM`](https://pytorch.org/docs/stable/generated/torch.nn.LSTM.html)
"#,
};
