use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP101
pub const RULE: Rule = Rule {
    code: "SHP101",
    name: "matmul-shape-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "The inner dimensions of a matrix product (Linear, @, matmul, mm, bmm, einsum, attention) disagree",
    messages: <MatmulShapeMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
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

crate::violation! {
    /// The inner dimensions of a matrix product disagree. `op` names the operation as the
    /// message shows it (`@`, `torch.mm`, `fc2 (line 7): Bilinear`, `F.scaled_dot_product_attention`).
    pub enum MatmulShapeMismatch for RULE {
        /// `nn.Linear`/`F.linear`: the input's last dim is not `in_features` (`who` is the
        /// layer's label and `: `, or empty).
        Linear { who, input, last, in_features } => "{who}input {input} does not fit Linear(in_features={in_features}): last dim {last} != {in_features}",
        /// `nn.Bilinear`/`F.bilinear`: an input's last dim is not its `in1_features`/`in2_features`.
        Bilinear { op, param, want, input, last } => "{op}({param}={want}) got input {input} whose last dim is {last}",
        /// `@`, `matmul`, `mm`, `bmm`, ...: the left's last dim is not the right's second-to-last.
        Inner { op, lhs, rhs, da, db } => "{op}: {lhs} @ {rhs}: inner dimensions differ ({da} vs {db})",
        /// `torch.bmm`: the batch sizes differ (bmm does not broadcast).
        BatchSizes { lhs, rhs } => "torch.bmm: {lhs} @ {rhs}: batch sizes differ",
        /// `einsum`: a subscript letter names dims of different sizes.
        Einsum { equation, subscript, size, operand, before } => "einsum '{equation}': subscript {subscript} has size {size} for operand {operand} but size {before} before",
        /// `F.scaled_dot_product_attention`: the key's embedding size is not the query's.
        KeyEmbedding { op, key, key_size, query, query_size } => "{op}: key {key} has embedding size {key_size}, query {query} has {query_size}",
        /// `F.scaled_dot_product_attention`: the value's sequence length is not the key's.
        ValueLength { op, value, value_len, key, key_len } => "{op}: value {value} has sequence length {value_len}, key {key} has {key_len}",
    }
}
