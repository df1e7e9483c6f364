use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP202
pub const RULE: Rule = Rule {
    code: "SHP202",
    name: "dtype-mismatch",
    family: Family::DeviceDtype,
    status: RuleStatus::Stable,
    summary: "A tensor's dtype is one torch rejects there (integer input to a layer, float64 against float32, float class indices)",
    messages: <DtypeMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Follows every tensor's dtype (creation functions and their `dtype=`, casts, `torch.from_numpy`
and `torch.tensor` of NumPy arrays, which are float64 by default, uint8 images from
`PILToTensor`, integer datasets, module parameters cast with `.double()`/`.half()`, torch's
promotion rules) and reports the dtypes torch rejects:
- an input to `nn.Linear`, a convolution, a recurrent layer or attention of another dtype than
  the weights (an integer, bool or uint8 tensor, float64 against float32), and the operands of
  `@`, `mm`, `bmm`, `matmul`, `einsum`, `addmm`, `F.linear`, `F.conv2d` of different dtypes;
- an input to a normalisation layer (`BatchNorm`, `LayerNorm`, `GroupNorm`, an affine
  `InstanceNorm`) or `PReLU` that does not fit its weights (float16 and bfloat16 inputs may meet
  float32 norm weights);
- float targets where `CrossEntropyLoss`/`NLLLoss` expect class indices, class weights of
  another dtype than the input, a `BCELoss` target of another dtype than the input, integer
  targets for `BCEWithLogitsLoss`;
- indices of a float (or bool) dtype into `nn.Embedding`, `gather`, `scatter`, `index_select`,
  `one_hot` (which takes int64 only); a mask that is not bool in `masked_fill`;
- a floating operand of `~`, `&`, `|` or `^` (a padding mask built with `.float()`, then
  inverted with `~mask`);
- a bool tensor subtracted (`1 - mask`, `mask - 1`, `torch.sub`, `rsub`) or negated (`-mask`,
  `mask.neg()`), and a Python bool subtracted from a tensor or a tensor from it (`x - True`):
  torch inverts masks with `~mask` only;
- `mean`, `var`, `std`, `norm`, `softmax` and `log_softmax` of an integer or bool tensor
  (`(pred == y).mean()`), and a loss of integer scores;
- a float16 or bfloat16 CPU tensor into `torch.fft.*` or `torch.stft`;
- an in-place op whose result cannot be written back: `x /= 255` on a uint8 image, `x *= 0.5`
  on an integer tensor, `mask += 1` on a bool one.

## Why is this bad?
PyTorch raises `RuntimeError: mat1 and mat2 must have the same dtype, but got Long and Float`,
`RuntimeError: expected scalar type Long but found Float`, `RuntimeError: Found dtype Double but
expected Float`, `RuntimeError: mean(): could not infer output dtype` or `RuntimeError: result
type Float can't be cast to the desired output type Byte` at the first step.

## Example
```python
x = torch.from_numpy(np.random.rand(64, 8))   # float64
y = model(x)                                  # SHP202: input float64, Linear weights float32
```

Use instead:
```python
x = torch.from_numpy(np.random.rand(64, 8)).float()
```

## References
- [Tensor attributes: `torch.dtype`](https://pytorch.org/docs/stable/tensor_attributes.html#torch-dtype)
- [`torch.nn.CrossEntropyLoss`](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
"#,
};

crate::violation! {
    /// A dtype torch rejects. `op` names the operation as the message shows it.
    pub enum DtypeMismatch for RULE {
        /// A layer's input dtype is not its weights'.
        Weights { op, shape, dtype, weights, fix } => "{op}: input {shape} is {dtype}, the weights {weights} (cast the input with {fix})",
        /// The operands of a product have different dtypes.
        Operands { op, a, a_dtype, b, b_dtype } => "{op}: {a} is {a_dtype}, {b} is {b_dtype} (must be the same dtype)",
        /// A loss target of a dtype the loss rejects.
        Target { op, shape, dtype, want } => "{op}: target {shape} is {dtype}, expected {want}",
        /// Class weights of another dtype than the loss's input.
        ClassWeights { op, shape, dtype, input } => "{op}: class weights {shape} are {dtype}, the input {input} (must be the same dtype)",
        /// Indices of a dtype torch rejects.
        Indices { op, shape, dtype, want } => "{op}: indices {shape} are {dtype}, expected {want}",
        /// A mask that is not bool.
        Mask { op, shape, dtype } => "{op}: mask {shape} is {dtype}, expected bool",
        /// An integer or bool input to an op torch implements only for floating dtypes.
        NotFloating { op, shape, dtype } => "{op}: input {shape} is {dtype}, torch implements it only for floating dtypes (cast it with `.float()` first)",
        /// A floating input to a bitwise op (`~`, `&`, `|`, `^`), which torch implements only
        /// for integer and bool tensors.
        NotIntegral { op, shape, dtype } => "{op}: operand {shape} is {dtype}, torch implements it only for integer and bool tensors (use a bool mask: `x > 0`, `.bool()`)",
        /// A bool subtracted or negated (`1 - mask`, `-mask`, `x - True`), which torch does not
        /// do with tensors.
        BoolArithmetic { op, operand } => "{op}: {operand} is a bool, and torch does not subtract or negate bools (invert a mask with `~mask` or `mask.logical_not()`)",
        /// A low-precision input to an op torch implements only for wider floats on the CPU.
        LowPrecisionOnCpu { op, shape, dtype } => "{op}: input {shape} is {dtype}, which torch does not implement on the CPU (cast it with `.float()` first)",
        /// An in-place op whose result torch cannot cast into the tensor written to.
        InPlace { op, target, dtype, result } => "{op}: the result is {result}, which cannot be written into {target} of {dtype} in place",
    }
}
