//! Path explosion (issue 9): for each block kind of `bench/block_kinds.rs`, a model of 100
//! blocks keeps at most 4 live paths under the default budget, is not abandoned, and the
//! planted head bug after the blocks is reported at its line. Before paths joined on abstract
//! values (dead frames collected, first-use refinements shared across paths), the
//! identity-return kind had 101 paths at 100 blocks and the scaling kind lost the bug.

use shape_lint::{Settings, engine, ir, parse};

#[path = "../bench/block_kinds.rs"]
mod block_kinds;

#[test]
fn every_block_kind_joins_its_paths_and_reports_the_head_bug() {
    for (kind, body) in block_kinds::KINDS {
        for blocks in [1, 24, 100] {
            let src = block_kinds::model(body, blocks);
            let parsed = parse::parse(&src);
            let module = ir::lower::lower_module(&parsed);
            let (findings, stats) = engine::analyze_with_stats(&module, &parsed, &Settings::default());
            let line = block_kinds::bug_line(&src);
            assert!(line > 0);
            let codes: Vec<_> = findings.iter().map(|f| (f.row, f.rule.code)).collect();
            assert_eq!(codes, vec![(line, "SHP101")], "{kind} x{blocks}: the head bug, and nothing else");
            assert!(stats.max_paths <= 4, "{kind} x{blocks}: {} live paths", stats.max_paths);
            assert_eq!(stats.abandoned, 0, "{kind} x{blocks}: abandoned");
        }
    }
}

fn findings_of(src: &str) -> (Vec<shape_lint::diagnostics::Finding>, shape_lint::engine::Stats) {
    let parsed = parse::parse(src);
    let module = ir::lower::lower_module(&parsed);
    engine::analyze_with_stats(&module, &parsed, &Settings::default())
}

/// A `break` on an unknown `done` in each of 30 steps, and an `if` on an unknown value in each
/// of 100 epochs, pass the path budget: the paths are joined (what they disagree on is
/// Unknown) rather than the entry abandoned, and a bug on what they agree on is still found.
#[test]
fn paths_past_the_budget_are_joined_and_the_bug_after_them_is_found() {
    let src = "import random\nimport torch\nimport torch.nn as nn\n\nmodel = nn.Linear(4, 2)\nhead = nn.Linear(3, 1)\nbest, seen = 1e9, []\nfor epoch in range(100):\n    v = random.random()\n    if v < best:\n        best = v\n    for t in range(30):\n        seen.append(t)\n        if random.random() < 0.1:\n            break\ny = head(model(torch.randn(8, 4)))\n";
    let (findings, stats) = findings_of(src);
    assert_eq!(stats.abandoned, 0, "{stats:?}");
    assert!(stats.max_paths <= 32, "{} paths", stats.max_paths);
    let codes: Vec<_> = findings.iter().map(|f| (f.row, f.rule.code)).collect();
    assert_eq!(codes, vec![(16, "SHP101")], "{findings:?}");
}

/// Thirty-two paths (five opaque choices, each setting its own int), then 1,500 statements: 385k
/// steps on 32 paths, past a 100k budget. Once half the step budget is spent, the paths are
/// joined at every statement (`Interp::join_at`): the file is analysed to its end on one path,
/// not cut, and the bug on its last line is reported. Without the joins (a budget too large to
/// reach half of) every path runs every statement.
#[test]
fn past_half_the_step_budget_the_paths_are_joined_and_the_file_is_analysed_whole() {
    let mut src = String::from("import random\nimport torch\n\n\n");
    for i in 0..5 {
        src.push_str(&format!("if random.random() > 0.5:\n    w{i} = {}\nelse:\n    w{i} = {}\n", i + 1, i + 10));
    }
    src.push_str("x = torch.randn(4, 8)\n");
    for _ in 0..1500 {
        src.push_str("x = torch.relu(x + 1)\n");
    }
    src.push_str("y = torch.randn(3, 4) @ torch.randn(5, 6)\n");
    let last = src.lines().count();
    let analyse = |max_steps: u64| {
        let parsed = parse::parse(&src);
        let module = ir::lower::lower_module(&parsed);
        engine::analyze_with_stats(&module, &parsed, &Settings { max_steps, ..Settings::default() })
    };
    let (findings, stats) = analyse(100_000);
    assert_eq!(stats.abandoned, 0, "{stats:?}");
    assert!(stats.steps <= 100_000, "{stats:?}");
    let codes: Vec<_> = findings.iter().map(|f| (f.row, f.rule.code)).collect();
    assert_eq!(codes, vec![(last, "SHP101")], "{findings:?}");
    // (the same file with a budget it never spends half of: 32 paths to the end, and more steps
    // than the 100k budget had)
    let (findings, stats) = analyse(100_000_000);
    assert!(stats.steps > 100_000, "{stats:?}");
    assert_eq!(findings.iter().map(|f| (f.row, f.rule.code)).collect::<Vec<_>>(), vec![(last, "SHP101")]);
}

