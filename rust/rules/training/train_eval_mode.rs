use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP307
pub const RULE: Rule = Rule {
    code: "SHP307",
    name: "train-eval-mode",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "Evaluation in training mode (no model.eval()), or training resumed in eval mode (no model.train())",
    messages: <TrainEvalMode as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
Follows the train/eval mode of each module (built in training mode; `.eval()`, `.train()`,
`.train(False)`), in a program that trains (it calls `backward()`), and reports:
- a call of a model holding `Dropout` or `BatchNorm` layers in training mode inside an
  evaluation helper: a function in which no `backward()` runs, that switches no module to
  training itself, that is no part of a model's run (a `forward`, a method of a module, or a
  function they call), and that returns no tensor and stores nothing with a graph (its results
  are metrics);
- a call of such a model, in training mode, inside an evaluation loop written inline (a
  `for` loop judged as SHP306 judges it: nothing in it uses a graph, it leaves no tensor with
  a graph behind), when the model trained earlier in the program and no `.train()` was called
  on it since that training (a model switched to training mode on purpose after training, for
  Monte Carlo dropout, is not reported);
- a `backward()` through a model that was trained in training mode, then switched to eval by
  `.eval()` (an evaluation between epochs), and never switched back: `model.train()` called
  once before the epoch loop.

A mode set by code the checker does not follow (`model.apply(fn)`, `for m in
model.modules(): ...`, a library call the model is handed to) is unknown and never reported,
nor is a model kept in eval mode from its first training step (frozen batch statistics), nor
a helper that returns tensors (a teacher's targets).

## Why is this bad?
Nothing raises. In training mode dropout drops activations and batch norm normalises with the
batch's statistics and updates its running ones: evaluation is noisy, depends on the batch,
and changes the model. In eval mode dropout is off and batch norm's statistics are frozen:
training after the first evaluation loses its regularisation.

## Example
```python
model.train()
for epoch in range(epochs):
    for x, y in loader:
        ...
        loss.backward()        # SHP307 from the second epoch: evaluate() left eval mode
        optimizer.step()
    evaluate(model, val_loader)    # calls model.eval()
```

Use instead:
```python
for epoch in range(epochs):
    model.train()
    for x, y in loader:
        ...
    evaluate(model, val_loader)
```

## References
- [nn.Module.eval](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
"#,
};

crate::violation! {
    /// A module in the wrong mode.
    pub enum TrainEvalMode for RULE {
        /// Evaluation in training mode.
        EvalInTraining { function, layer } => "the model runs in training mode in `{function}`, which evaluates it (no backward, only metrics): {layer} (call model.eval() first)",
        /// Training in eval mode after an evaluation.
        /// Evaluation in training mode in a loop written inline, after the model trained.
        EvalLoopInTraining { place, layer } => "the model runs in training mode in the evaluation loop at {place} (no backward, nothing with a graph kept) after it trained: {layer} (call model.eval() before the loop)",
        TrainInEval { layer, eval } => "backward(): the model was switched to eval mode by the .eval() at {eval} and never back: {layer} trains in eval mode (call model.train() at the start of each epoch)",
    }
}
