use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP313
pub const RULE: Rule = Rule {
    code: "SHP313",
    name: "plateau-step-without-metric",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "ReduceLROnPlateau.step() called without the metric it monitors",
    messages: <PlateauStepWithoutMetric as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Reports `scheduler.step()` with no argument on a `torch.optim.lr_scheduler.ReduceLROnPlateau`.
Unlike the other schedulers, which count epochs, it lowers the learning rate when a monitored
quantity stops improving, so its `step` takes that quantity: `step(metrics)`.

## Why is this bad?
`step()` raises `TypeError: ReduceLROnPlateau.step() missing 1 required positional argument:
'metrics'` at the end of the first epoch, after the epoch's training has run. It is the usual
slip when a `StepLR` or `CosineAnnealingLR` is swapped for `ReduceLROnPlateau` and the loop is
left as it was.

## Example
```python
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=2)
for epoch in range(epochs):
    train_one_epoch(model, loader, optimizer)
    val_loss = evaluate(model, val_loader)
    scheduler.step()            # SHP313: ReduceLROnPlateau.step() needs val_loss
```

Use instead:
```python
    scheduler.step(val_loss)
```

## References
- [torch.optim.lr_scheduler.ReduceLROnPlateau](https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.ReduceLROnPlateau.html)
"#,
};

crate::violation! {
    /// A plateau scheduler stepped without its metric.
    pub enum PlateauStepWithoutMetric for RULE {
        /// `step()` with no argument.
        Step { at } => "ReduceLROnPlateau.step() without the metric it monitors raises TypeError (missing 1 required positional argument: 'metrics'; scheduler built at {at}): pass it, as in scheduler.step(val_loss)",
    }
}
