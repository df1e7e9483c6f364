"""Opt-in SHP9xx diagnostics: produced only with may_fail, and only where torch merely warns."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from shape_lint import _core

SRC = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(8, 1)
x = torch.randn(64, 8)
y = torch.randn(64)
pred = model(x)
loss = F.mse_loss(pred, y)
loss2 = nn.MSELoss()(pred.squeeze(1), y)
loss3 = nn.L1Loss()(pred, y.unsqueeze(1))
"""


def codes(src: str, **opts) -> list[tuple[int, str]]:
    return [(f["row"], f["code"]) for f in _core.check_source(src, "t.py", opts or None)]


def test_loss_broadcast_is_opt_in():
    assert codes(SRC) == []
    assert codes(SRC, may_fail=True) == [(9, "SHP901")]


def test_rule_is_registered_opt_in():
    rule = next(r for r in _core.rules() if r["code"] == "SHP901")
    assert not rule["default_enabled"]


def test_torch_only_warns_there():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(SRC, "t.py", "exec"), {"torch": torch})  # noqa: S102 - our own program
    lines = sorted({w.lineno for w in caught if "target size" in str(w.message)})
    # the warning is raised inside torch; it names the call we flag by its shapes
    assert any("target size" in str(w.message) for w in caught), lines


def test_cli_needs_may_fail_and_selection(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(SRC)
    run = lambda *a: subprocess.run([sys.executable, "-m", "shape_lint.cli", "check", *a, str(f)], capture_output=True, text=True)  # noqa: E731
    assert "SHP901" not in run().stdout
    out = run("--may-fail", "--extend-select", "SHP9").stdout
    assert "SHP901" in out and ":9:" in out
