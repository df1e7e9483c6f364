use crate::rules::{Family, Rule, RuleStatus};

/// SHP101
pub const RULE: Rule = Rule {
    code: "SHP101",
    name: "matmul-shape-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "{op}: input {lhs} does not fit {rhs}",
    messages: &[],
    default_enabled: true,
    doc: r#"## What it does
Checks that the inner dimensions of a matrix product agree: `nn.Linear` and `F.linear`
(the input's last dimension must equal `in_features`), `@`, `torch.matmul`, `mm`, `bmm`,
`mv`, `addmm` and their relatives.

## Why is this bad?
PyTorch raises `RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x84 and 80x10)`
the first time the line runs, which is often after minutes or hours of data loading and
training.

## Example
```python
self.fc1 = nn.Linear(16 * 5 * 5, 120)
self.fc2 = nn.Linear(80, 10)
...
x = F.relu(self.fc1(x))  # [batch, 120]
x = self.fc2(x)          # SHP101: input [batch, 120] does not fit Linear(in_features=80)
```

Use instead:
```python
self.fc2 = nn.Linear(120, 10)
```

## References
- [`torch.nn.Linear`](https://pytorch.org/docs/stable/generated/torch.nn.Linear.html)
- [`torch.matmul`](https://pytorch.org/docs/stable/generated/torch.matmul.html)
"#,
};
