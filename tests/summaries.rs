//! Call summaries (`engine::memo`) of calls that write objects from before them, create fresh
//! symbols, or run under a recursion cut: each replay does what a second run would.

use shape_lint::Settings;

fn analyze(src: &str, settings: &Settings) -> (Vec<shape_lint::Finding>, shape_lint::engine::Stats) {
    let parsed = shape_lint::parse::parse(src);
    let module = shape_lint::ir::lower::lower_module(&parsed);
    shape_lint::engine::analyze_with_stats(&module, &parsed, settings)
}

/// The same analysis without call summaries (what every replay must agree with).
fn without_summaries(src: &str) -> (Vec<shape_lint::Finding>, shape_lint::engine::Stats) {
    analyze(src, &Settings { memo: false, ..Settings::default() })
}

/// Each finding's row and code.
fn rows(findings: &[shape_lint::Finding]) -> Vec<(usize, &'static str)> {
    findings.iter().map(|f| (f.row, f.rule.code)).collect()
}

/// (The calls share their tensor argument: a call is replayed for tensors whose sizes come from
/// the same places, `value::origin`, so that a replayed message names the caller's own lines.)
///
/// A helper that stores an attribute on an object handed to it: the second call is replayed,
/// and the replay stores the attribute on the second object (read back as a size, which the
/// bug on the last line needs).
#[test]
fn a_replayed_call_makes_its_writes() {
    let src = "import torch\n\n\nclass Box:\n    pass\n\n\ndef put(box, x):\n    box.n = x.shape[1]\n    return x\n\n\na = Box()\nb = Box()\na.n = None\nb.n = None\nx = torch.randn(4, 16)\nput(a, x)\nput(b, x)\ny = torch.randn(b.n, 3)\nz = torch.randn(4, 8) @ y\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(rows(&findings), vec![(21, "SHP101")], "{findings:?}");
    let (without, _) = without_summaries(src);
    assert_eq!(without.len(), 1, "{without:?}");
}

/// A dict written by a helper (a cache filled on first use): the replay fills the second dict.
#[test]
fn a_replayed_call_fills_the_callers_dict() {
    let src = "import torch\n\n\ndef fill(cache, x):\n    cache[\"w\"] = x\n    return cache\n\n\nc1 = {}\nc2 = {}\nx = torch.randn(4, 16)\nfill(c1, x)\nfill(c2, x)\nz = torch.randn(4, 8) @ c2[\"w\"]\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(rows(&findings), vec![(14, "SHP101")], "{findings:?}");
}

/// Each call of a helper that makes an int of its own (`len(sys.argv)`) makes another one, also
/// when it is replayed: the two sizes are not taken to be equal, so a product that needs
/// `a == b + 1` stays undecided (taken equal, it would fail on every path).
#[test]
fn a_replayed_call_makes_fresh_symbols_of_its_own() {
    let src = "import sys\nimport torch\n\n\ndef size():\n    return len(sys.argv)\n\n\ndef make():\n    return torch.randn(size(), 3)\n\n\nx = make()\ny = make()\nw = x.t() @ torch.cat([y, torch.randn(1, 3)], 0)\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert!(findings.is_empty(), "{findings:?}");
    let (without, _) = without_summaries(src);
    assert!(without.is_empty(), "{without:?}");
}

/// Twelve blocks in an `nn.Sequential`, each forking on its training mode and filling a cache
/// of its own in eval mode: the paths are bounded after each layer, as after a statement,
/// instead of doubling twelve times, and the blocks' calls are replayed (the build before took
/// 94k steps, 4,096 paths through the last block).
#[test]
fn sequential_layers_do_not_multiply_paths() {
    let block = "class Block(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.fc = nn.Linear(d, d)\n        self.cache = {}\n\n    def forward(self, x):\n        if self.training:\n            return x + self.fc(x)\n        self.cache[\"last\"] = x\n        return self.fc(x)\n";
    let src = format!("import torch\nimport torch.nn as nn\n\n\n{block}\n\nclass Net(nn.Module):\n    def __init__(self, d=16, depth=12):\n        super().__init__()\n        self.blocks = nn.Sequential(*[Block(d) for _ in range(depth)])\n\n    def forward(self, x):\n        return self.blocks(x)\n");
    let (findings, stats) = analyze(&src, &Settings::default());
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(stats.abandoned, 0, "{stats:?}");
    assert!(stats.steps < 10_000, "{stats:?}");
}

