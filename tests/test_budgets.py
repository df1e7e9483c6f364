"""Budgets and the analysis-incomplete notice (``SHP002``), in every front end.

Each budget is forced on a small file, and the notice is seen where the user looks: the CLI
(a ``warning:`` on stderr whatever the selection, never "All checks passed!", exit 0 unless
``SHP002`` is selected), its JSON, SARIF and ``--statistics``, flake8 (only when selected) and
the language server (an information diagnostic). The step and path budgets count work, so the
same file gets the same findings and the same notice under any load; the wall clock is a safety
net whose cut is said to be one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shape_lint import _core

#: A script that builds and calls a model whose `forward` loops, then a bug on its last line.
BUDGETED = """\
import torch
import torch.nn as nn


class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 8)

    def forward(self, x):
        for i in range(10):
            x = x * 2
        return self.l(x)


m = A()
y = m(torch.randn(2, 4))
z = torch.randn(3, 4) @ torch.randn(5, 6)
"""
BUG_ROW = BUDGETED.splitlines().index("z = torch.randn(3, 4) @ torch.randn(5, 6)") + 1

#: Two paths that cannot be joined into one (one of them runs with autograd off): a path budget
#: of 1 is exceeded at the `if`, whatever the joins past half the budget do.
FORKED = """\
import sys

import torch

if len(sys.argv) > 1:
    torch.set_grad_enabled(False)
