use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP108
pub const RULE: Rule = Rule {
    code: "SHP108",
    name: "loss-target-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A loss function's input and target shapes do not fit",
    messages: <LossTargetMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks the input and target of loss functions: `CrossEntropyLoss`/`F.cross_entropy` and
`NLLLoss`/`F.nll_loss` (class-index targets must have the input's shape without the class
dim 1 and the same batch size; probability targets must have the input's shape),
`BCELoss`/`BCEWithLogitsLoss` and their functional forms (target and input must have the same
shape) and other losses whose input and target must broadcast.

## Why is this bad?
PyTorch raises `RuntimeError: 0D or 1D target tensor expected, multi-target not supported`
when the target is a `[batch, 1]` column of class indices (for a batch mismatch:
`ValueError: Expected input batch_size (8) to match target batch_size (16).`; for BCE:
`ValueError: Target size (torch.Size([8])) must be the same as input size
(torch.Size([8, 1]))`). It fails on the first training step, after data loading.

## Example
```python
criterion = nn.CrossEntropyLoss()
logits = model(x)                      # [batch, 10]
labels = batch["label"].view(-1, 1)    # [batch, 1]
loss = criterion(logits, labels)       # SHP108: class-index target must be [batch]
```

Use instead:
```python
labels = batch["label"].view(-1)       # [batch]
loss = criterion(logits, labels)
```

## References
- [`torch.nn.CrossEntropyLoss`](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
- [`torch.nn.NLLLoss`](https://pytorch.org/docs/stable/generated/torch.nn.NLLLoss.html)
- [`torch.nn.BCEWithLogitsLoss`](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
"#,
};

crate::violation! {
    /// A loss whose input and target (or other arguments) do not fit. `loss` names it as the
    /// message shows it (`F.cross_entropy`, `criterion (line 9): CrossEntropyLoss`).
    pub enum LossTargetMismatch for RULE {
        /// Cross entropy / NLL: an unbatched (1-D) input needs a 0-D target.
        UnbatchedTarget { loss, input, target } => "{loss}: unbatched input {input} expects a 0-D class-index target, got {target}",
        /// Cross entropy / NLL: a 2-D input with a multi-dim class-index target.
        MultiTarget { loss, target, input } => "{loss}: class-index target {target} must be 1-D for input {input} (0D or 1D target tensor expected, multi-target not supported)",
        /// Cross entropy / NLL: a class-index target needs one dim less than the input.
        TargetRank { loss, target, rank, input } => "{loss}: class-index target {target} must have {rank} dims for input {input}",
        /// Cross entropy / NLL: the batch sizes differ.
        BatchSize { loss, input_batch, target_batch, input, target } => "{loss}: input batch size {input_batch} does not match target batch size {target_batch} (input {input}, target {target})",
        /// Cross entropy / NLL: a dim after the class dim differs (`dim` counts in the target).
        TargetDim { loss, dim, input_size, target_size, input, target } => "{loss}: dim {dim}: {input_size} vs {target_size} (input {input}, target {target})",
        /// Cross entropy with class probabilities: the target's shape is not the input's.
        ProbabilityShape { loss, target, input } => "{loss}: probability target {target} must have the input's shape {input}",
        /// BCE: the shapes differ.
        SameSize { loss, target, input } => "{loss}: target size {target} must be the same as input size {input}",
        /// Soft margin: the target broadcasts the input to a larger shape.
        Broadcasts { loss, target, input } => "{loss}: target {target} broadcasts input {input} to a larger shape",
        /// Cosine embedding: the target is neither 0-D nor 1-D.
        CosineTarget { loss, target } => "{loss}: 0-D or 1-D target expected, got {target}",
        /// Cosine embedding: the inputs need one dim more than the target.
        CosineInputs { loss, rank, input_rank, x1, x2 } => "{loss}: a {rank}-D target expects {input_rank}-D inputs, got {x1} and {x2}",
        /// Margin ranking: the three tensors differ in rank.
        RankingRanks { loss, x1, x2, target } => "{loss}: all inputs should have the same number of dims, got {x1}, {x2} and {target}",
        /// Triplet margin: the three tensors differ in rank.
        TripletRanks { loss, anchor, positive, negative } => "{loss}: anchor {anchor}, positive {positive} and negative {negative} should have the same number of dims",
        /// CTC: `log_probs` or `targets` of the wrong rank.
        CtcRanks { loss, log_probs, targets } => "{loss}: expected log_probs [T, N, C] or [T, C] and 1-D or 2-D targets, got {log_probs} and {targets}",
        /// CTC: the targets' batch size is not the log_probs'.
        CtcBatch { loss, targets, log_probs } => "{loss}: targets {targets} do not have the batch size of log_probs {log_probs}",
        /// CTC: `input_lengths`/`target_lengths` (`name`) is not of size batch_size.
        CtcLengths { loss, name, shape, log_probs } => "{loss}: {name} {shape} must be of size batch_size (log_probs {log_probs})",
    }
}
