use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP109
pub const RULE: Rule = Rule {
    code: "SHP109",
    name: "output-size-too-small",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A convolution, pooling, padding or interpolation gives an output size torch rejects",
    messages: <OutputSizeTooSmall as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks that the spatial output size of convolutions, pooling layers and `unfold` stays
positive: `floor((size + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1 >= 1` for
every spatial dim (a convolution also needs the padded input to be at least as large as the
dilated kernel).

## Why is this bad?
PyTorch raises `RuntimeError: Given input size: (512x1x1). Calculated output size:
(512x0x0). Output size is too small` for pooling (for convolutions: `RuntimeError: Calculated
padded input size per channel: (4 x 4). Kernel size: (5 x 5). Kernel size can't be greater
than actual input size`) when the line runs. Too many downsampling stages for the input
resolution is the usual cause, often when a network designed for 224x224 images is trained
on 32x32 ones.

## Example
```python
layers, c_in = [], 3
for c_out in [32, 64, 128, 256, 256, 512]:   # six stages halve 32x32 six times
    layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
    c_in = c_out
self.features = nn.Sequential(*layers)
...
x = self.features(torch.randn(2, 3, 32, 32))  # SHP109: MaxPool2d turns 1x1 into 0x0
```

Use instead:
```python
for c_out in [32, 64, 128, 256, 512]:        # five stages: 32x32 -> 1x1
```

## References
- [`torch.nn.MaxPool2d`](https://pytorch.org/docs/stable/generated/torch.nn.MaxPool2d.html)
- [`torch.nn.Conv2d`](https://pytorch.org/docs/stable/generated/torch.nn.Conv2d.html)
- [`torch.nn.Unfold`](https://pytorch.org/docs/stable/generated/torch.nn.Unfold.html)
"#,
};

crate::violation! {
    /// An output size (of a conv, pool, pad or interpolation) below what torch accepts.
    /// Sizes of several spatial dims are joined with `x` (`5x5`).
    pub enum OutputSizeTooSmall for RULE {
        /// Conv or pool: an output size below 1.
        TooSmall { op, input, output, size } => "{op}: input size {input} gives output size {output}, which is too small ({size} < 1)",
        /// Transposed conv: a negative output size.
        Negative { op, input, output } => "{op}: input size {input} gives a negative output size {output}",
        /// `avg_pool3d`: an input smaller than the kernel.
        Kernel { op, input } => "{op}: input {input} is smaller than the kernel size",
        /// `F.pad` with negative padding that makes a dim negative (`pad` is the list as given).
        PadNegative { op, pad, dim, input } => "{op}: padding {pad} makes dim {dim} of input {input} negative",
        /// `F.interpolate`/`nn.Upsample`: a scale factor that gives an output size below 1.
        Scaled { op, size, factor, output } => "{op}: input size {size} scaled by {factor} gives output size {output}",
        /// Unfold/Fold: fewer than one block along a dim.
        Blocks { op, from, blocks, size } => "{op}: {from} gives {blocks} blocks, which is too small ({size} < 1)",
        /// `Tensor.unfold`: a window larger than the dim.
        /// `ConvTranspose(...)(input, output_size)` outside the sizes the stride allows.
        TransposeOutputSize { op, requested, lo, hi, input } => "{op}: requested an output size of {requested}, but valid sizes range from {lo} to {hi} (for an input of {input})",
        Window { op, size, dim, input, len } => "{op}: size {size} is larger than dim {dim} of {input} (of size {len})",
    }
}
