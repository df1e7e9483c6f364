use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP111
pub const RULE: Rule = Rule {
    code: "SHP111",
    name: "invalid-shape-argument",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A shape argument or a layer's configuration breaks a precondition torch enforces",
    messages: <InvalidShapeArgument as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks the remaining shape preconditions of PyTorch APIs, at layer construction or call:
`embed_dim` divisible by `num_heads` (`MultiheadAttention`, `TransformerEncoderLayer`, ...),
`in_channels` and `out_channels` divisible by `groups` (convolutions), `num_channels`
divisible by `num_groups` (`GroupNorm`), `split` sizes summing to the size of the split dim,
`chunk` with a positive number of chunks, `unflatten` sizes multiplying to the dim,
`expand` only growing singleton dims, `PixelShuffle` channels divisible by the square of the
factor, and padding no longer than the input's dims. Also the arguments torch checks by value:
positive `groups` and recurrent sizes, `padding_idx` within the table, a recurrent `dropout` in
[0, 1], the `mode`/`nonlinearity`/`activation` strings torch knows, batch norm's `eps`,
`Hardtanh`'s bounds and a triplet loss's positive `margin`.

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

crate::violation! {
    /// A shape argument (or a layer's configuration) that torch rejects. `op` names the
    /// layer or function as the message shows it (`attn (line 5): MultiheadAttention`, `F.pad`).
    pub enum InvalidShapeArgument for RULE {
        /// Construction: `param` (`embed_dim`, `in_channels`, ...) not divisible by `by_param`
        /// (`num_heads`, `groups`, ...).
        NotDivisible { op, param, value, by_param, by } => "{op}: {param}={value} must be divisible by {by_param}={by}",
        /// `nn.GroupNorm`: `num_channels` not divisible by `num_groups`.
        GroupNormChannels { channels, groups } => "GroupNorm: num_channels ({channels}) must be divisible by num_groups ({groups})",
        /// `F.conv*`: the weight's dim 0 not divisible by `groups`.
        WeightGroups { op, size, groups } => "{op}: weight dim 0 ({size}) must be divisible by groups={groups}",
        /// Convolutions: `padding='same'` with a stride.
        SameStrided { op } => "{op}: padding='same' is not supported for strided convolutions",
        /// Transposed convolutions: `output_padding` too large.
        OutputPadding { op, output_padding, stride, dilation } => "{op}: output_padding={output_padding} must be smaller than either stride={stride} or dilation={dilation}",
        /// Pooling: `padding` more than half the kernel.
        PoolPadding { op, padding, kernel_size } => "{op}: padding={padding} should be at most half of kernel_size={kernel_size}",
        /// Recurrent layers: `proj_size` on another layer than LSTM.
        ProjSizeNotLstm { op } => "{op}: proj_size is only supported for LSTM",
        /// `nn.LSTM`: `proj_size` not smaller than `hidden_size`.
        ProjSizeTooLarge { op, proj_size, hidden_size } => "{op}: proj_size={proj_size} has to be smaller than hidden_size={hidden_size}",
        /// Recurrent layers: an initial state (`op` names the layer and the state) of another shape.
        StateShape { op, want, shape } => "{op}: expected shape {want}, got {shape}",
        /// `nn.MultiheadAttention`: key and value differ.
        KeyValue { op, key, value } => "{op}: key {key} does not match value {value}",
        /// `nn.MultiheadAttention`: the key's batch size is not the query's.
        KeyBatch { op, key_batch, query_batch, query, key } => "{op}: key batch size {key_batch} does not match query batch size {query_batch} (query {query}, key {key})",
        /// `nn.MultiheadAttention`: an `attn_mask` that is neither 2-D nor 3-D.
        MaskRank { op, mask } => "{op}: attn_mask {mask} must be 2-D or 3-D",
        /// `nn.MultiheadAttention`: `attn_mask`/`key_padding_mask` (`name`) of another shape.
        MaskShape { op, name, mask, want } => "{op}: {name} {mask} should have shape {want}",
        /// Transformer decoders: the batch sizes of the two inputs differ.
        DecoderBatch { op, second_name, second, second_batch, first_name, first, first_batch } => "{op}: batch size of {second_name} {second} ({second_batch}) does not match {first_name} {first} ({first_batch})",
        /// `nn.Bilinear`/`F.bilinear`: the batch dims of the inputs differ.
        BilinearBatch { op, lhs, rhs, dim } => "{op}: batch dims of {lhs} and {rhs} do not match at dim {dim}",
        /// `nn.Embedding`/`F.embedding`: indices that are not integers.
        IndexDtype { op, indices } => "{op}: indices {indices} must be a Long or Int tensor",
        /// `F.one_hot` on a tensor that is not Long.
        OneHotDtype { input } => "F.one_hot: input {input} must be a LongTensor of class indices",
        /// Batch norm in training: one value per channel.
        BatchStats { op, input } => "{op}: expected more than 1 value per channel when training, got input {input}",
        /// Instance norm: one spatial element.
        InstanceStats { op, input } => "{op}: expected more than 1 spatial element when training, got input {input}",
        /// `pack_padded_sequence`: not one length per sequence of the batch.
        PackedLengths { count, input, batch } => "pack_padded_sequence: expected one length per sequence, got {count} lengths for input {input} of batch size {batch}",
        /// Group norm: one value per group.
        GroupStats { op, input } => "{op}: expected more than 1 value per group, got input {input}",
        /// `roll` with shifts and dims that do not align (one shift without dims, or one per dim).
        RollShifts { shifts, dims } => "roll: {shifts} shifts and {dims} dims do not align (one shift without dims, or one shift per dim)",
        /// A loss's `reduction` string that torch does not know.
        Reduction { op, value } => "{op}: '{value}' is not a valid value for reduction",
        /// `glu`: an odd size along the halved dim.
        GluOdd { op, dim, input, size } => "{op}: halving dim {dim} of input {input} needs an even size, got {size}",
        /// `unflatten`/`nn.Unflatten`: more than one `-1` (or a size below -1).
        UnflattenSizes { op, sizes } => "{op}: sizes {sizes} may contain at most one -1",
        /// `F.pad`: an odd number of padding values.
        PadOdd { op, len } => "{op}: padding length {len} must be divisible by 2",
        /// `F.pad(mode='reflect')`: a padding not less than the dim's size.
        ReflectPad { op, pad, size, dim, input } => "{op}: reflect padding {pad} must be less than the size {size} of dim {dim} of input {input}",
        /// `F.pad(mode='circular')`: a padding larger than the dim's size.
        CircularPad { op, pad, size, dim, input } => "{op}: circular padding {pad} must be at most the size {size} of dim {dim} of input {input}",
        /// `pixel_unshuffle`: the height or width (`name`) not divisible by the factor.
        Unshuffle { op, name, size, input, factor } => "{op}: {name} {size} of input {input} is not divisible by downscale_factor={factor}",
        /// `pixel_shuffle`: the channels not divisible by the square of the factor.
        Shuffle { op, channels, input, factor2 } => "{op}: {channels} channels of input {input} are not divisible by upscale_factor^2={factor2}",
        /// `F.interpolate`/`nn.Upsample`: both or neither of `size` and `scale_factor`.
        SizeOrScale { op } => "{op}: exactly one of size or scale_factor should be given",
        /// `F.interpolate`/`nn.Upsample`: `size` or `scale_factor` (`arg`) with another number
        /// of values than spatial dims.
        SpatialCount { op, arg, count, input, spatial } => "{op}: {arg} has {count} values but input {input} has {spatial} spatial dims",
        /// `repeat` with fewer sizes than dims.
        TooFewRepeats { count, shape, rank } => "repeat: the number of repeat dims ({count}) is smaller than the number of dims of {shape} ({rank})",
        /// `expand` with fewer sizes than dims.
        TooFewSizes { op, count, shape, rank } => "{op}: the number of sizes ({count}) is smaller than the number of dims of {shape} ({rank})",
        /// `split` with section sizes that do not sum to the dim's size.
        SplitSizes { total, dim, shape, size } => "split: section sizes sum to {total} but dimension {dim} of {shape} has size {size}",
        /// `index_select` with an index that is not a vector.
        /// `index_add`: the index is not a vector.
        IndexAddRank { op, index, rank } => "{op}: the index {index} must be a vector (1-D), it is {rank}-D",
        /// `index_add`: the number of indices is not the source's size at the dim.
        IndexAddCount { op, count, source, dim, size } => "{op}: {count} indices, but source {source} has size {size} at dim {dim} (one source slice per index)",
        /// `index_add`: the source differs from the input outside the dim.
        IndexAddSource { op, source, input, dim } => "{op}: source {source} must match the input {input} outside dimension {dim}",
        IndexSelectRank { index, rank } => "index_select: the index {index} must be a vector (1-D), it is {rank}-D",
        /// `gather`/`scatter`: the index's rank is not the input's.
        IndexRank { op, index, input } => "{op}: the index {index} must have as many dims as the input {input}",
        /// `gather`/`scatter`: the index is larger than the input outside `dim`.
        IndexLarger { op, index, input, dim } => "{op}: the index {index} is larger than the input {input} outside dimension {dim}",
        /// `einsum`: a term names another number of dims than its operand has.
        EinsumRank { term, count, operand, rank, shape } => "einsum: subscripts '{term}' name {count} dims but operand {operand} is {rank}-D {shape}",
        /// `linspace`/`logspace` with negative steps.
        NegativeSteps { op } => "{op}: the number of steps must be non-negative",
        /// `arange` whose end is before its start.
        ArangeNegative {} => "torch.arange: the end is before the start for a positive step (the range would have a negative length)",
        /// Unfold/Fold: an argument that is neither an int nor a pair.
        PairArg { op, name, n } => "{op}: {name} must be an int or a pair of ints, got a {n}-tuple",
        /// Unfold/Fold: kernel, dilation, stride at least 1, padding at least 0, output size positive.
        ArgMust { op, name, value, should } => "{op}: {name}={value} must {should}",
        /// Fold: the channel dim is not a multiple of the kernel's elements.
        FoldChannels { op, channels, input, kernel } => "{op}: channel dim {channels} of input {input} is not divisible by kernel_size's {kernel} elements",
        /// Fold: the last dim is not the number of blocks the sizes give.
        FoldBlocks { op, want, input, got } => "{op}: expected {want} blocks in the last dim of input {input}, got {got}",
        /// `Tensor.unfold`: a negative window size.
        Negative { op, name, value } => "{op}: {name} {value} must not be negative",
        /// `Tensor.unfold`: a step below 1.
        NotPositive { op, name, value } => "{op}: {name} {value} must be positive",
    }
}
