use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP103
pub const RULE: Rule = Rule {
    code: "SHP103",
    name: "reshape-size-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A view, reshape or unflatten does not keep the number of elements",
    messages: <ReshapeSizeMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks that `view`, `reshape`, `torch.reshape`, `view_as`-like targets and `unflatten` keep
the number of elements: the product of the requested sizes must equal the product of the
input's sizes. A `-1` must be inferable (the other sizes must divide the element count) and
at most one `-1` may appear.

## Why is this bad?
PyTorch raises `RuntimeError: shape '[4, 256]' is invalid for input of size 1600` (or
`RuntimeError: only one dimension can be inferred` for two `-1`) when the line runs. The
usual cause is flatten arithmetic that was computed for another input resolution, kernel
size or padding: here the feature map is 16x5x5 for a 32x32 input, not 16x4x4.

## Example
```python
self.conv1 = nn.Conv2d(3, 6, 5)    # 32x32 -> 28x28 -> pool -> 14x14
self.conv2 = nn.Conv2d(6, 16, 5)   # 14x14 -> 10x10 -> pool -> 5x5
...
x = self.pool(F.relu(self.conv2(x)))  # [batch, 16, 5, 5]
x = x.view(x.size(0), 16 * 4 * 4)     # SHP103: [batch, 16, 5, 5] has batch*400 elements
```

Use instead:
```python
x = x.view(x.size(0), 16 * 5 * 5)   # or: torch.flatten(x, 1)
```

## References
- [`torch.Tensor.view`](https://pytorch.org/docs/stable/generated/torch.Tensor.view.html)
- [`torch.reshape`](https://pytorch.org/docs/stable/generated/torch.reshape.html)
- [`torch.unflatten`](https://pytorch.org/docs/stable/generated/torch.unflatten.html)
"#,
};

crate::violation! {
    /// A new shape that does not hold the tensor's elements.
    pub enum ReshapeSizeMismatch for RULE {
        /// `view`/`reshape` with more than one `-1`.
        InferTwice { op } => "{op}: only one dimension can be inferred (-1)",
        /// `view`/`reshape`: the new shape has another number of elements.
        Numel { op, target, input, numel, new } => "{op}: shape {target} is invalid for input of shape {input} ({numel} elements, the new shape has {new})",
        /// `view`/`reshape` with a `-1`: the known sizes do not divide the number of elements.
        NotDivisible { op, target, input, numel, known } => "{op}: shape {target} is invalid for input of shape {input} ({numel} elements are not divisible by {known})",
        /// `unflatten`/`nn.Unflatten`: the sizes' product is not the dim's size.
        Unflatten { op, sizes, size, dim, input } => "{op}: sizes {sizes} don't multiply up to the size {size} of dim {dim} of input {input}",
    }
}
