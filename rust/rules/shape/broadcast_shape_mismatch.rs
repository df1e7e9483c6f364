use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP102
pub const RULE: Rule = Rule {
    code: "SHP102",
    name: "broadcast-shape-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "Two tensor shapes cannot be broadcast together",
    messages: <BroadcastShapeMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks that the operands of an elementwise operation can be broadcast together: arithmetic
and comparison operators (`+`, `*`, `==`, ...), `torch.add`, `torch.mul`, `torch.maximum` and
their relatives, `torch.where`, `masked_fill`, and in-place operations (`x += y`, `add_`,
`mul_`, ...), where the broadcast result must also have the shape of the tensor written to.
Two sizes are compatible when they are equal or one of them is 1, comparing dimensions from
the right.

## Why is this bad?
PyTorch raises `RuntimeError: The size of tensor a (64) must match the size of tensor b (10)
at non-singleton dimension 2` when the line runs (for an in-place operation whose result
would not fit the left operand: `RuntimeError: output with shape [32] doesn't match the
broadcast shape [8, 32]`). A padding mask that lacks its trailing feature axis is a common
cause.

## Example
```python
x = self.embedding(tokens)          # [batch, seq, 64]
mask = (tokens != PAD_ID).float()   # [batch, seq]
x = x * mask                        # SHP102: [batch, seq, 64] and [batch, seq]
```

Use instead:
```python
x = x * mask.unsqueeze(-1)          # [batch, seq, 64] * [batch, seq, 1]
```

## References
- [Broadcasting semantics](https://pytorch.org/docs/stable/notes/broadcasting.html)
- [`torch.where`](https://pytorch.org/docs/stable/generated/torch.where.html)
- [In-place semantics](https://pytorch.org/docs/stable/notes/broadcasting.html#in-place-semantics)
"#,
};

crate::violation! {
    /// Two shapes that do not broadcast.
    pub enum BroadcastShapeMismatch for RULE {
        /// Aligned from the right, the dims at `dim` (negative) differ and neither is 1.
        Shapes { op, lhs, rhs, da, db, dim } => "{op}: shapes {lhs} and {rhs} cannot be broadcast: {da} vs {db} at dim {dim}",
        /// An in-place op (`x += y`, `x.add_(y)`) whose broadcast result is larger than `x`.
        InPlace { op, target, result } => "{op}: the in-place result must keep the shape {target} of the tensor written to, but broadcasting gives {result}",
        /// `expand`/`expand_as`/`broadcast_to`: a size differs from an existing size other than 1.
        Expand { size, existing, shape } => "expand: the expanded size {size} must match the existing size {existing} of {shape} (or the existing size must be 1)",
    }
}
