//! A loop run as one generalised iteration (`interp::loops::generalised_iteration`) forgets what
//! its body changed, since another iteration may change it again. What only a walk over the
//! heap changed (an in-place op in the body forgets the known values and the untracked state of
//! every tensor, `value::walks`) is kept as the walk left it: every further iteration walks the
//! same way, to the same effect (`value::walks::only_walked`).

use shape_lint::{Settings, engine, ir, parse};

fn analyse(src: &str) -> Vec<(usize, &'static str)> {
    let parsed = parse::parse(src);
    let module = ir::lower::lower_module(&parsed);
    let (findings, _) = engine::analyze_with_stats(&module, &parsed, &Settings::default());
    findings.iter().map(|f| (f.row, f.rule.code)).collect()
}

/// DCGAN's loop: `label.fill_(0.0)` after a backward walks every tensor, so `fixed` (made
/// before the loop, never assigned in it) lost its untracked state. Before, the loop forgot it
/// whole, and the product after the loop was not checked. Under torch (`python f.py 2`) it
/// raises at line 15: `mat1 and mat2 shapes cannot be multiplied (3x5 and 16x8)`.
#[test]
fn a_tensor_only_walked_by_the_loop_keeps_its_shape() {
    let src = "import sys\n\nimport torch\nimport torch.nn as nn\n\nmodel = nn.Linear(8, 1)\ncriterion = nn.BCEWithLogitsLoss()\nfixed = torch.randn(16, 8)\nfor step in range(int(sys.argv[1])):\n    x = torch.randn(4, 8)\n    label = torch.full((4, 1), 1.0)\n    loss = criterion(model(x), label)\n    loss.backward()\n    label.fill_(0.0)\ny = torch.randn(3, 5) @ fixed\n";
    assert_eq!(analyse(src), vec![(15, "SHP101")]);
}

/// The same loop also transposes a tensor held by an object: that change is the body's, not a
/// walk's. After an even number of iterations the product on the last line runs, after an odd
/// one it fails: not on every execution, so nothing is reported (kept as the first iteration
/// left it, `[8, 16]`, it would be).
#[test]
fn a_tensor_the_body_changes_is_forgotten_even_when_the_loop_walks() {
    let src = "import sys\n\nimport torch\nimport torch.nn as nn\n\n\nclass Holder:\n    pass\n\n\nholder = Holder()\nholder.t = torch.randn(16, 8)\nmodel = nn.Linear(8, 1)\ncriterion = nn.BCEWithLogitsLoss()\nfor step in range(int(sys.argv[1])):\n    label = torch.full((4, 1), 1.0)\n    loss = criterion(model(torch.randn(4, 8)), label)\n    loss.backward()\n    label.fill_(0.0)\n    holder.t = holder.t.t()\ny = torch.randn(3, 16) @ holder.t\n";
    assert_eq!(analyse(src), vec![]);
}
