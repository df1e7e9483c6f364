//! A loop run as one generalised iteration (`interp::loops::generalised_iteration`) forgets what
//! its body changed, since another iteration may change it again. What only a walk over the
//! heap changed (an in-place op in the body forgets the known values and the untracked state of
//! every tensor, `value::walks`) is kept as the walk left it: every further iteration walks the
//! same way, to the same effect (`value::walks::only_walked`).

mod common;

use common::analyse;

/// DCGAN's loop: `label.fill_(0.0)` after a backward walks every tensor, so `fixed` (made
/// before the loop, never assigned in it) lost its untracked state. Before, the loop forgot it
/// whole, and the product after the loop was not checked. Under torch (`python f.py 2`) it
/// raises at line 15: `mat1 and mat2 shapes cannot be multiplied (3x5 and 16x8)`.
#[test]
fn a_tensor_only_walked_by_the_loop_keeps_its_shape() {
    let src = "import sys\n\nimport torch\nimport torch.nn as nn\n\nmodel = nn.Linear(8, 1)\ncriterion = nn.BCEWithLogitsLoss()\nfixed = torch.randn(16, 8)\nfor step in range(int(sys.argv[1])):\n    x = torch.randn(4, 8)\n    label = torch.full((4, 1), 1.0)\n    loss = criterion(model(x), label)\n    loss.backward()\n    label.fill_(0.0)\ny = torch.randn(3, 5) @ fixed\n";
    assert_eq!(analyse(src).0, vec![(15, "SHP101")]);
}

/// The same loop also transposes a tensor held by an object: that change is the body's, not a
/// walk's. After an even number of iterations the product on the last line runs, after an odd
/// one it fails: not on every execution, so nothing is reported (kept as the first iteration
/// left it, `[8, 16]`, it would be).
#[test]
fn a_tensor_the_body_changes_is_forgotten_even_when_the_loop_walks() {
    let src = "import sys\n\nimport torch\nimport torch.nn as nn\n\n\nclass Holder:\n    pass\n\n\nholder = Holder()\nholder.t = torch.randn(16, 8)\nmodel = nn.Linear(8, 1)\ncriterion = nn.BCEWithLogitsLoss()\nfor step in range(int(sys.argv[1])):\n    label = torch.full((4, 1), 1.0)\n    loss = criterion(model(torch.randn(4, 8)), label)\n    loss.backward()\n    label.fill_(0.0)\n    holder.t = holder.t.t()\ny = torch.randn(3, 16) @ holder.t\n";
    assert_eq!(analyse(src).0, vec![]);
}

/// A greedy decoder: each of up to 100 steps runs a helper of 40 statements (the step's index
/// makes each call new to the summaries) and stops on a choice. From the third step on, once
/// the loop spent `PARTED_LOOP_STEPS`, its rest runs as one generalised iteration: about 4k
/// steps, where unrolling ran to the loop's work budget (25k) before. The bug after it is
/// found.
#[test]
fn a_loop_that_stops_on_a_choice_is_generalised_once_it_is_expensive() {
    let src = "import torch\nimport torch.nn as nn\n\nhead = nn.Linear(16, 10)\n\n\ndef step(h, i):\n    for k in range(40):\n        h = torch.tanh(h * 0.5 + k + i)\n    return h\n\n\nh = torch.zeros(1, 16)\nfor i in range(100):\n    h = step(h, i)\n    if head(h).argmax(-1).item() == 0:\n        break\ny = torch.randn(3, 4) @ torch.randn(5, 6)\n";
    let (findings, stats) = analyse(src);
    assert_eq!(findings, vec![(18, "SHP101")]);
    assert!(stats.steps < 10_000, "{stats:?}");
}

/// A cheap loop that stops on a choice stays unrolled, and its exits are joined into one path:
/// `h` is `[1, 16]` on every exit, so the product after the loop is checked (under torch:
/// `mat1 and mat2 shapes cannot be multiplied (3x4 and 1x16)`).
#[test]
fn a_cheap_loop_that_stops_on_a_choice_keeps_what_it_carries() {
    let src = "import torch\nimport torch.nn as nn\n\nrnn = nn.GRUCell(8, 16)\nhead = nn.Linear(16, 10)\nembed = nn.Embedding(10, 8)\nh = torch.zeros(1, 16)\ntok = torch.zeros(1, dtype=torch.long)\nout = []\nfor i in range(50):\n    h = rnn(embed(tok), h)\n    tok = head(h).argmax(-1)\n    if tok.item() == 0:\n        break\n    out.append(tok.item())\ny = torch.randn(3, 4) @ h\n";
    let (findings, stats) = analyse(src);
    assert_eq!(findings, vec![(16, "SHP101")]);
    assert!(stats.max_paths <= 2, "{stats:?}");
}
