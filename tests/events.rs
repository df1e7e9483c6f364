//! The engine's event stream (`rules::events`), observed by a test subscriber, and the one
//! rule that runs on it today (SHP901).

use std::cell::RefCell;

use shape_lint::rules::events::{Event, EventKind, GradOp, RuleCtx, Subscriber};
use shape_lint::rules::{Family, Rule, RuleStatus};
use shape_lint::value::{State, Value};
use shape_lint::{Settings, ir, parse};

static OBSERVER: Rule = Rule { code: "SHP099", name: "observer", family: Family::Meta, status: RuleStatus::Preview, raises: false, summary: "", messages: &[], doc: "", default_enabled: true };

thread_local! {
    // each test runs on its own thread, and the engine runs the subscribers on the caller's
    static SEEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

struct Observer;

impl Subscriber for Observer {
    fn rule(&self) -> &'static Rule {
        &OBSERVER
    }
    fn events(&self) -> &'static [EventKind] {
        &[EventKind::ApiCall, EventKind::Backward, EventKind::AttrStore, EventKind::Gradients, EventKind::LoopBackEdge, EventKind::FunctionExit]
    }
    fn on(&self, event: &Event, st: &State, _cx: &mut dyn RuleCtx) {
        let text = match event {
            Event::ApiCall(c) => {
                let result = match c.result {
                    Value::Tensor(t) => format!("{:?}", st.resolve(&t.shape).dims.iter().map(|d| d.as_const()).collect::<Vec<_>>()),
                    Value::Unknown => "unknown".into(),
                    _ => "value".into(),
                };
                format!("call {} receiver={} args={} -> {result}", c.name, c.receiver.is_some(), c.args.len() + c.kwargs.len())
            }
            Event::Backward { .. } => "backward".into(),
            Event::AttrStore { attr, .. } => format!("store .{attr}"),
            Event::Gradients { op, optimizer, .. } => {
                let op = match op {
                    GradOp::ZeroGrad => "zero_grad".to_string(),
                    GradOp::Step => "step".to_string(),
                    GradOp::Clip { op } => op.to_string(),
                    GradOp::Iteration { began, zeroed_here, zeroed_each } => format!("iteration from {:?} zeroed here={zeroed_here} each={}", began.grads, zeroed_each.is_some()),
                };
                format!("gradients {op}: {:?}", optimizer.grads)
            }
            Event::LoopBackEdge { .. } => "back-edge".into(),
            Event::FunctionExit { function, .. } => format!("exit {function}"),
        };
        SEEN.with(|s| s.borrow_mut().push(text));
    }
}

static OBSERVE: &[&dyn Subscriber] = &[&Observer];

fn events(src: &str) -> Vec<String> {
    SEEN.with(|s| s.borrow_mut().clear());
    let parsed = parse::parse(src);
    let module = ir::lower::lower_module(&parsed);
    let _ = shape_lint::engine::analyze_observed(&module, &parsed, &Settings::default(), OBSERVE);
    SEEN.with(|s| s.borrow().clone())
}

#[test]
fn the_engine_delivers_each_kind_of_event() {
    let src = "import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\ndef train():\n    net = Net()\n    for step in range(2):\n        out = net(torch.randn(3, 4))\n        loss = out.sum()\n        loss.backward()\n    return loss\n\ntrain()\n";
    let seen = events(src);
    let has = |s: &str| seen.iter().any(|e| e == s);
    assert!(has("call torch.nn.Linear receiver=false args=2 -> value"), "{seen:#?}");
    assert!(has("store .fc"), "{seen:#?}");
    assert!(has("call torch.randn receiver=false args=2 -> [Some(3), Some(4)]"), "{seen:#?}");
    assert!(has("call torch.nn.Linear receiver=true args=1 -> [Some(3), Some(2)]"), "the module call: {seen:#?}");
    assert!(has("call torch.Tensor.sum receiver=true args=0 -> []"), "{seen:#?}");
    assert!(has("backward"), "{seen:#?}");
    assert_eq!(seen.iter().filter(|e| *e == "back-edge").count(), 2, "one back-edge per iteration: {seen:#?}");
    assert!(has("exit forward") && has("exit train") && has("exit __init__"), "{seen:#?}");
}

#[test]
fn a_call_that_raises_delivers_no_api_call() {
    let src = "import torch\nx = torch.randn(3, 4)\ny = x.view(5)\n";
    let seen = events(src);
    assert!(seen.iter().any(|e| e.starts_with("call torch.randn")), "{seen:#?}");
    assert!(!seen.iter().any(|e| e.starts_with("call torch.Tensor.view")), "view raises, so it never returns: {seen:#?}");
}

#[test]
fn an_opt_in_rule_has_no_subscriber_unless_enabled() {
    let src = "import torch\nimport torch.nn.functional as F\np = torch.randn(8, 1)\ny = torch.randn(8)\nl = F.mse_loss(p, y)\n";
    let parsed = parse::parse(src);
    let module = ir::lower::lower_module(&parsed);
    let off = shape_lint::engine::analyze_with_stats(&module, &parsed, &Settings::default()).0;
    assert!(off.is_empty(), "{off:?}");
    let on = shape_lint::engine::analyze_with_stats(&module, &parsed, &Settings { may_fail: true, ..Settings::default() }).0;
    assert_eq!(on.iter().map(|f| (f.row, f.rule.code)).collect::<Vec<_>>(), [(5, "SHP901")]);
    assert_eq!(on[0].message, "F.mse_loss: target [8] and input [8, 1] differ in shape and are broadcast (torch only warns; the loss is likely wrong)");
}

#[test]
fn an_optimizer_tells_its_gradients_before_each_change() {
    let src = "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x in torch.randn(100, 3, 4):\n    opt.zero_grad()\n    model(x).sum().backward()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n";
    let seen: Vec<String> = events(src).into_iter().filter(|e| e.starts_with("gradients")).collect();
    assert_eq!(
        seen,
        [
            "gradients zero_grad: Some(None)",
            "gradients clip_grad_norm_: Some(Backward)",
            "gradients step: Some(Backward)",
            "gradients iteration from Some(None) zeroed here=true each=true: Some(Stepped)",
        ]
    );
}
