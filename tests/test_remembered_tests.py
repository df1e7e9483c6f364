"""An opaque test taken again on a path is decided as it was, while the value it tests is
unchanged (`rust/value/taken.rs`): a configuration flag the analysis cannot know tested in
`__init__` and again in `forward` takes the same side in both, as the program does. Before, each
test forked anew, and the paths that took one side in `__init__` and the other in `forward`,
which no configuration runs, hid a bug that every configuration has.

A store of the value, or a change through an unknown alias, ends that: the next test forks.
Each case runs under torch with the configurations named."""
import types

import pytest

from shape_lint import _core

# Both configurations fail at the last line (the width is swapped in `forward`); only the
# mixed readings, which no configuration runs, pass.
SWAPPED = """import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wide = cfg.wide
        if self.wide:
            self.fc = nn.Linear(20, 5)
        else:
            self.fc = nn.Linear(10, 5)

    def forward(self, x):
        if self.wide:
            h = torch.zeros(3, 10)
        else:
            h = torch.zeros(3, 20)
        return self.fc(h)
"""

# The flag is stored again between the tests: `wide=True, narrow=False` runs.
RESTORED = SWAPPED.replace("""    def forward(self, x):
        if self.wide:""", """    def forward(self, x):
        self.wide = self.cfg.narrow
        if self.wide:""").replace("        self.wide = cfg.wide\n", "        self.cfg = cfg\n        self.wide = cfg.wide\n")

# The list tested is changed in place through an unknown alias between the tests: a `modes`
# without "big" runs (10 + 10 features).
MUTATED = """import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.fc = nn.Linear(20, 5)

    def forward(self, x):
        if "big" in self.cfg.modes:
            a = 5
        else:
            a = 10
        self.cfg.modes.append("big")
        if "big" in self.cfg.modes:
            b = 10
        else:
            b = 5
        return self.fc(torch.zeros(3, a + b))
"""


def findings(src):
    return [(f["code"], f["row"]) for f in _core.check_source(src, "head.py", {})]


def run_head(src, **cfg):
    torch = pytest.importorskip("torch")
    scope = {}
    exec(compile(src, "head.py", "exec"), scope)
    model = scope["Head"](types.SimpleNamespace(**cfg))
    return model(torch.zeros(3, 4))


def test_a_flag_tested_again_takes_the_side_it_took():
    assert findings(SWAPPED) == [("SHP101", 19)]


def test_every_configuration_of_the_swapped_flag_raises_there():
    for wide in (True, False):
        with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
            run_head(SWAPPED, wide=wide)


def test_a_flag_stored_again_is_tested_again():
    assert findings(RESTORED) == []
    assert tuple(run_head(RESTORED, wide=True, narrow=False).shape) == (3, 5)


def test_a_list_changed_through_an_unknown_alias_is_tested_again():
    assert findings(MUTATED) == []
    assert tuple(run_head(MUTATED, modes=[]).shape) == (3, 5)


def test_the_replayed_store_case_runs_for_a_flag_that_changes():
    # `tests/remembered_tests.rs::REPLAYED_STORE`: a `pick` that alternates runs (10 + 20)
    src = open(__file__.replace("test_remembered_tests.py", "remembered_tests.rs")).read()
    src = src.split('pub const REPLAYED_STORE: &str = "', 1)[1].split('";\n', 1)[0].replace('\\"', '"')
    picks = iter([True, False])
    out = run_head(src, wide=True, warm=False, pick=lambda: next(picks))
    assert tuple(out.shape) == (3, 5)
    assert findings(src) == []


def test_the_reloaded_case_runs_for_a_config_that_changes():
    # `tests/remembered_tests.rs::RELOADED`: `merge_from_file` flips `wide` (5 + 10... 10 + 10)
    src = open(__file__.replace("test_remembered_tests.py", "remembered_tests.rs")).read()
    src = src.split('pub const RELOADED: &str = "', 1)[1].split('";\n', 1)[0].replace('\\"', '"')
    cfg = types.SimpleNamespace(wide=True)
    cfg.merge_from_file = lambda path: setattr(cfg, "wide", not cfg.wide)
    torch = pytest.importorskip("torch")
    scope = {}
    exec(compile(src, "head.py", "exec"), scope)
    out = scope["Head"](cfg)(torch.ones(3, 4))
    assert tuple(out.shape) == (3, 5)
    assert findings(src) == []
