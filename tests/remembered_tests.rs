//! Opaque tests remembered on a path (`value::taken`): the same test of an unchanged value
//! takes the side it took, in the same function, across calls, through call summaries, and at
//! a script's top level; a store of the value makes the next test fork again. The torch side
//! of the first cases is `tests/test_remembered_tests.py`.

use shape_lint::Settings;

fn analyze(src: &str, memo: bool) -> (Vec<(usize, &'static str)>, shape_lint::engine::Stats) {
    let parsed = shape_lint::parse::parse(src);
    let module = shape_lint::ir::lower::lower_module(&parsed);
    let (findings, stats) = shape_lint::engine::analyze_with_stats(&module, &parsed, &Settings { memo, ..Settings::default() });
    (findings.iter().map(|f| (f.row, f.rule.code)).collect(), stats)
}

/// The findings, the same with call summaries and without.
fn findings(src: &str) -> Vec<(usize, &'static str)> {
    let (with, _) = analyze(src, true);
    let (without, _) = analyze(src, false);
    assert_eq!(with, without, "a replay decided otherwise than a run");
    with
}

/// `findings`, when call summaries replayed at least `hits` calls (the case is one of replays).
fn findings_replayed(src: &str, hits: u64) -> Vec<(usize, &'static str)> {
    let out = findings(src);
    let (_, stats) = analyze(src, true);
    assert!(stats.memo_hits >= hits, "{stats:?}");
    out
}

/// `wide` taken in `__init__` (through a helper) and again in `forward` (through another, called
/// twice): each configuration builds one layer and feeds it the other width.
const HELPERS: &str = "import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wide = cfg.wide
        self.fc = nn.Linear(self.width(), 5)

    def width(self):
        if self.wide:
            return 20
        return 10

    def other(self):
        if self.wide:
            return 10
        return 20

    def forward(self, x):
        a = self.other()
        b = self.other()
        return self.fc(torch.zeros(3, a + b - a))
";

#[test]
fn a_flag_taken_in_helpers_keeps_its_side_through_their_summaries() {
    // the second call of `other` on each path is a replay (the one of the other path's run
    // made without the caller's side, its other side dropped)
    assert_eq!(findings_replayed(HELPERS, 2), vec![(24, "SHP101")]);
}

#[test]
fn a_flag_stored_in_a_helper_forks_again_after_it() {
    let src = HELPERS
        .replace("        self.wide = cfg.wide\n", "        self.cfg = cfg\n        self.wide = cfg.wide\n")
        .replace("        a = self.other()\n", "        self.reset()\n        a = self.other()\n")
        + "
    def reset(self):
        self.wide = self.cfg.narrow
";
    // (`wide` is stored again: `other` may take either side on either layer)
    assert_eq!(findings(&src), vec![]);
}

/// A script's flag, a variable of the module, tested twice.
const SCRIPT: &str = "import os
import torch
import torch.nn as nn

mode = os.environ.get(\"MODE\")
if mode == \"wide\":
    fc = nn.Linear(20, 5)
else:
    fc = nn.Linear(10, 5)
if mode != \"wide\":
    h = torch.zeros(3, 20)
else:
    h = torch.zeros(3, 10)
y = fc(h)
";

#[test]
fn a_variable_tested_twice_takes_one_side() {
    assert_eq!(findings(SCRIPT), vec![(14, "SHP101")]);
}

#[test]
fn a_variable_bound_again_is_tested_again() {
    let src = SCRIPT.replace("if mode != \"wide\":", "mode = os.environ.get(\"OTHER\")\nif mode != \"wide\":");
    assert_eq!(findings(&src), vec![]);
}

#[test]
fn a_string_changed_through_an_unknown_alias_is_tested_again() {
    // `opts.update(...)` may change `opts["mode"]`, which `mode` does not alias, and may change
    // a list `mode` is: any unknown object changed in place forgets every test
    let src = SCRIPT
        .replace("mode = os.environ.get(\"MODE\")\n", "opts = os.environ.get(\"OPTS\")\nmode = opts.modes\n")
        .replace("if mode == \"wide\":", "if \"wide\" in mode:")
        .replace("if mode != \"wide\":", "opts.modes.append(\"wide\")\nif \"wide\" not in mode:");
    assert_eq!(findings(&src), vec![]);
}

/// `wide` stored by a helper whose later calls are replays (each on a path that took an opaque
/// choice, as the first: a summary keys that): a replay forgets the side the caller took, as
/// the run does (`cfg.pick()` may give another value at each call).
pub const REPLAYED_STORE: &str = "import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wide = cfg.wide
        self.fc = nn.Linear(30, 5)

    def reset(self):
        self.wide = self.cfg.pick()

    def forward(self, x):
        if self.cfg.warm:
            w = 1
        else:
            w = 2
        self.reset()
        if self.wide:
            a = 10
        else:
            a = 20
        self.reset()
        if self.wide:
            b = 10
        else:
            b = 20
        return self.fc(torch.zeros(3, a + b))
";

#[test]
fn a_replayed_store_forgets_the_callers_side() {
    assert_eq!(findings_replayed(REPLAYED_STORE, 1), vec![]);
}

/// A method of the unknown `cfg` (no method known to leave it as it is) may change it: the
/// tests of it are forgotten, on a replay of `load` too (its first run, on a path with no test
/// remembered, forgot nothing there).
pub const RELOADED: &str = "import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.fc = nn.Linear(20, 5)

    def load(self):
        self.cfg.merge_from_file(\"other.yaml\")

    def forward(self, x):
        if x.sum() > 0:
            w = 1
        else:
            w = 2
        self.load()
        if self.cfg.wide:
            a = 5
        else:
            a = 10
        self.load()
        if self.cfg.wide:
            b = 10
        else:
            b = 5
        return self.fc(torch.zeros(3, a + b))
";

#[test]
fn a_method_of_an_unknown_value_forgets_its_tests() {
    assert_eq!(findings_replayed(RELOADED, 1), vec![]);
}
