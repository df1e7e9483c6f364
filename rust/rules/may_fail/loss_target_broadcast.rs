//! SHP901 loss-target-broadcast: a rule with logic of its own, run on `ApiCall` events.

use crate::ir::Name;
use crate::rules::events::{ApiCall, Event, EventKind, RuleCtx, Subscriber};
use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};
use crate::shape::{Rel, Tri};
use crate::value::{Obj, State, Value, show_shape};

/// SHP901
pub const RULE: Rule = Rule {
    code: "SHP901",
    name: "loss-target-broadcast",
    family: Family::MayFail,
    status: RuleStatus::Preview,
    summary: "A regression loss broadcasts its target against an input of another shape (torch only warns)",
    messages: <LossTargetBroadcast as Violation>::MESSAGES,
    default_enabled: false,
    raises: false,
    doc: r#"## What it does
Flags the elementwise regression losses (`MSELoss`, `L1Loss`, `SmoothL1Loss`, `HuberLoss` and
their `F.*` twins) when the input and the target have different shapes that broadcast. Opt-in:
the core produces it only with `--may-fail` (`may-fail = true`), and it must be selected
(`--extend-select SHP9` under flake8).

## Why is this bad?
torch does not raise: it warns `Using a target size (torch.Size([64])) that is different to the
input size (torch.Size([64, 1])). This will likely lead to incorrect results due to
broadcasting.` and computes the loss over a `[64, 64]` matrix of all pairs. Training runs, the
loss goes down slowly or not at all, and nothing points at the line.

## Example
```python
pred = model(x)                 # [batch, 1]
loss = F.mse_loss(pred, y)      # SHP901: y is [batch]; the loss compares all pairs
```

Use instead:
```python
loss = F.mse_loss(pred.squeeze(1), y)
```

## References
- [`torch.nn.MSELoss`](https://pytorch.org/docs/stable/generated/torch.nn.MSELoss.html)
"#,
};

/// The losses torch computes elementwise after broadcasting the target, warning when the
/// shapes differ: the modules and their functional twins.
const LOSSES: &[(&str, &str)] = &[
    ("torch.nn.MSELoss", "torch.nn.functional.mse_loss"),
    ("torch.nn.L1Loss", "torch.nn.functional.l1_loss"),
    ("torch.nn.SmoothL1Loss", "torch.nn.functional.smooth_l1_loss"),
    ("torch.nn.HuberLoss", "torch.nn.functional.huber_loss"),
];

crate::violation! {
    /// A regression loss whose target broadcasts against its input. `loss` is `F.mse_loss`, or
    /// the module's label and class (`loss_fn (line 12): MSELoss`).
    pub enum LossTargetBroadcast for RULE {
        Differ { loss, target, input } => "{loss}: target {target} and input {input} differ in shape and are broadcast (torch only warns; the loss is likely wrong)",
    }
}

/// The check: after a call of one of `LOSSES` returned (torch broadcast the two), the input
/// and target shapes have known ranks and differ (in rank, or in a dim the facts decide).
pub struct Check;

impl Subscriber for Check {
    fn rule(&self) -> &'static Rule {
        &RULE
    }

    fn events(&self) -> &'static [EventKind] {
        &[EventKind::ApiCall]
    }

    fn on(&self, event: &Event, st: &State, cx: &mut dyn RuleCtx) {
        let Event::ApiCall(call) = event else { return };
        let Some(&(module, functional)) = LOSSES.iter().find(|(m, f)| call.name == *m || call.name == *f) else { return };
        let (Some(Value::Tensor(x)), Some(Value::Tensor(y))) = (arg(call, 0, "input"), arg(call, 1, "target")) else { return };
        let (sx, sy) = (st.resolve(&x.shape), st.resolve(&y.shape));
        if sx.rank().is_none() || sy.rank().is_none() {
            return;
        }
        let syms = cx.syms();
        let differ = sx.dims.len() != sy.dims.len()
            || sx.dims.iter().zip(&sy.dims).any(|(a, b)| match (&a.v, &b.v) {
                (Some(p), Some(q)) => st.facts.compare(syms, p, Rel::Eq, q) == Tri::False,
                _ => false,
            });
        if !differ {
            return;
        }
        let loss = if call.name == functional {
            format!("F.{}", functional.rsplit('.').next().unwrap_or(functional))
        } else {
            let class = module.rsplit('.').next().unwrap_or(module);
            match call.receiver.and_then(|r| layer_label(st, r)) {
                Some(label) => format!("{label}: {class}"),
                None => class.to_string(),
            }
        };
        let v = LossTargetBroadcast::Differ { loss, target: show_shape(syms, st, &sy), input: show_shape(syms, st, &sx) };
        cx.warn(st, call.span, &RULE, v.message());
    }
}

/// Argument `i`, or the keyword `name`.
fn arg<'a>(call: &'a ApiCall, i: usize, name: &str) -> Option<&'a Value> {
    call.args.get(i).or_else(|| call.kwargs.iter().find(|(k, _): &&(Name, Value)| &**k == name).map(|(_, v)| v))
}

/// The label of a module object built by the user (`loss_fn (line 12)`).
fn layer_label(st: &State, v: &Value) -> Option<String> {
    let Value::Ref(id) = v else { return None };
    match st.get(*id) {
        Obj::Layer(l) => l.label.as_deref().map(String::from),
        _ => None,
    }
}
