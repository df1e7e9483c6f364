use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP104
pub const RULE: Rule = Rule {
    code: "SHP104",
    name: "concat-shape-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "Tensors joined by cat or stack differ in rank or in a dimension that must match",
    messages: <ConcatShapeMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks the tensors joined by `torch.cat` (`concat`, `concatenate`), `torch.stack`, `hstack`,
`vstack` and `dstack`: for `cat` they must have the same rank and equal sizes in every
dimension except the one joined along; for `stack` they must all have exactly the same shape.

## Why is this bad?
PyTorch raises `RuntimeError: stack expects each tensor to be equal size, but got [8, 128] at
entry 0 and [8, 16] at entry 1` (for `cat`: `RuntimeError: Sizes of tensors must match except
in dimension 1. ...` or `RuntimeError: Tensors must have same number of dimensions: got 2 and
3`) when the line runs. Mixing up `stack` and `cat`, or the dimension to join along, is the
usual cause.

## Example
```python
img_feat = self.cnn(images)        # [batch, 128]
meta_feat = self.meta_mlp(meta)    # [batch, 16]
fused = torch.stack([img_feat, meta_feat], dim=1)  # SHP104: [batch, 128] vs [batch, 16]
```

Use instead:
```python
fused = torch.cat([img_feat, meta_feat], dim=1)    # [batch, 144]
```

## References
- [`torch.cat`](https://pytorch.org/docs/stable/generated/torch.cat.html)
- [`torch.stack`](https://pytorch.org/docs/stable/generated/torch.stack.html)
"#,
};

crate::violation! {
    /// Tensors that cannot be joined: `first` is tensor 0, `other` is tensor `index`.
    pub enum ConcatShapeMismatch for RULE {
        /// `cat`/`stack`: the tensors differ in rank.
        Rank { op, first_rank, first, index, rank, other } => "{op}: tensors must have the same number of dimensions: tensor 0 is {first_rank}-D {first}, tensor {index} is {rank}-D {other}",
        /// `stack`: the tensors differ in size at `dim`.
        Stack { op, first, index, other, dim } => "{op}: stack expects each tensor to be equal size: tensor 0 is {first}, tensor {index} is {other} (dim {dim})",
        /// `cat`: the tensors differ in size at `dim`, which is not the concatenated dim.
        Cat { op, first, index, other, dim } => "{op}: sizes of tensors must match except in the concatenated dimension: tensor 0 is {first}, tensor {index} is {other} (dim {dim})",
        /// `pad_sequence`/`pack_sequence`: the sequences differ after their length dim (in
        /// rank or at `dim`).
        Padded { op, first, index, other } => "{op}: sequences must match in every dim after the first: sequence 0 is {first}, sequence {index} is {other}",
        /// `cat` of a 0-dim tensor (a loss, a `.sum()`).
        ZeroDim { op, index } => "{op}: tensor {index} is 0-dim, and a 0-dim tensor cannot be concatenated (use torch.stack)",
    }
}