/// What the joined paths disagree on is Unknown: a Linear whose width differs by path is not
/// reported once its paths are joined, although each path alone would decide its check.
#[test]
fn joined_paths_report_nothing_on_what_they_disagree_on() {
    let src = "import random\nimport torch\nimport torch.nn as nn\n\nwidths = []\nfor t in range(40):\n    if random.random() < 0.5:\n        widths.append(t)\n        break\nw = widths[0] if widths else 7\nlayer = nn.Linear(w, 2)\ny = layer(torch.randn(8, 7))\n";
    let (findings, stats) = findings_of(src);
    assert_eq!(stats.abandoned, 0, "{stats:?}");
    assert!(findings.is_empty(), "{findings:?}");
}

/// A device mismatch inside a user `forward` is reported at the call that handed the tensor in
/// (`entry_of`); the paths on which the devices agree pass that call too, so the report keeps
/// its condition (before, it claimed to fail on every path).
#[test]
fn a_device_mismatch_handed_into_a_forward_keeps_its_condition() {
    let src = "import torch\nimport torch.nn as nn\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\nmodel = M()\nx = torch.randn(4, 8).to(device)\nout = model(x)\n";
    let (findings, _) = findings_of(src);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!((findings[0].row, findings[0].rule.code), (15, "SHP201"));
    assert!(findings[0].message.ends_with("(when CUDA is available)"), "{}", findings[0].message);
}

/// SHP303 after an opaque choice (`random.random() < 0.1`): both paths zero the gradients of
/// the backward before the step. The zeroing is also a candidate of SHP303's every-k case,
/// which no step settles; settling it must not turn the site into one that some path passes
/// (it did: the report went silent on a minimalRL DQN mutant).
#[test]
fn a_zeroing_before_the_step_is_reported_after_an_opaque_choice() {
    let src = "import random\nimport torch\nimport torch.nn as nn\nq = nn.Linear(4, 2)\nopt = torch.optim.Adam(q.parameters(), lr=0.1)\nif random.random() < 0.1:\n    k = 1\nelse:\n    k = 2\nloss = q(torch.randn(32, 4)).mean()\nloss.backward()\nopt.zero_grad()\nopt.step()\nprint(k)\n";
    let (findings, _) = findings_of(src);
    let codes: Vec<_> = findings.iter().map(|f| (f.row, f.rule.code)).collect();
    assert_eq!(codes, vec![(12, "SHP303")]);
}

/// A dict display whose values each fork (a call that returns one of two values on an opaque
/// test) joined its outcomes no more than a list display did before: 2^12 paths at 12 entries
/// (a lexer's table of states built by a helper, 10 s and 8 GB). Its entries now join past
/// half the path budget, as a list display's items do, and what they agree on stays known.
#[test]
fn a_dict_display_of_forking_values_joins_its_paths() {
    let mut src = String::from("import torch\nimport os\n\ndef state(k):\n    return [k, 1] if os.environ.get('X') else [k, 2]\n\ntable = {\n");
    for i in 0..24 {
        src.push_str(&format!("    'k{i}': state({i}),\n"));
    }
    src.push_str("}\nx = torch.zeros(3, 4)\ny = x @ torch.zeros(len(table), 2)\n");
    let (findings, stats) = findings_of(&src);
    assert_eq!(stats.abandoned, 0);
    assert!(stats.steps < 20_000, "{} steps", stats.steps);
    let codes: Vec<_> = findings.iter().map(|f| f.rule.code).collect();
    assert_eq!(codes, vec!["SHP101"], "the matmul of [3, 4] and [24, 2]");
}

