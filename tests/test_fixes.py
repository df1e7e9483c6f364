"""Suggested fixes (issue 14): where one literal number decides a failing check, the finding
carries a fix, the message names it, and ``check --fix --unsafe-fixes`` applies it.

The oracle: every fix the core offers on a bug fixture leaves a file that the core finds clean
and that runs under torch (``oracle_runner.py``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shape_lint import _core, cli
from shape_lint.fixes import apply_edits

HERE = Path(__file__).resolve().parent
FIXTURES = sorted((HERE / "fixtures").glob("*/*.py"))
RUNNER = HERE / "oracle_runner.py"

LENET = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(10, 120)
            self.fc2 = nn.Linear(80, 84)

        def forward(self, x):
            x = torch.relu(self.fc1(x))
            return self.fc2(x)


    print(Net()(torch.randn(4, 10)).shape)
    """)


def fixes_of(source, name="t.py"):
    return [f for f in _core.check_source(source, name) if "fix" in f]


def test_linear_fix_shape_and_message():
    (f,) = _core.check_source(LENET, "t.py")
    assert f["code"] == "SHP101" and f["row"] == 13
    assert f["message"].endswith("; use nn.Linear(120, 84)")
    # the edit replaces the literal 80 on the definition line, not the finding's line
    assert f["fix"] == {
        "message": "use nn.Linear(120, 84)",
        "applicability": "unsafe",
        "edits": [{"content": "120", "row": 9, "col": 30, "end_row": 9, "end_col": 32}],
    }
    assert _core.check_source(apply_edits(LENET, f["fix"]["edits"]), "t.py") == []


def test_conv_in_channels_fix():
    src = textwrap.dedent("""\
        import torch
        import torch.nn as nn

        net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Conv2d(in_channels=8, out_channels=4, kernel_size=3))
        net(torch.randn(2, 3, 32, 32))
        """)
    (f,) = fixes_of(src)
    assert f["fix"]["edits"][0]["content"] == "16"
    assert "in_channels=16" in f["fix"]["message"]
    assert _core.check_source(apply_edits(src, f["fix"]["edits"]), "t.py") == []


@pytest.mark.parametrize("src", [
    # the number is not a literal at the layer
    LENET.replace("nn.Linear(80, 84)", "nn.Linear(n, 84)").replace("import torch\n", "import torch\nn = 80\n", 1),
    # fixing it only moves the error to the next layer (fc3 expects 80, fc2 makes 84)
    LENET.replace("return self.fc2(x)", "return self.fc3(self.fc2(x))").replace(
        "self.fc2 = nn.Linear(80, 84)", "self.fc2 = nn.Linear(80, 84)\n        self.fc3 = nn.Linear(80, 10)"),
])
def test_no_fix_unless_one_literal_makes_the_file_clean(src):
    found = _core.check_source(src, "t.py")
    assert [f["code"] for f in found] == ["SHP101"]
    assert "fix" not in found[0] and "; use " not in found[0]["message"]


def run_under_torch(path: Path, workdir: Path) -> dict:
    report = workdir / "report.json"
    subprocess.run([sys.executable, str(RUNNER), str(path), str(report)], cwd=workdir,
                   capture_output=True, text=True, timeout=120,
                   env=dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"))
    return json.loads(report.read_text())


def test_every_fixture_fix_leaves_a_clean_file_that_runs(tmp_path):
    """The acceptance oracle: after each fix the file is clean and runs under torch."""
    pytest.importorskip("torch")
    fixed = []
    for path in FIXTURES:
        source = path.read_text(encoding="utf-8")
        for f in fixes_of(source, str(path)):
            after = apply_edits(source, f["fix"]["edits"])
            # written next to the fixture (its imports of sibling files resolve)
            out = path.with_name(f"_fixed_{path.name}")
            out.write_text(after, encoding="utf-8")
            try:
                assert _core.check_source(after, str(out)) == [], (path, f)
                work = tmp_path / path.stem
                work.mkdir()
                rep = run_under_torch(out, work)
            finally:
                out.unlink()
            if rep.get("skip"):
                continue
            assert rep["ok"], (path.name, f["fix"], rep.get("error"))
            fixed.append(path.name)
    # Linear in_features and Conv in_channels fixtures are among them
    assert len(fixed) >= 3, fixed


# ---------------------------------------------------------------------------------------------
# The CLI: ruff's convention for unsafe fixes


def shape_lint(*args, cwd):
    exe = Path(sys.executable).with_name("shape-lint")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "shape_lint.cli"]
    return subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_cli_fix_needs_unsafe_fixes(tmp_path):
    m = tmp_path / "m.py"
    m.write_text(LENET)
    r = shape_lint("check", "--no-cache", "--fix", "m.py", cwd=tmp_path)
    assert r.returncode == 1 and m.read_text() == LENET
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in r.stdout
    r = shape_lint("check", "--no-cache", "--unsafe-fixes", "m.py", cwd=tmp_path)
    assert r.returncode == 1 and "SHP101 [*] " in r.stdout and "[*] 1 fixable with the `--fix` option." in r.stdout
    r = shape_lint("check", "--no-cache", "--diff", "--unsafe-fixes", "m.py", cwd=tmp_path)
    assert r.returncode == 1 and m.read_text() == LENET
    assert "-        self.fc2 = nn.Linear(80, 84)\n+        self.fc2 = nn.Linear(120, 84)\n" in r.stdout
    assert "Would fix 1 error." in r.stderr
    r = shape_lint("check", "--no-cache", "--fix", "--unsafe-fixes", "m.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Found 1 error (1 fixed, 0 remaining)." in r.stdout
    assert m.read_text() == LENET.replace("nn.Linear(80, 84)", "nn.Linear(120, 84)")


def test_cli_json_carries_the_fix_in_ruffs_shape(tmp_path):
    (tmp_path / "m.py").write_text(LENET)
    r = shape_lint("check", "--no-cache", "--output-format", "json", "m.py", cwd=tmp_path)
    (rec,) = json.loads(r.stdout)
    assert rec["fix"] == {
        "applicability": "unsafe",
        "edits": [{"content": "120", "end_location": {"column": 32, "row": 9},
                   "location": {"column": 30, "row": 9}}],
        "message": "use nn.Linear(120, 84)",
    }


def test_run_core_drops_a_malformed_fix(monkeypatch):
    good = {"code": "SHP101", "name": "n", "message": "m", "row": 1, "col": 1, "end_row": 1,
            "end_col": 2, "trace": [], "condition": None, "fix": {"message": "x", "edits": [{"content": 1}]}}
    monkeypatch.setattr(cli, "_check_source", lambda *a: [good])
    (f,) = cli._run_core("x", "t.py", {})
    assert f["fix"] is None and f["code"] == "SHP101"