/// A helper that writes into a tensor in place (`add_`): torch may see the change through any
/// alias, so the engine forgets every tensor's known values, also those of objects the helper
/// never read (here the module's `a`, known again before the second call). The replay forgets
/// them again, as a second run would: the module-level `a` is not taken for `[12]` after it.
#[test]
fn a_replayed_call_forgets_as_its_run_did() {
    let src = "import torch\n\n\ndef bump(x):\n    x.add_(1)\n    return x\n\n\nemb = torch.nn.Embedding(10, 4)\nt = torch.zeros(1)\na = torch.tensor([2])\nbump(t)\na = torch.tensor([12])\nbump(t)\nz = emb(a)\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    let (without, _) = without_summaries(src);
    assert_eq!(rows(&findings), rows(&without), "{findings:?}");
    // without the in-place write, the index is known and out of range
    let (known, _) = analyze(&src.replace("x.add_(1)", "x = x + 1"), &Settings::default());
    assert_eq!(rows(&known), vec![(15, "SHP110")], "{known:?}");
}

/// A helper that clears a gradient (`p.grad = None`, which the engine does not follow) forgets
/// the gradients of every optimizer. Its summary keeps the optimizers that existed at its
/// start: the third call (the optimizers as at the second) is replayed; the fourth, after
/// `opt2` was built, is run again. A replay would forget `opt1`'s gradients alone, and
/// `opt2`'s second step would be taken for a stale one (SHP301).
#[test]
fn a_summary_that_looked_for_optimizers_needs_the_same_ones() {
    let src = "import torch\nimport torch.nn as nn\n\n\ndef clear(p):\n    p.grad = None\n\n\nm1 = nn.Linear(4, 2)\nopt1 = torch.optim.SGD(m1.parameters(), lr=0.1)\nclear(m1.weight)\nclear(m1.weight)\nclear(m1.weight)\nm2 = nn.Linear(4, 2)\nopt2 = torch.optim.SGD(m2.parameters(), lr=0.1)\nloss = m2(torch.randn(3, 4)).sum()\nloss.backward()\nopt2.step()\nclear(m1.weight)\nloss = m2(torch.randn(3, 4)).sum()\nloss.backward()\nopt2.step()\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(stats.memo_hits, 1, "{stats:?}");
    let (without, _) = without_summaries(src);
    assert!(without.is_empty(), "{without:?}");
    // (the last clear is what keeps the rule silent)
    let (kept, _) = analyze(&src.replace("opt2.step()\nclear(m1.weight)\n", "opt2.step()\n"), &Settings::default());
    assert_eq!(rows(&kept), vec![(20, "SHP301")], "{kept:?}");
}

/// A helper that reads no shape binding is replayed after the caller bound one (the first use
/// of an unknown-rank input fixes its last dimension). (It makes its own tensor: a check of a
/// tensor handed in reports at the call that handed it, and keys the call's site,
/// `a_summary_that_reported_on_the_callers_stack_needs_the_same_stack`.)
#[test]
fn a_summary_ignores_the_shape_bindings_it_did_not_read() {
    let src = "import torch\nimport torch.nn as nn\n\n\ndef norm(n):\n    t = torch.randn(3, n)\n    return t / t.sum()\n\n\ndef width(t):\n    return t.size(-1)\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 4)\n\n    def forward(self, x):\n        a = norm(4)\n        h = self.fc(x)\n        b = norm(4)\n        return torch.randn(3, 5) @ torch.randn(width(x), 2)\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert_eq!(rows(&findings), vec![(23, "SHP101")], "{findings:?}");
    assert_eq!(stats.memo_hits, 1, "{stats:?}");
}

/// A helper that read a shape binding is replayed only where the caller binds it alike: on
/// the path where the input went through the 16-wide layer, `width(x)` is 16, and the product
/// fails there (a replay of the other path's summary would give 8).
#[test]
fn a_summary_needs_the_shape_bindings_it_read() {
    let src = "import torch\nimport torch.nn as nn\n\n\ndef width(t):\n    return t.size(-1)\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc8 = nn.Linear(8, 4)\n        self.fc16 = nn.Linear(16, 4)\n\n    def forward(self, x, flag: bool):\n        if flag:\n            h = self.fc8(x)\n        else:\n            h = self.fc16(x)\n        return torch.randn(3, 8) @ torch.randn(width(x), 2)\n";
    let (_, stats) = analyze(src, &Settings::default());
    assert_eq!(stats.checks.violated, 1, "{stats:?}");
    let (_, without) = without_summaries(src);
    assert_eq!(without.checks.violated, 1, "{without:?}");
}

