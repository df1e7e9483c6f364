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
/// handful of paths with pruning and explode (to the path budget) without it.
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
        // merging alone (call summaries would also keep the paths down, see below)
        let settings = Settings { prune, memo: false, max_paths: 1024, timeout_ms: 30_000, ..Settings::default() };
        let (findings, stats) = shape_lint::engine::analyze_with_stats(&module, &parsed, &settings);
        if prune {
            assert!(stats.max_paths <= 4, "{n} blocks: {} paths", stats.max_paths);
            assert_eq!(stats.abandoned, 0);
            // the head expects d + 1 features: found after all the blocks
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert_eq!(findings[0].rule.code, "SHP101");
        } else {
            // (the loop's work budget then runs the remaining blocks generalised, or the
            // entry is abandoned)
            assert!(stats.max_paths >= 1024, "{} paths without pruning", stats.max_paths);
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
/// the path, and a path condition appears in the context and in the would-be message. (With
/// `reshape(B, T, 50)` the core decides it alone: 4 * (C // 4) is never 50.)
#[test]
fn earlier_preconditions_and_path_conditions_reach_the_context() {
    let src = "import torch\nimport torch.nn as nn\n\nclass Heads(nn.Module):\n    def forward(self, t):\n        B, T, C = t.shape\n        if T > 4:\n            q = t.view(B, T, 4, -1)\n            return q.reshape(B, T, 48)\n        return t\n";
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

fn analyze(src: &str, settings: &Settings) -> (Vec<shape_lint::Finding>, shape_lint::engine::Stats) {
    let parsed = shape_lint::parse::parse(src);
    let module = shape_lint::ir::lower::lower_module(&parsed);
    shape_lint::engine::analyze_with_stats(&module, &parsed, settings)
}

const BLOCK: &str = "import torch\nimport torch.nn as nn\n\nclass Block(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.fc = nn.Linear(d, d)\n\n    def forward(self, x):\n        h = self.fc(x)\n        if self.training:\n            h = h * 0.5\n        return x + h\n";

/// The 24-block model: every block after the first is answered from the first one's summary,
/// and with merging off the summary alone keeps the paths down (one result per call).
#[test]
fn call_summaries_are_reused_across_identical_blocks() {
    let src = format!(
        "{BLOCK}\nclass Net(nn.Module):\n    def __init__(self, d=16, depth=24):\n        super().__init__()\n        self.blocks = nn.ModuleList([Block(d) for _ in range(depth)])\n\n    def forward(self, x):\n        for b in self.blocks:\n            x = b(x)\n        return x\n\nnet = Net()\ny = net(torch.randn(4, 16))\n"
    );
    for prune in [true, false] {
        let settings = Settings { prune, max_paths: 1024, timeout_ms: 30_000, ..Settings::default() };
        let (findings, stats) = analyze(&src, &settings);
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(stats.abandoned, 0);
        // the script's 24 calls: one miss, 23 hits (the forward entry adds its own)
        assert!(stats.memo_hits >= 23, "prune={prune}: {stats:?}");
        assert!(stats.max_paths <= 4, "prune={prune}: {stats:?}");
    }
    let off = Settings { memo: false, max_paths: 1024, timeout_ms: 30_000, ..Settings::default() };
    let (_, stats) = analyze(&src, &off);
    assert_eq!((stats.memo_hits, stats.memo_misses), (0, 0));
}

/// A summarised call does not hide a bug: the same block called with a correct shape twice
/// (the second from the summary), then with a wrong one, reports inside the block.
#[test]
fn summary_reuse_still_reports_a_wrong_call() {
    let src = format!(
        "{BLOCK}\nblk = Block(16)\na = blk(torch.randn(4, 16))\nb = blk(torch.randn(4, 16))\nc = blk(torch.randn(4, 8))\n"
    );
    let (findings, stats) = analyze(&src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!((findings[0].row, findings[0].rule.code), (10, "SHP101"));
    let (without, _) = analyze(&src, &Settings { memo: false, ..Settings::default() });
    assert_eq!(without.len(), 1);
}

/// A summary is keyed by the heap the call reads: a global changed between two calls with
/// equal arguments is seen by the second call.
#[test]
fn summary_is_not_reused_after_a_read_object_changes() {
    let src = "import torch\n\nclass Cfg:\n    pass\n\ncfg = Cfg()\ncfg.d = 16\n\ndef proj(x):\n    w = torch.randn(cfg.d, 3)\n    return x @ w\n\na = proj(torch.randn(4, 16))\nb = proj(torch.randn(4, 16))\ncfg.d = 5\nc = proj(torch.randn(4, 16))\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].row, 11);
}

/// A call Python refuses with a TypeError (too many positional arguments, an unexpected
/// keyword, a keyword for a filled parameter) never runs the body: its bug is not reached.
#[test]
fn a_call_python_refuses_does_not_run_the_body() {
    let body = "import torch\n\ndef f(x, n=3):\n    return x.view(n)\n\nx = torch.randn(2, 2)\n";
    let run = |call: &str| analyze(&format!("{body}{call}\n"), &Settings::default()).0.iter().map(|f| f.row).collect::<Vec<_>>();
    assert_eq!(run("y = f(x)"), [4], "the bug in the body is found when the call is valid");
    assert!(run("y = f(x, 3, 4)").is_empty());
    assert!(run("y = f(x, m=3)").is_empty());
    assert!(run("y = f(x, x=x)").is_empty());
    assert_eq!(run("y = f(n=3, x=x)"), [4]);
}

/// A `try` suppresses the reports of its body only when a handler may catch what torch
/// raises (issue 10): `KeyboardInterrupt`, `SystemExit`, `FileNotFoundError` do not.
#[test]
fn try_suppresses_only_with_a_handler_for_torch_errors() {
    let src = |handler: &str| {
        format!(
            "import torch\n\nclass MyError(Exception):\n    pass\n\ntry:\n    y = torch.randn(4, 3) @ torch.randn(4, 3)\n{handler}\n    print('stopped')\n"
        )
    };
    let reported = ["except KeyboardInterrupt:", "except (KeyboardInterrupt, SystemExit):", "except FileNotFoundError as e:", "except KeyError:"];
    let suppressed = ["except:", "except Exception:", "except RuntimeError:", "except (KeyboardInterrupt, RuntimeError):", "except BaseException:", "except MyError:", "except torch.cuda.OutOfMemoryError:"];
    for h in reported.iter().chain(&suppressed) {
        let f = check_source(&src(h), "t.py", &Settings::default());
        let want = usize::from(reported.contains(h));
        assert_eq!(f.len(), want, "{h}: {f:?}");
    }
    // a name the script rebinds is not trusted to be the builtin
    let f = check_source(&src("except KeyboardInterrupt:").replace("class MyError", "KeyboardInterrupt = RuntimeError\nclass MyError"), "t.py", &Settings::default());
    assert!(f.is_empty(), "{f:?}");
}

/// A decided side of `and`/`or` short-circuits an undecided one (issue 10): `x.is_cuda and
/// ngpu > 1` with `ngpu == 1` is False on one path, as a test and as a value; `unknown or
/// True` is True. Evaluating the right side still happens only where the left side lets it.
#[test]
fn a_decided_side_of_and_or_short_circuits() {
    let head = "import torch\nimport torch.nn as nn\nngpu = 1\nnet = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))\nx = torch.randn(4, 8)\n";
    let settings = Settings::default();
    let cases = [
        "if x.is_cuda and ngpu > 1:\n    out = nn.parallel.data_parallel(net, x, range(ngpu))\nelse:\n    out = net(x)\ny = out.view(3, -1)\n",
        "use_dp = x.is_cuda and ngpu > 1\nif use_dp:\n    out = nn.parallel.data_parallel(net, x, range(ngpu))\nelse:\n    out = net(x)\ny = out.view(3, -1)\n",
        "single = not torch.cuda.is_available() or ngpu == 1\nif single:\n    out = net(x)\nelse:\n    out = nn.parallel.data_parallel(net, x, range(ngpu))\ny = out.view(3, -1)\n",
        "if x.is_cuda or ngpu == 1:\n    out = net(x)\nelse:\n    out = None\ny = out.view(3, -1)\n",
    ];
    for c in cases {
        let (f, stats) = analyze(&format!("{head}{c}"), &settings);
        assert_eq!(f.len(), 1, "{c}: {f:?}");
        assert_eq!(f[0].row, head.lines().count() + c.lines().count(), "{c}");
        assert_eq!(stats.max_paths, 1, "{c}: {stats:?}");
    }
    // the right side appends on the path where the left side is truthy only: the paths differ,
    // and the view that fails only where nothing was appended is not reported
    let effect = "seen = []\ndef probe():\n    seen.append(1)\n    return False\nif x.is_cuda and probe():\n    pass\ny = x.view(3 - len(seen), -1)\n";
    let (f, _) = analyze(&format!("{head}{effect}"), &settings);
    assert!(f.is_empty(), "{f:?}");
    let effect_value = effect.replace("if x.is_cuda and probe():\n    pass\n", "flag = x.is_cuda and probe()\n");
    let (f, _) = analyze(&format!("{head}{effect_value}"), &settings);
    assert!(f.is_empty(), "{f:?}");
}

/// argparse options a run must give (issue 10): a required int is a symbol `args.<dest>`, and
/// `choices` without a usable default is one run per choice, reported only when every run fails.
#[test]
fn argparse_required_and_choices_options() {
    let parser = |opts: &str| {
        format!("import argparse\nimport torch\nimport torch.nn as nn\np = argparse.ArgumentParser()\n{opts}args = p.parse_args()\n")
    };
    let settings = Settings::default();
    // a required int: a symbol named after the option, the rest of the script analysed
    let src = parser("p.add_argument('--batch-size', type=int, required=True)\n") + "x = torch.randn(args.batch_size, 8)\ny = nn.Linear(9, 2)(x)\n";
    let f = check_source(&src, "t.py", &settings);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].message.contains("[args.batch_size, 8]"), "{}", f[0].message);
    // a required str is an unknown string: an arch test takes both sides
    let src = parser("p.add_argument('--name', required=True)\n") + "if args.name == 'big':\n    w = 9\nelse:\n    w = 8\ny = nn.Linear(w, 2)(torch.randn(4, 8))\n";
    assert!(check_source(&src, "t.py", &settings).is_empty());
    let arch = "if args.arch == 'mlp':\n    net = nn.Linear(8, 4)\nelif args.arch == 'wide':\n    net = nn.Linear(8, 16)\nelse:\n    raise ValueError(args.arch)\nh = net(torch.randn(4, 8))\n";
    for (opt, every, mlp_only) in [
        ("p.add_argument('--arch', choices=['mlp', 'wide'], required=True)\n", true, false),
        ("p.add_argument('--arch', choices=('mlp', 'wide'))\n", true, false),
        // a default among the choices stands, as for any option: the default run's bug reports
        ("p.add_argument('--arch', choices=['mlp', 'wide'], default='mlp')\n", true, true),
    ] {
        // fails for every choice: reported
        let src = parser(opt) + arch + "out = nn.Linear(5, 2)(h)\n";
        let f = check_source(&src, "t.py", &settings);
        assert_eq!(f.len(), usize::from(every), "{opt}: {f:?}");
        // fails for 'mlp' only
        let src = parser(opt) + arch + "if h.shape[1] == 4:\n    out = h.view(3, -1)\n";
        let f = check_source(&src, "t.py", &settings);
        assert_eq!(f.len(), usize::from(mlp_only), "{opt}: {f:?}");
    }
}

/// A top-level statement that fails on every path ends the script's run, but the classes
/// defined before and after it still have their `forward` analysed.
#[test]
fn forward_entries_survive_a_failing_script() {
    let net = "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc1 = nn.Linear(20, 30)\n        self.fc2 = nn.Linear(40, 10)\n\n    def forward(self, x):\n        return self.fc2(self.fc1(x))\n\n\n";
    let failing = "x = torch.randn(4, 6)\ny = x.view(5, 5)\n";
    for (src, rows) in [(format!("{net}{failing}"), vec![12, 16]), (net.to_string(), vec![12])] {
        let f = check_source(&src, "net.py", &Settings::default());
        let mut got: Vec<(usize, &str)> = f.iter().map(|x| (x.row, x.rule.code)).collect();
        got.sort();
        let want: Vec<(usize, &str)> = rows.iter().map(|&r| (r, if r == 12 { "SHP101" } else { "SHP103" })).collect();
        assert_eq!(got, want, "{src}");
    }
}

/// A leading size of an input of unknown rank (`x.size(0)` in a `forward` analysed on its own)
/// is a size of its own, not the input's last dim: a guard on the batch size says nothing of
/// what `fc` takes (torch runs this with `torch.randn(32, 784)`; the build before reported
/// `input [*, 32] does not fit Linear(in_features=784)`). A wrong input still fails at `fc`.
#[test]
fn a_leading_size_of_an_input_of_unknown_rank_is_not_its_last_dim() {
    let model = |guard: &str, out: &str| {
        format!(
            "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(784, 10)\n\n    def forward(self, x):\n        if {guard}:\n            raise ValueError(\"bad input\")\n        B = x.size(0)\n        return {out}\n"
        )
    };
    for out in ["self.fc(x)", "self.fc(x.view(B, -1))"] {
        let f = check_source(&model("x.size(0) != 32", out), "m.py", &Settings::default());
        assert!(f.is_empty(), "{out}: {f:?}");
    }
    // a call with a wrong input still fails at fc
    let f = check_source(&(model("x.size(0) != 32", "self.fc(x)") + "\n\nM()(torch.randn(32, 100))\n"), "m.py", &Settings::default());
    assert_eq!(f.iter().map(|x| (x.row, x.rule.code)).collect::<Vec<_>>(), vec![(14, "SHP101")], "{f:?}");
}

/// `F.softmax` and `torch.sigmoid` of a network the analysis does not follow (imported from a
/// module it cannot find): torch raises for anything but a tensor there, so the result is a
/// tensor of unknown shape marked as probabilities, and the losses that apply the function
/// themselves report it (SHP308). The logits passed as they are report nothing.
#[test]
fn probabilities_of_an_unfollowed_value_into_a_loss_that_applies_the_function() {
    let src = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom zoo import build\n\nnet = build()\nce = nn.CrossEntropyLoss()\nbce = nn.BCEWithLogitsLoss()\nx, y, t = torch.randn(8, 3), torch.randint(0, 4, (8,)), torch.rand(8, 4)\nout = net(x)\na = ce(F.softmax(out, dim=1), y)\nb = bce(torch.sigmoid(out), t)\nc = ce(out, y) + bce(out, t)\n";
    let f = check_source(src, "probs.py", &Settings::default());
    let got: Vec<(usize, &str)> = f.iter().map(|x| (x.row, x.rule.code)).collect();
    assert_eq!(got, vec![(11, "SHP308"), (12, "SHP308")], "{f:?}");
}
