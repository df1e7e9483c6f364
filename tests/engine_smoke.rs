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
