"""The rank of a tensor of unknown rank is an int of its own (``x.ndim``, ``x.dim()``,
``len(x.shape)``): a program that tests it twice (``ndim = x.ndim``, ``if ndim == 2`` before and
after the layers) takes the same side both times, as under torch. With an Unknown rank each test
forked both ways, and the path that took both sides ran the second block on what the first did
not build: a violation recorded on a path torch never runs (not reported, as the other paths
pass, but it kept the helper from being summarised and cost the paths)."""
import subprocess
import sys

import pytest

from shape_lint import _core

SRC = """import torch


def first(x):
    k = {how}
    if k == 2:
        x = x.reshape(-1)
    else:
        x = torch.zeros(3, 4)
    if k == 2:
        return x[0].item()
    return 0.0


class M(torch.nn.Module):
    def forward(self, x):
        return first(x)
"""

HOWS = ["x.ndim", "x.dim()", "len(x.shape)"]


@pytest.mark.parametrize("how", HOWS)
def test_a_rank_tested_twice_takes_one_side(how):
    src = SRC.replace("{how}", how)
    findings, _, stats = _core.check_source_stats(src, "rank.py", {})
    assert findings == []
    # `x[0].item()` on the `zeros(3, 4)` of the other side would record a violation (4 elements)
    assert stats["violated"] == 0, stats
    assert stats["holds"] >= 1, stats


@pytest.mark.parametrize("how", HOWS)
def test_the_program_runs_under_torch_for_both_sides(tmp_path, how):
    src = SRC.replace("{how}", how)
    run = src + "\nm = M()\nfor shape in [(2, 5), (2, 5, 7), (3,)]:\n    print(m(torch.ones(*shape)))\n"
    (tmp_path / "p.py").write_text(run)
    done = subprocess.run([sys.executable, str(tmp_path / "p.py")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1.0", "0.0", "0.0"]
