use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP308
pub const RULE: Rule = Rule {
    code: "SHP308",
    name: "probabilities-as-logits",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "Softmax or sigmoid output passed to a loss that applies it itself (CrossEntropyLoss, BCEWithLogitsLoss), or softmax output to NLLLoss",
    messages: <ProbabilitiesAsLogits as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
Follows which tensors are the output of `softmax` (`F.softmax`, `torch.softmax`, `x.softmax`,
`nn.Softmax`) or `sigmoid` (`torch.sigmoid`, `x.sigmoid`, `nn.Sigmoid`), through the ops that
only move or reshape values (`view`, `reshape`, `squeeze`, `flatten`, `transpose`, `.to(...)`),
and reports:
- softmax probabilities passed as the input of `CrossEntropyLoss`/`F.cross_entropy`, which
  applies `log_softmax` itself;
- sigmoid probabilities passed as the input of `BCEWithLogitsLoss`/
  `F.binary_cross_entropy_with_logits`, which applies `sigmoid` itself;
- softmax probabilities passed as the input of `NLLLoss`/`F.nll_loss`, which takes
  log-probabilities (it negates the input at the target class: on probabilities the loss is
  `-p`, bounded in [-1, 0], and its gradient is not the cross entropy's).

It reports only when every path to the loss gives it such probabilities. `log_softmax` before
`NLLLoss` (or `torch.log` of the softmax) and `sigmoid` before `BCELoss` are correct, and are
not reported.

## Why is this bad?
Nothing raises. The loss squashes the probabilities a second time: its gradients shrink as
the model grows confident, the loss cannot fall below a floor well above zero, and the model
trains slowly to a worse optimum.

## Example
```python
probs = F.softmax(model(x), dim=1)
loss = F.cross_entropy(probs, y)      # SHP308: cross_entropy applies log_softmax itself
```

Use instead:
```python
loss = F.cross_entropy(model(x), y)   # logits
```

## References
- [`torch.nn.CrossEntropyLoss`](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
- [`torch.nn.BCEWithLogitsLoss`](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
"#,
};

crate::violation! {
    /// Probabilities where a loss expects logits.
    pub enum ProbabilitiesAsLogits for RULE {
        /// The loss's input is the output of the function it applies itself.
        Twice { loss, shape, act, place, applies } => "{loss}: input {shape} is the output of {act} at {place}, but the loss applies {applies} itself: pass the logits",
        /// NLLLoss's input is softmax probabilities, not their log.
        NotLog { loss, shape, place } => "{loss}: input {shape} is the output of a softmax at {place}, but the loss takes log-probabilities: use log_softmax",
    }
}