/// A helper that fixes the rank of an argument of unknown rank (`B, T, C = x.shape`) refines a
/// variable from before it: its sizes are the same unknowns on every path (the caches of
/// refinements), so the replay on the second path keeps the first run's `B` rather than make
/// another, as a second run would find it, and the product fails on both paths.
#[test]
fn a_replay_keeps_the_refinements_of_the_callers_variables() {
    let src = "import torch\nimport torch.nn as nn\n\n\ndef dims(x):\n    B, T, C = x.shape\n    return torch.randn(B, C)\n\n\nclass Net(nn.Module):\n    def forward(self, x, flag: bool):\n        if flag:\n            y = torch.randn(2)\n        else:\n            y = torch.randn(3)\n        a = dims(x)\n        return torch.randn(4, a.shape[0]) @ torch.randn(a.shape[0] + 1, 2)\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(rows(&findings), vec![(17, "SHP101")], "{findings:?}");
    assert!(findings[0].message.contains("(B vs B + 1)"), "{}", findings[0].message);
    let (without, _) = without_summaries(src);
    assert_eq!(rows(&without), rows(&findings), "{without:?}");
}

/// A helper that builds a layer names it after the caller's assignment (`self.b = make(16)`:
/// "b (line 6)"): the label is part of the summary's key. Under another label the call runs
/// again (a replay would name the layer after the first caller); under the same label, in the
/// second `Block`, it is replayed.
#[test]
fn a_summary_that_read_the_callers_label_needs_the_same_one() {
    let src = "import torch\nimport torch.nn as nn\n\n\ndef make(n):\n    return nn.Linear(n, 8)\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.a = make(16)\n        self.b = make(16)\n\n    def forward(self, x):\n        y = self.a(x)\n        return self.b(y)\n\n\nNet()(torch.randn(2, 16))\n";
    let (findings, _) = analyze(src, &Settings::default());
    assert_eq!(rows(&findings), vec![(17, "SHP101")], "{findings:?}");
    assert!(findings[0].message.starts_with("b (line 6): input [2, 8]"), "{}", findings[0].message);
    assert!(findings[0].trace.iter().any(|t| t.contains("out_features of a (line 6)")), "{:?}", findings[0].trace);
    let (without, _) = without_summaries(src);
    assert_eq!(without[0].message, findings[0].message);
    assert_eq!(without[0].trace, findings[0].trace);
    // the same label in each block: the second block's call is replayed
    let src = "import torch\nimport torch.nn as nn\n\n\ndef make(n):\n    return nn.Linear(n, 8)\n\n\nclass Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = make(16)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.one = Block()\n        self.two = Block()\n\n    def forward(self, x):\n        return self.two(self.one(x))\n\n\nNet()(torch.randn(2, 16))\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(rows(&findings), vec![(15, "SHP101")], "{findings:?}");
    let (without, _) = without_summaries(src);
    assert_eq!(without[0].message, findings[0].message);
}

/// The model as the two tests below build it: a layer whose device check passes on the CPU
/// path and fails where CUDA is available (the input moved there, the layer not).
const DEVICE_NET: &str = "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 4)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\nmodel = Net()\ndevice = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n";

/// The findings' rows, codes and traces.
fn reports(findings: &[shape_lint::Finding]) -> Vec<(usize, &'static str, Vec<String>)> {
    findings.iter().map(|f| (f.row, f.rule.code, f.trace.clone())).collect()
}

