"""A loop's `else` after a loop run generalised (items of unknown number, a `while` whose test
the facts cannot decide, a loop past its work budget): it runs where the items run out, and a
`break` leaves past it, as Python does. Before, a loop over unknown items skipped its `else`
(what it assigned was unknown after the loop) and a loop past its budget ran it on its `break`
paths too."""
import subprocess
import sys

import pytest

from shape_lint import _core

SRC = """import sys
import torch
for w in sys.argv:
    if w == "--flat":
        y = torch.zeros(32)
        break
else:
    y = torch.zeros(4, 8)
z = y + 0
n = 0
while n < len(sys.argv):
    n += 1
else:
    v = torch.ones(2, 3)
u = v * 2
"""


def test_the_else_of_a_generalised_loop_runs_where_its_items_run_out():
    shapes = dict(_core.show_shapes(SRC, "loop_else.py", {}))
    assert "z: [4, 8] float" in shapes.get(9, "").split(" | "), shapes
    assert shapes.get(15) == "u: [2, 3] float", shapes


def test_a_loop_that_ends_in_its_break_does_not_run_its_else():
    src = SRC.replace('    y = torch.zeros(4, 8)\n', '    y = torch.zeros(4, 8)\n    y = y.view(5, 5)\n')
    findings = [(f["code"], f["row"]) for f in _core.check_source(src, "loop_else.py", {})]
    # the else's view fails on every path that runs it, and only those paths reach it
    assert findings == [("SHP103", 9)], findings


def test_the_loops_run_under_torch(tmp_path):
    pytest.importorskip("torch")
    f = tmp_path / "loop_else.py"
    f.write_text(SRC + "assert z.shape == (32,) if '--flat' in sys.argv else z.shape == (4, 8)\nassert u.shape == (2, 3)\n")
    for argv in ([], ["--flat"]):
        assert subprocess.run([sys.executable, str(f), *argv]).returncode == 0
