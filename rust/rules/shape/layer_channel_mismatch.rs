use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP107
pub const RULE: Rule = Rule {
    code: "SHP107",
    name: "layer-channel-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A layer's configured channels or features do not match its input",
    messages: <LayerChannelMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks that the channel or feature dimension of a layer's input matches what the layer was
built with: `in_channels` of convolutions (dim 1, or dim 0 for unbatched input), `num_features`
of `BatchNorm*`/`InstanceNorm*`, `num_channels` of `GroupNorm`, `normalized_shape` of
`LayerNorm` (the trailing dims), `input_size` of `LSTM`/`GRU`/`RNN` (the last dim) and
`embed_dim` of `MultiheadAttention`. Linear layers are `SHP101`; embedding indices out of the
vocabulary are not shape errors and are not reported here.

## Why is this bad?
PyTorch raises `RuntimeError: Given groups=1, weight of size [16, 3, 3, 3], expected
input[8, 1, 28, 28] to have 3 channels, but got 1 channels instead` when the line runs
(for norms: `RuntimeError: running_mean should contain 16 elements not 32` or `Given
normalized_shape=[64], expected input with shape [*, 64], ...`; for RNNs:
`input.size(-1) must be equal to input_size. Expected 32, got 16`).

## Example
```python
self.conv1 = nn.Conv2d(3, 16, 3, padding=1)  # written for RGB images
...
images = torch.randn(8, 1, 28, 28)           # grayscale MNIST batch
out = self.conv1(images)                     # SHP107: Conv2d expects 3 channels, got 1
```

Use instead:
```python
self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
```

## References
- [`torch.nn.Conv2d`](https://pytorch.org/docs/stable/generated/torch.nn.Conv2d.html)
- [`torch.nn.BatchNorm2d`](https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html)
- [`torch.nn.LayerNorm`](https://pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html)
- [`torch.nn.LSTM`](https://pytorch.org/docs/stable/generated/torch.nn.LSTM.html)
- [`torch.nn.MultiheadAttention`](https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html)
"#,
};

crate::violation! {
    /// A layer's configured size (`param`, e.g. `in_channels`, `num_features`, `input_size`,
    /// `embed_dim`, `d_model`) does not match its input. `layer` is the layer's label and
    /// class (`conv1 (line 4): Conv2d`) or the functional form (`F.group_norm`).
    pub enum LayerChannelMismatch for RULE {
        /// The channel dim (dim 1, or the one before the spatial dims) is not `want`.
        Channels { layer, param, want, input, channels } => "{layer}({param}={want}) got input {input} with {channels} channels",
        /// `nn.InstanceNorm*(affine=True)`: the channel dim is not `num_features`.
        AffineChannels { layer, num_features, input, channels } => "{layer}(num_features={num_features}, affine=True) got input {input} with {channels} channels",
        /// The last dim of `name` (input, query, key, ...) is not `want`.
        LastDim { layer, param, want, name, shape, last } => "{layer}({param}={want}) got {name} {shape} whose last dim is {last}",
        /// `F.batch_norm`: a statistics or affine tensor (`key`) of another size than the channels.
        BatchNormStats { key, size, input, channels } => "F.batch_norm: {key} has {size} elements but input {input} has {channels} channels",
        /// `nn.LayerNorm`/`F.layer_norm`: the input has fewer dims than `normalized_shape`.
        NormalizedRank { layer, normalized, input } => "{layer}(normalized_shape=[{normalized}]): input {input} has fewer dims than normalized_shape",
        /// `nn.LayerNorm`/`F.layer_norm`: the input's trailing dims are not `normalized_shape`.
        NormalizedShape { layer, normalized, input } => "{layer}(normalized_shape=[{normalized}]) got input {input}",
        /// `nn.GroupNorm`/`F.group_norm`: the channels are not divisible by `num_groups`.
        /// CrossEntropyLoss/NLLLoss: a class weight of another size than the input's classes.
        ClassWeight { loss, weight, input, classes } => "{loss}: weight {weight} should have one value per class, but input {input} has {classes} classes",
        Groups { layer, channels, input, groups } => "{layer}: {channels} channels of input {input} are not divisible by num_groups={groups}",
    }
}