/// `forward` replayed in the loop's later iterations records its outcomes as its run did:
/// `reached` then adds no passing outcome of its own at `model(inp)` (which would be a second
/// chain of calls reaching that site, and name the failing one in the report).
#[test]
fn a_replayed_call_counts_as_its_runs_records() {
    let src = format!("{DEVICE_NET}\n\ndef train():\n    for i in range(4):\n        inp = torch.randn(2, 8).to(device)\n        out = model(inp)\n    return out\n\n\ntrain()\n");
    let (findings, stats) = analyze(&src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(reports(&findings), vec![(21, "SHP201", Vec::new())], "{findings:?}");
    assert_eq!(reports(&findings), reports(&without_summaries(&src).0));
}

/// The device check inside `forward` passes at the call of `run` that handed `x` in (its
/// entry site, line 23): a summary of `forward` keys that stack (`memo::Context`), so the call
/// from line 24 runs it and records its own entry site, not line 23's.
#[test]
fn a_summary_that_reported_on_the_callers_stack_needs_the_same_stack() {
    let src = format!("{DEVICE_NET}\n\ndef run(x):\n    return model(x)\n\n\nx = torch.randn(2, 8).to(device)\na = run(x)\nb = run(x)\n");
    let (findings, _) = analyze(&src, &Settings::default());
    assert_eq!(reports(&findings), vec![(23, "SHP201", Vec::new())], "{findings:?}");
    assert_eq!(reports(&findings), reports(&without_summaries(&src).0));
}

/// A helper that fails on some of its own paths (`pool_tensor` of a funnel transformer: an
/// input of unknown rank made 4-D when it has 2 or 3 dims, then pooled, which torch rejects for
/// the other ranks) is summarised with those violations and replayed at its later calls: the
/// calls are replayed, not run again, and nothing is reported, as without summaries (some
/// rank passes at each call).
#[test]
fn a_call_that_fails_on_some_of_its_paths_is_replayed() {
    let src = "import torch\nfrom torch import nn\n\n\nclass P(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n        self.config = config\n\n    def pool_tensor(self, tensor, mode=\"mean\", stride=2):\n        if tensor is None:\n            return None\n        if self.config.separate_cls:\n            suffix = tensor[:, :-1] if self.config.truncate_seq else tensor\n            tensor = torch.cat([tensor[:, :1], suffix], dim=1)\n        ndim = tensor.ndim\n        if ndim == 2:\n            tensor = tensor[:, None, :, None]\n        elif ndim == 3:\n            tensor = tensor[:, None, :, :]\n        stride = (stride, 1)\n        if mode == \"mean\":\n            tensor = nn.functional.avg_pool2d(tensor, stride, stride=stride, ceil_mode=True)\n        elif mode == \"max\":\n            tensor = nn.functional.max_pool2d(tensor, stride, stride=stride, ceil_mode=True)\n        elif mode == \"min\":\n            tensor = -nn.functional.max_pool2d(-tensor, stride, stride=stride, ceil_mode=True)\n        else:\n            raise NotImplementedError(\"no\")\n        if ndim == 2:\n            return tensor[:, 0, :, 0]\n        elif ndim == 3:\n            return tensor[:, 0]\n        return tensor\n\n    def forward(self, output, attention_mask):\n        attention_mask = self.pool_tensor(attention_mask, mode=\"min\")\n        output = self.pool_tensor(output, mode=self.config.pooling_type)\n        return output, attention_mask\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(findings.is_empty(), "{findings:?}");
    assert!(stats.checks.violated >= 1, "the unknown ranks torch rejects fail on their paths: {stats:?}");
    assert!(stats.memo_hits >= 2, "the second call on each input is a replay: {stats:?}");
    let (without, plain) = without_summaries(src);
    assert!(without.is_empty(), "{without:?}");
    assert!(stats.steps < plain.steps, "{} steps with summaries, {} without", stats.steps, plain.steps);
}

/// A violation that a summary replays is reported as the run reports it: the same message,
/// trace and chains of calls. (`f` fails where its opaque `mode` test holds: every path
/// reaching the product fails. The second iteration's call is made on a tainted path, the
/// first was not: the third is the replay of the second.)
#[test]
fn a_replayed_violation_is_reported_as_a_run_reports_it() {
    let src = "import sys\nimport torch\n\n\ndef f(x, mode):\n    if mode == \"project\":\n        return x @ torch.randn(5, 6)\n    return x\n\n\nmode = sys.argv[1]\na = torch.randn(3, 4)\nfor i in range(3):\n    y = f(a, mode)\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(rows(&findings), vec![(7, "SHP101")], "{findings:?}");
    let (without, _) = without_summaries(src);
    assert_eq!(format!("{findings:?}"), format!("{without:?}"));
}

/// A loader's samples: each `next()` runs the dataset's `__getitem__` with an index of its own,
/// summarised on the dataset (`Interp::call_sample`). The replay makes a fresh index and sizes
/// of its own, as a run does: two samples whose sizes are `idx + 1` are not taken to be equal,
/// so a product that needs one to be one more than the other stays undecided (taken equal, it
/// would fail on every path). The bug on the last line, which holds for any size, is found.
#[test]
fn a_loaders_sample_is_replayed_with_an_index_of_its_own() {
    let src = "import torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\nclass Rows(Dataset):\n    def __len__(self):\n        return 100\n\n    def __getitem__(self, idx):\n        return torch.randn(idx + 1, 3)\n\n\nloader = DataLoader(Rows(), batch_size=1)\nit = iter(loader)\na = next(it)[0]\nb = next(it)[0]\nc = a.t() @ torch.cat([b, torch.randn(1, 3)], 0)\nd = a @ torch.randn(4, 5)\n";
    let (findings, stats) = analyze(src, &Settings::default());
    // (`__len__` is replayed once either way; the second sample is the other hit)
    assert!(stats.memo_hits >= 2, "{stats:?}");
    assert_eq!(rows(&findings), vec![(18, "SHP101")], "{findings:?}");
    let (without, _) = without_summaries(src);
    assert_eq!(rows(&without), vec![(18, "SHP101")], "{without:?}");
}

/// A helper called on two inputs of unknown rank: each input's shape starts with a variable of
/// its own, unbound, and the helper only looks them up (`t * 2`), so the second call is replayed
/// with the first call's variable renamed to the second input's (`memo::Summary::pinned`). The
/// replay's result is the second input's shape, not the first's: after `fc8` fixes the first
/// input's last size to 8, `fc16` on the second result passes, and `fc16` on the first input
/// fails, as without summaries.
#[test]
fn a_summary_matches_a_tensor_whose_shape_starts_with_another_unbound_variable() {
    let src = "import torch\nimport torch.nn as nn\n\n\ndef double(t):\n    return t * 2\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc8 = nn.Linear(8, 4)\n        self.fc16 = nn.Linear(16, 4)\n\n    def forward(self, x, y):\n        u = double(x)\n        v = double(y)\n        a = self.fc8(u)\n        b = self.fc16(v)\n        return self.fc16(x)\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert_eq!(rows(&findings), vec![(20, "SHP101")], "{findings:?}");
    let (without, _) = without_summaries(src);
    assert_eq!(rows(&without), rows(&findings), "{without:?}");
}

/// A helper that fixes the rank of its argument (`B, T, C = t.shape`) looks up the caches of
/// refinements with the argument's variable: called again on another input of unknown rank, it
/// is not replayed with the first input's refinement (which would make both `B`s one and the
/// product below fail on every path), but runs and makes sizes of the second input's own.
#[test]
fn a_summary_that_refined_a_variable_does_not_match_another_one() {
    let src = "import torch\nimport torch.nn as nn\n\n\ndef first(t):\n    B, T, C = t.shape\n    return B\n\n\nclass Net(nn.Module):\n    def forward(self, x, y):\n        a = first(x)\n        b = first(y)\n        return torch.randn(4, a) @ torch.randn(b + 1, 2)\n";
    let (findings, _) = analyze(src, &Settings::default());
    assert!(findings.is_empty(), "{findings:?}");
    let (without, _) = without_summaries(src);
    assert!(without.is_empty(), "{without:?}");
    // (the same input twice: the sizes are one, and the product fails on every path)
    let same = src.replace("b = first(y)", "b = first(x)");
    let (findings, _) = analyze(&same, &Settings::default());
    assert_eq!(rows(&findings), vec![(14, "SHP101")], "{findings:?}");
}

/// An evaluation function calls the model, whose `forward` hands its output to a torch call
/// the engine does not model (`torch.cdist`): it loses track of that graph, so the function is
/// not judged (SHP306 needs every graph it made accounted for). The second call of `predict`
/// runs (another `k`) but replays `forward`: the replay loses the graph for `predict` as the
/// run did, and `predict` is not judged either, as without summaries.
#[test]
fn a_replayed_call_loses_track_of_a_graph_as_its_run_did() {
    let src = "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 1)\n\n    def forward(self, x):\n        h = self.fc(x)\n        d = torch.cdist(h, h)\n        return h\n\n\ndef predict(model, x, k):\n    model.eval()\n    p = model(x)\n    return p.sum().item() + k\n\n\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nx = torch.randn(4, 8)\nopt.zero_grad()\nmodel(x).sum().backward()\nopt.step()\nfor k in range(2):\n    predict(model, x, k)\n";
    let (findings, stats) = analyze(src, &Settings::default());
    assert!(stats.memo_hits >= 1, "{stats:?}");
    assert!(findings.is_empty(), "{findings:?}");
    let (without, _) = without_summaries(src);
    assert!(without.is_empty(), "{without:?}");
}
