use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP201
pub const RULE: Rule = Rule {
    code: "SHP201",
    name: "device-mismatch",
    family: Family::DeviceDtype,
    status: RuleStatus::Stable,
    summary: "Tensors on different devices (the CPU and an accelerator) meet in one op, layer or loss",
    messages: <DeviceMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Follows where every tensor lives: creation functions (`device=`, else the CPU), `.to(...)` in
its forms, `.cuda()`/`.cpu()`, `DataLoader` batches (on the CPU), module parameters and buffers
moved with `model.to(device)`/`.cuda()`. Reports a layer whose input is on another device than
its parameters (an RNN's initial state too), a loss whose target or class weights are on
another device than its input, a pointwise op, matrix product, `cat`/`stack`, `where` or
`masked_fill` mixing devices, and a tensor on an accelerator handed to NumPy (`.numpy()`,
`np.array(t)`). As torch does, a 0-dim CPU tensor may meet a tensor on any device.

`device = "cuda" if torch.cuda.is_available() else "cpu"` is a device that depends on the
machine: a mismatch on every path where CUDA exists is reported with the condition
`(when CUDA is available)`, the machine the model trains on.

## Why is this bad?
PyTorch raises `RuntimeError: Expected all tensors to be on the same device, but found at
least two devices, cuda:0 and cpu!` (for a layer: `Input type (torch.FloatTensor) and weight
type (torch.cuda.FloatTensor) should be the same`; for NumPy: `TypeError: can't convert cuda:0
device type tensor to numpy`) at the first step on the GPU machine. On the laptop where the
script was written it runs.

## Example
```python
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
for images, labels in loader:
    logits = model(images)    # SHP201: input [32, 1, 28, 28] is on cpu, the parameters on cuda
```

Use instead:
```python
for images, labels in loader:
    images, labels = images.to(device), labels.to(device)
    logits = model(images)
```

## References
- [Tensor attributes: `torch.device`](https://pytorch.org/docs/stable/tensor_attributes.html#torch-device)
- [CUDA semantics](https://pytorch.org/docs/stable/notes/cuda.html)
"#,
};

crate::violation! {
    /// Tensors on different devices meet. `op` names the operation as the message shows it.
    pub enum DeviceMismatch for RULE {
        /// A layer's input (or hidden state) is not on the device of its parameters.
        Layer { op, what, shape, device, params } => "{op}: {what} {shape} is on {device}, the layer's parameters on {params}",
        /// Two arguments of an op (a loss's input and target, the operands of `+`) differ.
        Operands { op, a, a_shape, a_device, b, b_shape, b_device } => "{op}: {a} {a_shape} is on {a_device}, {b} {b_shape} on {b_device}",
        /// A tensor on an accelerator handed to NumPy, which reads host memory only.
        ToNumpy { op, shape, device } => "{op}: {shape} is on {device}, NumPy reads only CPU tensors (use `.cpu()` first)",
    }
}
