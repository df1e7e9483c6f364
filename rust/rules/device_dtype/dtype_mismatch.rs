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
    doc: r#"## What it does
Follows every tensor's dtype (creation functions and their `dtype=`, casts, `torch.from_numpy`
of float64 NumPy arrays, integer datasets, module parameters cast with `.double()`/`.half()`,
torch's promotion rules) and reports the dtypes torch rejects:
- an integer or bool input to `nn.Linear`, a convolution or a matrix product with float
  weights, and float64 against float32 there;
- float targets where `CrossEntropyLoss`/`NLLLoss` expect class indices, and integer targets
  where `BCELoss`/`BCEWithLogitsLoss` need floats;
- float indices into `nn.Embedding`.

## Why is this bad?
PyTorch raises `RuntimeError: mat1 and mat2 must have the same dtype, but got Long and Float`,
`RuntimeError: expected scalar type Long but found Float` or
`RuntimeError: Expected tensor for argument #1 'indices' to have one of the following scalar
types: Long, Int; but got torch.FloatTensor instead` at the first step.

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
        /// A layer or product whose input dtype is not its weights'.
        Weights { op, shape, dtype, weights } => "{op}: input {shape} is {dtype}, the weights {weights}",
        /// The two operands of a matrix product have different dtypes.
        Operands { op, a, a_dtype, b, b_dtype } => "{op}: {a} is {a_dtype}, {b} is {b_dtype} (must be the same dtype)",
        /// A loss target of a dtype the loss rejects.
        Target { op, shape, dtype, want } => "{op}: target {shape} is {dtype}, expected {want}",
        /// Indices of a float dtype.
        Indices { op, shape, dtype } => "{op}: indices {shape} are {dtype}, expected an integer dtype",
    }
}
