use crate::rules::{Family, Rule, RuleStatus};

/// SHP111
pub const RULE: Rule = Rule {
    code: "SHP111",
    name: "invalid-shape-argument",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "{op}: {reason}",
    messages: &[],
    default_enabled: true,
    doc: r#"## What it does
Checks the remaining shape preconditions of PyTorch APIs, at layer construction or call:
`embed_dim` divisible by `num_heads` (`MultiheadAttention`, `TransformerEncoderLayer`, ...),
`in_channels` and `out_channels` divisible by `groups` (convolutions), `num_channels`
divisible by `num_groups` (`GroupNorm`), `split` sizes summing to the size of the split dim,
`chunk` with a positive number of chunks, `unflatten` sizes multiplying to the dim,
`expand` only growing singleton dims, `PixelShuffle` channels divisible by the square of the
factor, and padding no longer than the input's dims.

## Why is this bad?
PyTorch raises `AssertionError: embed_dim must be divisible by num_heads` when the model is
built (for `split`: `RuntimeError: split_with_sizes expects split_sizes to sum exactly to 10
(input tensor's size at dimension 2), but got split_sizes=[4, 4]`; for convolutions:
`ValueError: in_channels must be divisible by groups`).

## Example
```python
self.attn = nn.MultiheadAttention(embed_dim=100, num_heads=8)  # SHP111: 100 % 8 != 0
```

Use instead:
```python
self.attn = nn.MultiheadAttention(embed_dim=96, num_heads=8)   # head_dim = 12
```

## References
- [`torch.nn.MultiheadAttention`](https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html)
- [`torch.nn.Conv2d`](https://pytorch.org/docs/stable/generated/torch.nn.Conv2d.html)
- [`torch.split`](https://pytorch.org/docs/stable/generated/torch.split.html)
- [`torch.chunk`](https://pytorch.org/docs/stable/generated/torch.chunk.html)
"#,
};
