use shape_lint::{Settings, check_source};

#[test]
fn lenet_example_reports_fc2() {
    let src = std::fs::read_to_string("examples/lenet_cifar.py").unwrap();
    let f = check_source(&src, "examples/lenet_cifar.py", &Settings::default());
    for x in &f {
        eprintln!("{}:{} {} {} {:?}", x.row, x.col, x.rule.code, x.message, x.trace);
    }
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule.code, "SHP101");
}

#[test]
fn hostile_nesting_does_not_overflow() {
    let cases = [
        format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000)),
        format!("x = {}\n", vec!["1"; 100_000].join(" + ")),
        format!("x = {}0{}\n", "[".repeat(50_000), "]".repeat(50_000)),
        format!("x = {}\n", "-".repeat(200_000) + "1"),
        format!("x = {}1{}\n", "f(".repeat(20_000), ")".repeat(20_000)),
    ];
    for c in &cases {
        let f = check_source(c, "deep.py", &Settings::default());
        assert!(f.iter().all(|x| x.rule.code != "SHP001"), "{:?}", f);
    }
}

/// The path-explosion case: many identical blocks, each with an opaque branch, stay at a
/// handful of paths with pruning and explode without it.
#[test]
fn residual_blocks_do_not_explode() {
    let block = |n: usize| {
        format!(
            "import torch\nimport torch.nn as nn\n\nclass Block(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.fc = nn.Linear(d, d)\n\n    def forward(self, x):\n        h = self.fc(x)\n        if self.training:\n            out = h * 0.5\n        else:\n            out = x\n        return x + out\n\nclass Net(nn.Module):\n    def __init__(self, d=16, depth={n}):\n        super().__init__()\n        self.blocks = nn.ModuleList([Block(d) for _ in range(depth)])\n        self.head = nn.Linear(d + 1, 2)\n\n    def forward(self, x):\n        for b in self.blocks:\n            x = b(x)\n        return self.head(x)\n\nnet = Net()\ny = net(torch.randn(4, 16))\n"
        )
    };
    for (n, prune) in [(24, true), (100, true), (16, false)] {
        let src = block(n);
        let parsed = shape_lint::parse::parse(&src);
        let module = shape_lint::ir::lower::lower_module(&parsed);
        let settings = Settings { prune, max_paths: 1024, timeout_ms: 30_000, ..Settings::default() };
        let (findings, stats) = shape_lint::engine::analyze_with_stats(&module, &parsed, &settings);
        if prune {
            assert!(stats.max_paths <= 4, "{n} blocks: {} paths", stats.max_paths);
            assert_eq!(stats.abandoned, 0);
            // the head expects d + 1 features: found after all the blocks
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert_eq!(findings[0].rule.code, "SHP101");
        } else {
            assert!(stats.abandoned > 0 && stats.max_paths > 1024, "{} paths without pruning", stats.max_paths);
        }
    }
}

/// The undecided checks exported for the Z3 bridge: the nonlinear reshape of a symbolic
/// `forward` is exported with its SMT-LIB query; the same call inside a `try` with a handler,
/// or after an opaque branch (a tainted path), is not; `check_source` is unchanged.
#[test]
fn undecided_checks_are_exported_where_they_would_be_reported() {
    let head = "import torch\nimport torch.nn as nn\n\nclass PairHead(nn.Module):\n    def forward(self, pts):\n        B, N, D = pts.shape\n        sim = pts @ pts.transpose(1, 2)\n";
    let plain = format!("{head}        return sim.reshape(B, N * (N - 1) // 2)\n");
    let (findings, undecided) = shape_lint::check_source_undecided(&plain, "m.py", &Settings::default());
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(findings, check_source(&plain, "m.py", &Settings::default()));
    let u: Vec<_> = undecided.iter().filter(|u| u.finding.rule.code == "SHP103").collect();
    assert_eq!(u.len(), 1, "{undecided:?}");
    assert_eq!(u[0].finding.row, 8);
    assert!(u[0].finding.message.starts_with("reshape: shape [B, (-T + T*T) // 2] is invalid"), "{}", u[0].finding.message);
    assert!(u[0].context.contains("(declare-fun T_1 () Int)\n") && u[0].context.contains("(assert (>= T_1 1))\n"), "{}", u[0].context);
    assert_eq!(u[0].precondition, "(= (* B_0 T_1 T_1) (* B_0 (div (+ (* (- 1) T_1) (* T_1 T_1)) 2)))");

    let in_try = format!("{head}        try:\n            return sim.reshape(B, N * (N - 1) // 2)\n        except RuntimeError:\n            return sim\n");
    let (_, undecided) = shape_lint::check_source_undecided(&in_try, "m.py", &Settings::default());
    assert!(undecided.iter().all(|u| u.finding.rule.code != "SHP103"), "{undecided:?}");

    let tainted = format!("{head}        if unknown_flag():\n            return sim.reshape(B, N * (N - 1) // 2)\n        return sim\n");
    let (_, undecided) = shape_lint::check_source_undecided(&tainted, "m.py", &Settings::default());
    assert!(undecided.iter().all(|u| u.finding.rule.code != "SHP103"), "{undecided:?}");
}

/// A later check's context holds the preconditions of the checks left undecided before it on
/// the path, and a path condition appears in the context and in the would-be message.
#[test]
fn earlier_preconditions_and_path_conditions_reach_the_context() {
    let src = "import torch\nimport torch.nn as nn\n\nclass Heads(nn.Module):\n    def forward(self, t):\n        B, T, C = t.shape\n        if T > 4:\n            q = t.view(B, T, 4, -1)\n            return q.reshape(B, T, 50)\n        return t\n";
    let (findings, undecided) = shape_lint::check_source_undecided(src, "m.py", &Settings::default());
    assert!(findings.is_empty(), "{findings:?}");
    let later: Vec<_> = undecided.iter().filter(|u| u.finding.row == 9).collect();
    assert_eq!(later.len(), 1, "{undecided:?}");
    let ctx = &later[0].context;
    assert!(ctx.contains("; path condition"), "{ctx}");
    assert!(ctx.contains("(mod (* B_0 T_1 C_2) (* 4 B_0 T_1))") && ctx.contains("; earlier precondition"), "{ctx}");
    assert_eq!(later[0].finding.condition.as_deref(), Some("4 < T"));
    assert!(later[0].finding.message.ends_with("(when 4 < T)"), "{}", later[0].finding.message);
}