z = torch.randn(3, 4) @ torch.randn(5, 6)
"""
PATHS_NOTICE = "analysis incomplete: more than 1 path was live at once (the path budget) at line 5"


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shape_lint.cli", "check", "-n", "m.py", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "m.py").write_text(BUDGETED)
    return tmp_path


def notices(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["code"] == "SHP002"]


def test_within_budget_there_is_no_notice():
    got = _core.check_source(BUDGETED, "m.py")
    assert [(f["code"], f["row"]) for f in got] == [("SHP101", BUG_ROW)]


def test_the_step_budget_cuts_at_the_same_place_every_time():
    runs = [_core.check_source(BUDGETED, "m.py", {"max_steps": 40}) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    (n,) = notices(runs[0])
    assert n["row"] == 1
    assert "the step budget (40 interpreter steps per file) ran out at line" in n["message"]
    assert "in the module's top level" in n["message"]
    # the bug past the cut is not reported, and the notice is what says so
    assert all(f["code"] != "SHP101" for f in runs[0])
    assert "wall-clock" not in n["message"]


def test_the_path_budget_cuts_at_the_same_place_every_time():
    runs = [_core.check_source(FORKED, "m.py", {"max_paths": 1}) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert [(f["code"], f["row"]) for f in runs[0]] == [("SHP002", 1)]
    assert runs[0][0]["message"].startswith(PATHS_NOTICE)
    # within the default budget the two paths reach the bug
    assert [f["code"] for f in _core.check_source(FORKED, "m.py")] == ["SHP101"]


def test_the_clock_is_a_safety_net_that_says_it_cut():
    (n,) = notices(_core.check_source(BUDGETED, "m.py", {"timeout_ms": 0}))
    assert "the safety time limit (0 ms per file) was reached" in n["message"]
    assert "another machine may get further" in n["message"]


def test_the_default_clock_is_far_above_a_normal_file():
    # the step budget, not the clock, is what a normal file meets first (no option given)
    got = _core.check_source_stats(BUDGETED, "m.py")[2]
    assert got["abandoned"] == 0


def test_cli_warns_and_never_says_all_checks_passed(project: Path):
    r = cli(project, "--max-steps", "40")
    assert r.returncode == 0, r.stderr
    assert "All checks passed!" not in r.stdout
    assert "1 file was only partly analysed (SHP002)" in r.stdout
    warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: m.py: analysis incomplete:")]
    assert len(warnings) == 1 and warnings[0].endswith("[SHP002]")
    # ignored explicitly: silent, as any ignored code
    r = cli(project, "--max-steps", "40", "--ignore", "SHP002")
    assert "SHP002" not in r.stderr and r.returncode == 0
    # selected: a diagnostic like any other, and the run fails
    r = cli(project, "--max-steps", "40", "--extend-select", "SHP002")
    assert r.returncode == 1 and "m.py:1:1: SHP002 analysis incomplete" in r.stdout
    # within budget: the bug, and no notice
    r = cli(project)
    assert r.returncode == 1 and "SHP101" in r.stdout and "SHP002" not in r.stdout + r.stderr


def test_machine_formats_and_statistics_carry_the_notice(project: Path):
    data = json.loads(cli(project, "--max-steps", "40", "--output-format", "json").stdout)
    assert [d["code"] for d in data] == ["SHP002"]
    lines = cli(project, "--max-steps", "40", "--output-format", "json-lines").stdout.splitlines()
    assert [json.loads(ln)["code"] for ln in lines] == ["SHP002"]
    sarif = json.loads(cli(project, "--max-steps", "40", "--output-format", "sarif").stdout)
    (res,) = sarif["runs"][0]["results"]
    assert res["ruleId"] == "SHP002" and res["level"] == "note"
    stats = cli(project, "--max-steps", "40", "--statistics").stdout
    assert "SHP002" in stats and "analysis-incomplete" in stats


def test_every_cli_format_carries_the_path_budget_notice(project: Path):
    (project / "m.py").write_text(FORKED)
    r = cli(project, "--max-paths", "1")
    assert r.returncode == 0 and "All checks passed!" not in r.stdout
    assert r.stderr.splitlines() == [f"warning: m.py: {PATHS_NOTICE}, in the module's top level [SHP002]"]
    data = json.loads(cli(project, "--max-paths", "1", "--output-format", "json").stdout)
    assert [(d["code"], d["message"].startswith(PATHS_NOTICE)) for d in data] == [("SHP002", True)]
    sarif = json.loads(cli(project, "--max-paths", "1", "--output-format", "sarif").stdout)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["SHP002"]
    assert "SHP002" in cli(project, "--max-paths", "1", "--statistics").stdout


def test_max_steps_from_the_config_file(project: Path):
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.shape-lint]\nmax-steps = 40\n")
    r = cli(project)
    assert "analysis incomplete" in r.stderr and "All checks passed!" not in r.stdout
    (project / "pyproject.toml").write_text("[tool.shape-lint]\nmax-steps = 0\n")
    r = cli(project)
    assert r.returncode == 2 and "max-steps" in r.stderr


def test_flake8_reports_the_notice_only_when_selected(project: Path):
    def flake8(*args: str) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "flake8", "--shp-no-cache", "--shp-max-steps", "40", *args, "m.py"],
            cwd=project, capture_output=True, text=True, timeout=120,
        )
        return r.stdout

    assert "SHP002" not in flake8("--select", "SHP")
    assert "SHP002" not in flake8()
    out = flake8("--extend-select", "SHP002")
    assert "m.py:1:1: SHP002 analysis incomplete: the step budget (40 interpreter steps per file)" in out


def test_flake8_reports_the_path_budget_notice_when_selected(project: Path):
    (project / "m.py").write_text(FORKED)
    r = subprocess.run(
        [sys.executable, "-m", "flake8", "--shp-no-cache", "--shp-max-paths", "1", "--extend-select", "SHP002", "m.py"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )
    assert r.stdout.splitlines() == [f"m.py:1:1: SHP002 {PATHS_NOTICE}, in the module's top level"]


def test_the_step_profile_says_where_the_steps_go():
    """``SHAPE_LINT_PROFILE=1`` (a developer aid) prints the chain of user call sites every
    1,024 steps: a helper that loops 300 times, called at line 10, shows in the chains,
    and nothing is printed without the variable."""
    src = (
        "import torch\n\n\ndef helper(n):\n    out = []\n    for i in range(n):\n"
        "        out.append(torch.randn(3, i + 1).sum(1))\n    return out\n\nys = helper(300)\n"
    )
    code = f"from shape_lint import _core\n_core.check_source({src!r}, 'p.py')\n"
    env = {k: v for k, v in __import__("os").environ.items() if k != "SHAPE_LINT_PROFILE"}
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert quiet.returncode == 0 and "[shape-lint profile]" not in quiet.stderr
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, "SHAPE_LINT_PROFILE": "1"}, timeout=60)
    chains = [line.split("] ", 1)[1] for line in loud.stderr.splitlines() if line.startswith("[shape-lint profile]")]
    assert chains and any(c.endswith(":10") for c in chains), loud.stderr[-2000:]
