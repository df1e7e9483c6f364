use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP110
pub const RULE: Rule = Rule {
    code: "SHP110",
    name: "index-out-of-range",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A constant index (or the k of topk/kthvalue) is out of range for its dimension",
    messages: <IndexOutOfRange as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks constant indices into dimensions of known size: subscripts (`x[2]`, `x[:, -5]`),
`select(dim, index)`, `narrow(dim, start, length)` (which needs `start + length <= size`)
and unpacking of per-layer states such as `h_n[i]` of an RNN, and the unpacking of the pieces of
`chunk`/`split`/`unbind` (and their kin) into another number of names than there are pieces
(`a, b, c = x.chunk(2)`: `ValueError: not enough values to unpack (expected 3, got 2)`). Slices
are not checked: they clamp instead of failing.

It also checks index tensors whose values are known: those of `torch.arange`, `torch.full`,
`torch.zeros`/`ones` of an integer dtype, integer literals (`torch.tensor([3, 7])`),
`torch.randint(low, high, ...)` and `torch.randperm`, carried through views, `long()`,
`clone()`, indexing and `x + k`. A value certainly present (or every possible value) outside
`[0, num_embeddings)` of an `nn.Embedding`/`F.embedding` (and their bags), `[0, num_classes)` of `F.one_hot`
(negative ones also without `num_classes`), `[0, size)` of `index_select`, or the classes of
`cross_entropy`/`nll_loss` (other than `ignore_index`) is reported. Values are forgotten
at any in-place write or call the checker does not see into.

## Why is this bad?
PyTorch raises `IndexError: index 2 is out of bounds for dimension 0 with size 2` (for
`select`: `IndexError: select(): index 3 out of range for tensor of size [8, 3, 10] at
dimension 1`; for `narrow`: `RuntimeError: start (5) + length (6) exceeds dimension size
(10).`) when the line runs.

(Embeddings, `index_select`: `IndexError: index out of range in self`; `one_hot`:
`RuntimeError: Class values must be smaller than num_classes.`; losses: `IndexError: Target 5
is out of bounds.`)

## Example
```python
self.lstm = nn.LSTM(16, 32, num_layers=2)
...
_, (h_n, c_n) = self.lstm(x)         # h_n: [2, batch, 32]
last = h_n[self.num_layers]          # SHP110: index 2 is out of range for size 2
```

Use instead:
```python
last = h_n[-1]                        # the last layer's final hidden state
```

## References
- [`torch.Tensor`](https://pytorch.org/docs/stable/tensors.html)
- [`torch.select`](https://pytorch.org/docs/stable/generated/torch.select.html)
- [`torch.narrow`](https://pytorch.org/docs/stable/generated/torch.narrow.html)
- [`torch.nn.LSTM`](https://pytorch.org/docs/stable/generated/torch.nn.LSTM.html)
"#,
};

crate::violation! {
    /// A constant index or count outside the size of the dim it indexes.
    pub enum IndexOutOfRange for RULE {
        /// `topk` with `k` larger than the dim.
        TopK { k, dim, shape, size } => "topk: k={k} is larger than dimension {dim} of {shape} (size {size})",
        /// `kthvalue` with `k` outside `[1, size]`.
        KthValue { k, shape, dim } => "kthvalue: k={k} is out of range for {shape} along dim {dim}",
        /// `narrow` past the end of the dim.
        Narrow { end, dim, size, shape } => "narrow: start + length = {end} exceeds dimension {dim} of size {size} (tensor {shape})",
        /// `x[...]` with more indices than dims.
        TooManyIndices { shape, count, rank } => "too many indices for tensor {shape}: {count} indices for {rank} dimensions",
        /// `x[i]` with a constant `i` outside the dim.
        /// The pieces of `chunk`/`split`/`unbind` unpacked into another number of names.
        Unpack { op, count, names } => "{op} gives {count} tensors, which cannot be unpacked into {names} names",
        Subscript { index, dim, size, shape } => "index {index} is out of bounds for dimension {dim} with size {size} (tensor {shape})",
        /// Known values of an index tensor (from `arange`, `full`, a literal, `randint`, ...)
        /// outside the range an embedding, `one_hot`, `index_select` or a loss accepts.
        Value { op, index, src, line, bound } => "{op}: index {index} (from {src} at line {line}) is out of range for {bound}",
        /// `select` with an index outside the dim.
        Select { op, index, dim, shape, size } => "{op}: index {index} is out of range for dimension {dim} of {shape} (size {size})",
    }
}
