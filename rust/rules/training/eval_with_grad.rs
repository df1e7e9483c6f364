use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP306
pub const RULE: Rule = Rule {
    code: "SHP306",
    name: "eval-with-grad",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "An evaluation pass runs the model with gradients on: wrap it in torch.no_grad()",
    messages: <EvalWithGrad as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
In a program that trains (it calls `backward()`), reports a call of a model, inside a helper
function, that builds an autograd graph nobody uses: the call runs with gradients on (no
`torch.no_grad()`, `torch.inference_mode()` or `@torch.no_grad()` around it) every time the
helper runs it, no `backward()` (nor `torch.autograd`, nor any call the checker does not
follow that is handed a tensor with a graph) runs while the helper runs, and the helper
neither returns nor stores anything that still carries a graph: its results are metrics
(`.item()`, `argmax`, Python numbers). A helper that returns the outputs or the loss (a
training step's forward), or that stores them, is not reported.

An evaluation loop written inline (in the script, or in a function that also trains) is
judged the same way: a `for` loop that calls the model with gradients on at every run, in
which nothing uses a graph, and that leaves no tensor with a graph behind: no name it assigns
holding one is read after the loop (before it is assigned again; the rest of the enclosing
loop's body counts, since it runs again), and no object from before the loop (a list of
predictions) holds one it did not hold. A loop in a function that has not trained yet is left
to the function's judgement at its return.

## Why is this bad?
Nothing raises. Autograd records every operation and keeps the activations the backward
would need until the outputs are freed: evaluation runs slower and holds far more memory than
it needs (often the cause of running out of memory during validation). A helper that lost its
`@torch.no_grad()` is the classic form.

## Example
```python
def evaluate(model, loader):
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()   # SHP306
    return correct
```

Use instead:
```python
@torch.no_grad()
def evaluate(model, loader):
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
```

## References
- [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
"#,
};

crate::violation! {
    /// A model run with gradients on for results that keep no graph.
    pub enum EvalWithGrad for RULE {
        /// The call in an evaluation helper.
        Call { function } => "the model runs with gradients on in `{function}`, which runs no backward and returns or keeps nothing with a graph: autograd records this evaluation for nothing (wrap it in torch.no_grad() or decorate `{function}` with @torch.no_grad())",
        /// The call in an evaluation loop written inline.
        Loop { place } => "the model runs with gradients on in the loop at {place}, which runs no backward and keeps nothing with a graph: autograd records this evaluation for nothing (wrap the loop in torch.no_grad())",
    }
}
