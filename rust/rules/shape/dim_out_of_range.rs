use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP105
pub const RULE: Rule = Rule {
    code: "SHP105",
    name: "dim-out-of-range",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A dim argument does not name a dim of the tensor (out of range, repeated or out of order)",
    messages: <DimOutOfRange as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks that a dimension argument names a dimension the tensor has (from `-rank` to
`rank - 1`): `transpose`, `swapaxes`, `flatten(start_dim, end_dim)`, `unsqueeze` (which
allows `rank`), `squeeze(dim)`, `softmax`/`log_softmax(dim=...)`, `cat`/`stack` `dim`,
reductions (`sum`, `mean`, `max`, `argmax`, `norm`, ...), `size(dim)` and `split`/`chunk`
`dim`. For `permute` it checks that the dims are a permutation of all the tensor's dims
(right length, no duplicates).

## Why is this bad?
PyTorch raises `IndexError: Dimension out of range (expected to be in range of [-3, 2], but
got 3)` when the line runs (for `permute`: `RuntimeError: permute(sparse_coo): number of
dimensions in the tensor input does not match the length of the desired ordering of
dimensions ...` or `RuntimeError: permute(): duplicate dims are not allowed.`). Code written
for 4-D multi-head tensors and then used with 3-D single-head tensors is a common cause.

## Example
```python
q = self.q_proj(x)                  # [batch, seq, 64]
k = self.k_proj(x)                  # [batch, seq, 64]
scores = q @ k.transpose(2, 3)      # SHP105: dim 3 is out of range for a 3-D tensor
```

Use instead:
```python
scores = q @ k.transpose(-2, -1)    # [batch, seq, seq]
```

## References
- [`torch.transpose`](https://pytorch.org/docs/stable/generated/torch.transpose.html)
- [`torch.permute`](https://pytorch.org/docs/stable/generated/torch.permute.html)
- [`torch.flatten`](https://pytorch.org/docs/stable/generated/torch.flatten.html)
- [`torch.nn.functional.softmax`](https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html)
"#,
};

crate::violation! {
    /// A dim argument that does not name a dim of the tensor.
    pub enum DimOutOfRange for RULE {
        /// `dim` is outside `[lo, hi]` for a `rank`-D tensor.
        Dim { op, dim, rank, shape, lo, hi } => "{op}: dim {dim} is out of range for a {rank}-D tensor {shape} (expected a dim in [{lo}, {hi}])",
        /// `permute` with another number of dims than the tensor has.
        PermuteLength { len, shape, rank } => "permute: the permutation has {len} dims but the tensor {shape} has {rank}",
        /// `permute` naming a dim twice.
        PermuteRepeat { dim } => "permute: dim {dim} appears more than once",
        /// A dim list (`flip`, a reduction over several dims) naming a dim twice.
        Repeated { op, dim } => "{op}: dim {dim} appears multiple times in the list of dims",
        /// `movedim` with a dim twice in `source` or `destination`.
        MovedimRepeat { which, dims } => "movedim: repeated dim in `{which}` ({dims})",
        /// `movedim` with lists of different lengths.
        MovedimLength { source, destination } => "movedim: source {source} and destination {destination} must contain the same number of dims",
        /// `flatten`/`nn.Flatten` with `start_dim` after `end_dim`.
        FlattenOrder { op, start, end } => "{op}: start_dim {start} comes after end_dim {end}",
    }
}
