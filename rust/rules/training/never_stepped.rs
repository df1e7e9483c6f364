use crate::ir::Span;
use crate::rules::events::RuleCtx;
use crate::rules::violation::Violation;
use crate::value::State;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP302
pub const RULE: Rule = Rule {
    code: "SHP302",
    name: "optimizer-never-stepped",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "backward() in a loop fills the gradients of an optimizer that is never stepped",
    messages: <NeverStepped as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
Reports a `backward()` in a loop whose loss reaches the layers of an optimizer that the
program never steps: no `optimizer.step()` (nor `step(closure)`) runs anywhere after the
optimizer is built, and it is never handed to code that could step it (`scaler.step(optimizer)`,
a library trainer). Stepping only the learning-rate scheduler is the usual form. The program
is read as a whole: a step in a helper, after an inner loop (one step per epoch), or in any
branch keeps the rule silent, and so does any `.step` the analysis did not follow, or a
program that reads some `.grad` (its backward may be for the gradients themselves: an
adversarial example, a saliency map, a hand-written update).

## Why is this bad?
Nothing raises. The gradients are computed and accumulated, the learning rate is scheduled,
the loss is logged, but the weights never change: the model trains nothing. The logged loss
stays flat, which is easy to mistake for a too small learning rate.

## Example
```python
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()            # SHP302: optimizer is never stepped
    scheduler.step()
```

Use instead:
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    scheduler.step()
```

## References
- [torch.optim: taking an optimization step](https://pytorch.org/docs/stable/optim.html#taking-an-optimization-step)
"#,
};

crate::violation! {
    /// An optimizer with gradients and no step.
    pub enum NeverStepped for RULE {
        /// The backward whose gradients no step uses.
        Backward { optimizer, scheduler } => "backward(): the gradients it adds to {optimizer} are never used: the optimizer is never stepped{scheduler}, so the weights never change (call optimizer.step() after backward())",
    }
}

/// The check, at the end of the script's run, every path of which was followed with no call cut
/// short (`engine/entry.rs`). `unstepped`: the optimizers a backward in a loop gave gradients
/// (where each was built, that backward, and whether a scheduler was built on it), when no
/// path stepped any optimizer or handed one on, and the run read every `.step` written in the
/// program's files (`models::torch::optim::unstepped`). Reported at that backward. Not in a
/// program that reads some `.grad` (`reads_grads`): its backward may be for the gradients
/// themselves (an adversarial input `x.grad`, a saliency map, a hand-written update).
pub fn check(cx: &mut dyn RuleCtx, unstepped: &[(Span, Span, bool)], reads_grads: bool) {
    if reads_grads {
        return;
    }
    let st = State::new();
    for &(built, backward, scheduled) in unstepped {
        let v = NeverStepped::Backward {
            optimizer: format!("the optimizer built at {}", cx.place(built)),
            scheduler: if scheduled { " (only its learning-rate scheduler is)".to_string() } else { String::new() },
        };
        cx.warn(&st, backward, &RULE, v.message());
    }
}