/// A call whose star argument is unknown on every path (`f(*[... for s in argv])`, as
/// `nn.Sequential(*[Block(...) for i in range(depth)])` with an unknown depth in timm's Swin V2)
/// and whose other arguments fork: past half the path budget the paths join, as when every
/// argument is known, instead of staying apart until the entry is abandoned (it was, at 128).
#[test]
fn a_call_with_unknown_star_arguments_on_every_path_joins_its_paths() {
    let mut src = String::from("import sys\nimport torch\n\n\ndef g(*sizes, **flags):\n    return torch.randn(2, 4)\n\n\no = sys.argv\ny = g(*[int(s) for s in o]");
    for (i, name) in ["a", "b", "c", "d", "e", "f", "h"].iter().enumerate() {
        src.push_str(&format!(", {name}=1 if o[{}] else 2", i + 1));
    }
    src.push_str(")\nz = torch.randn(2, 4) @ torch.randn(5, 3)\n");
    let (findings, stats) = findings_of(&src);
    assert_eq!(stats.abandoned, 0);
    let codes: Vec<_> = findings.iter().map(|f| (f.row, f.rule.code)).collect();
    assert_eq!(codes, vec![(11, "SHP101")], "the matmul after the call");
}

/// A step that refines a tensor of unknown rank differently on each side of an opaque choice
/// (`x: [*, 8]` on one path, `[*, 4]` on the other), then drops it, called six times at the
/// top level (a notebook's cells) or in a script's `main()`: after each call, the paths differ
/// only in bindings of shape variables nothing on the heap names. They merge at the
/// statements outside any loop body (`State::same_state_live`): at most 2 live paths rather
/// than 32, and the bug after the calls is still found.
#[test]
fn paths_that_differ_only_in_dead_shape_bindings_merge() {
    let head = "import json\nimport random\nimport torch\nimport torch.nn as nn\n\ndata = json.load(open('d.json'))\nwide = nn.Linear(8, 2)\nnarrow = nn.Linear(4, 2)\n\n\ndef step():\n    x = torch.tensor(data)\n    with torch.no_grad():\n        if random.random() > 0.5:\n            wide(x)\n        else:\n            narrow(x)\n    return 1\n\n\n";
    let calls = "step()\nstep()\nstep()\nstep()\nstep()\nstep()\nout = torch.randn(3, 4) @ torch.randn(5, 6)\n";
    let in_main = format!("def main():\n{}\n\nmain()\n", calls.lines().map(|l| format!("    {l}\n")).collect::<String>());
    for (body, line) in [(calls.to_string(), 27), (in_main, 28)] {
        let src = format!("{head}{body}");
        let (findings, stats) = findings_of(&src);
        assert_eq!(stats.abandoned, 0, "{stats:?}");
        assert!(stats.max_paths <= 2, "{} live paths", stats.max_paths);
        let codes: Vec<_> = findings.iter().map(|f| (f.row, f.rule.code)).collect();
        assert_eq!(codes, vec![(line, "SHP101")], "{findings:?}");
    }
}

/// The same two refinements of a tensor that stays live keep its paths apart: each path knows
/// the last dim (8 or 4), and a `Linear(3, 2)` fails on both, so it is reported. Merged with
/// the binding dropped, the tensor's shape would be unknown again and the bug missed.
#[test]
fn paths_that_differ_in_a_live_shape_binding_stay_apart() {
    let src = "import json\nimport random\nimport torch\nimport torch.nn as nn\n\ndata = json.load(open('d.json'))\nwide = nn.Linear(8, 2)\nnarrow = nn.Linear(4, 2)\nx = torch.tensor(data)\nwith torch.no_grad():\n    if random.random() > 0.5:\n        wide(x)\n    else:\n        narrow(x)\ny = nn.Linear(3, 2)(x)\n";
    let (findings, stats) = findings_of(src);
    assert_eq!(stats.max_paths, 2, "{stats:?}");
    let codes: Vec<_> = findings.iter().map(|f| (f.row, f.rule.code)).collect();
    assert_eq!(codes, vec![(15, "SHP101")], "{findings:?}");
}
