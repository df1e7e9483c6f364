use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP112
pub const RULE: Rule = Rule {
    code: "SHP112",
    name: "view-non-contiguous",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A view of a transposed or permuted tensor whose strides cannot give the new shape",
    messages: <ViewNonContiguous as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks `Tensor.view` on a tensor made non-contiguous by `transpose`, `swapaxes`, `swapdims`,
`permute`, `t()`, `.T`, `.mT` or `movedim`: `view` never copies, so each group of dims it
merges must already lie contiguously in memory. The check follows the strides of such a
tensor through the ops whose strides are known (further transposes and permutes, unary
elementwise ops) and reports only when torch's view-compatibility test fails for every size
the dims can have (a dim of size 1 can make the view legal, so a dim that may be 1 keeps
the check silent).

## Why is this bad?
PyTorch raises `RuntimeError: view size is not compatible with input tensor's size and
stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...)
instead.` when the line runs. The classic case is merging attention heads back: after
`transpose(1, 2)` the dims `heads` and `head_dim` are no longer next to each other in
memory.

## Example
```python
q = self.q(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)  # [B, H, T, D]
...
y = att @ v                            # [B, H, T, D]
y = y.transpose(1, 2).view(B, T, C)    # SHP112: H and D are not adjacent in memory
```

Use instead:
```python
y = y.transpose(1, 2).contiguous().view(B, T, C)   # or: .reshape(B, T, C)
```

## References
- [`torch.Tensor.view`](https://pytorch.org/docs/stable/generated/torch.Tensor.view.html)
- [`torch.Tensor.contiguous`](https://pytorch.org/docs/stable/generated/torch.Tensor.contiguous.html)
- [`torch.reshape`](https://pytorch.org/docs/stable/generated/torch.reshape.html)
"#,
};

crate::violation! {
    /// `view` of a tensor whose strides (known from a transpose or permute) cannot give the new
    /// shape without a copy.
    pub enum ViewNonContiguous for RULE {
        /// `origin` is the op that made the input non-contiguous and its line
        /// (`transpose at line 23`).
        Strides { target, input, origin } => "view: shape {target} is not compatible with the strides of input {input}, which is not contiguous after {origin}; use .reshape(...) or .contiguous().view(...)",
    }
}
