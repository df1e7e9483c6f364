use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP106
pub const RULE: Rule = Rule {
    code: "SHP106",
    name: "layer-input-rank-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A layer or op gets an input of a rank it does not accept",
    messages: <LayerInputRankMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
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

crate::violation! {
    /// An input (or weight) of a rank the layer or op does not accept. `op` names it as the
    /// message shows it (`conv1 (line 4): Conv2d`, `F.pad`, `torch.mm (first argument)`).
    pub enum LayerInputRankMismatch for RULE {
        /// A layer's input rank is none of the accepted ones (`prefix` is `op: `, with the
        /// layer's label; `want` is e.g. `3-D or 4-D`).
        Expected { prefix, want, rank, shape } => "{prefix}expected {want} input, got {rank}-D input {shape}",
        /// A tensor op's input rank (`expect` is e.g. `2-D or higher`).
        Expects { op, expect, rank, shape } => "{op} expects a {expect} tensor, got a {rank}-D tensor {shape}",
        /// At least `rank` dims are needed.
        AtLeast { op, rank, shape } => "{op}: expected at least {rank}-D input, got {shape}",
        /// `nn.Linear`/`nn.PReLU` on a 0-D tensor (`layer` is its label and description).
        ZeroD { layer } => "{layer} got a 0-D input",
        /// `glu` on a 0-D tensor.
        NoZeroD { op } => "{op} does not support 0-D input",
        /// `F.conv*`: the weight's rank.
        WeightRank { op, rank } => "{op}: weight must be {rank}-D",
        /// `nn.Bilinear`/`F.bilinear`: the two inputs differ in rank (or are 0-D).
        BilinearRanks { op, lhs, rhs } => "{op}: inputs {lhs} and {rhs} must have the same number of dims (at least 1)",
        /// `nn.EmbeddingBag` without offsets on a tensor that is not 2-D.
        BagRank { op, input } => "{op}: without offsets the input must be 2-D (one bag per row), got {input}",
        /// `F.pad` (constant): more (left, right) pairs than dims.
        PadTooLong { op, len, input, rank } => "{op}: padding length {len} is too large for input {input} ({rank}-D)",
        /// `F.pad` (reflect, replicate, circular): `dims` padded dims need a `lo`-D or `hi`-D input.
        PadRank { op, mode, dims, lo, hi, input } => "{op}: {mode} padding of {dims} dim(s) needs a {lo}-D or {hi}-D input, got {input}",
        /// `F.interpolate`/`nn.Upsample`: the mode does not support the input's rank.
        InterpolateMode { op, mode, rank, input } => "{op}: mode '{mode}' does not support {rank}-D input {input}",
        /// Adaptive pooling with a tuple output size: the input needs at least `rank` dims.
        AdaptiveRank { op, input, rank } => "{op}: input {input} should have at least {rank} dims",
        /// Adaptive average pooling to 1: the input has fewer than `rank` dims.
        FewerDims { op, input, rank } => "{op}: input {input} has fewer than {rank} dims",
        /// Attention and transformer layers: `name` (query, src, tgt) is neither 2-D nor 3-D.
        Unbatched { op, name, shape } => "{op}: {name} should be unbatched 2-D or batched 3-D, got {shape}",
        /// `nn.MultiheadAttention`: the key and value ranks differ from the query's.
        KeyValueRank { op, rank, key, value } => "{op}: for a {rank}-D query, key and value must be {rank}-D, got {key} and {value}",
        /// `nn.MultiheadAttention`: a mask of another rank than `want` (see SHP111 for its dims).
        MaskShape { op, name, mask, want } => "{op}: {name} {mask} should have shape {want}",
        /// Transformer decoders: the two inputs differ in rank.
        SameRank { op, first_name, first, second_name, second } => "{op}: {first_name} {first} and {second_name} {second} must have the same number of dims",
        /// `F.scaled_dot_product_attention`: an input with fewer than 2 dims.
        AttentionRank { op, query, key, value } => "{op}: query {query}, key {key} and value {value} must be at least 2-D",
        /// Unfold/Fold: a zero-size dim other than the batch.
        ZeroSize { op, input } => "{op}: input {input} has a zero-size dim (only the batch dim may be 0)",
    }
}
