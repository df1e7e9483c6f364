"""Acceptance of the first vertical slice: LeNet's fc1 -> fc2 mismatch in examples/lenet_cifar.py.

``self.fc1 = nn.Linear(16 * 5 * 5, 120)`` is followed by ``self.fc2 = nn.Linear(80, 10)``, so
``x = self.fc2(x)`` in ``forward`` raises at run time. flake8 and ``shape-lint check`` must both
report exactly one SHP101 on that line, naming 120 and ``in_features=80``; ``# noqa: SHP101``
silences it. These tests need the real engine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
LENET = EXAMPLES / "lenet_cifar.py"


def shape_lint_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("shape-lint")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "shape_lint.cli"]


def run(cmd, *, cwd=REPO, stdin=None):
    env = {k: v for k, v in os.environ.items() if k != "SHAPE_LINT_OUTPUT_FORMAT"}
    return subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.fixture
def lenet_text() -> str:
    # A plain assert inside the test (not a fixture error) while the example is missing.
    return LENET.read_text(encoding="utf-8") if LENET.is_file() else ""


def _fc2_line(lenet_text: str) -> int:
    rows = [i for i, line in enumerate(lenet_text.splitlines(), start=1) if "self.fc2(x)" in line]
    assert len(rows) == 1, f"expected one `self.fc2(x)` call in {LENET}, found lines {rows}"
    return rows[0]


def shp_lines(stdout: str) -> list[str]:
    return [ln for ln in stdout.splitlines() if " SHP" in ln]


def assert_the_finding(line: str, path_suffix: str, row: int) -> None:
    location, _, rest = line.partition(": ")
    path, line_no, col = location.rsplit(":", 2)
    assert path.replace(os.sep, "/").endswith(path_suffix), line
    assert int(line_no) == row, line
    assert int(col) >= 1
    assert rest.startswith("SHP101 "), line
    assert "120" in rest and "in_features=80" in rest, line


def test_flake8_reports_exactly_one_shp101(lenet_text):
    fc2_line = _fc2_line(lenet_text)
    r = run([sys.executable, "-m", "flake8", "--select=SHP", "examples/"])
    assert "Traceback" not in r.stderr, r.stderr
    lenet = [ln for ln in shp_lines(r.stdout) if "lenet_cifar.py" in ln]
    assert len(lenet) == 1, r.stdout
    assert_the_finding(lenet[0], "examples/lenet_cifar.py", fc2_line)
    assert r.returncode == 1


def test_shape_lint_check_reports_exactly_one_shp101(lenet_text):
    fc2_line = _fc2_line(lenet_text)
    r = run([*shape_lint_cmd(), "check", "--output-format", "concise", "examples/"])
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1, (r.stdout, r.stderr)
    lenet = [ln for ln in shp_lines(r.stdout) if "lenet_cifar.py" in ln]
    assert len(lenet) == 1, r.stdout
    assert_the_finding(lenet[0], "examples/lenet_cifar.py", fc2_line)


def test_shape_lint_json_points_at_the_call(lenet_text):
    fc2_line = _fc2_line(lenet_text)
    r = run([*shape_lint_cmd(), "check", "--output-format", "json", str(LENET)])
    records = json.loads(r.stdout)
    assert [d["code"] for d in records] == ["SHP101"]
    (rec,) = records
    assert rec["location"]["row"] == fc2_line
    line = lenet_text.splitlines()[fc2_line - 1]
    start = rec["location"]["column"] - 1
    end = rec["end_location"]["column"] - 1
    assert "fc2" in line[start:end] or line[start:].startswith("self.fc2"), (line, start, end)


def test_stdin_flake8_and_cli(lenet_text):
    fc2_line = _fc2_line(lenet_text)
    r = run([sys.executable, "-m", "flake8", "--select=SHP", "--stdin-display-name",
             "examples/lenet_cifar.py", "-"], stdin=lenet_text)
    assert len(shp_lines(r.stdout)) == 1, r.stdout
    assert_the_finding(shp_lines(r.stdout)[0], "examples/lenet_cifar.py", fc2_line)
    r = run([*shape_lint_cmd(), "check", "--output-format", "concise", "--stdin-filename",
             "examples/lenet_cifar.py", "-"], stdin=lenet_text)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert len(shp_lines(r.stdout)) == 1, r.stdout
    assert_the_finding(shp_lines(r.stdout)[0], "examples/lenet_cifar.py", fc2_line)


def test_noqa_silences_it(tmp_path, lenet_text):
    fc2_line = _fc2_line(lenet_text)
    # Prove the copy reports first, then that the comment silences both frontends.
    shutil.copy(LENET, tmp_path / "lenet_cifar.py")
    r = run([*shape_lint_cmd(), "check", "--output-format", "concise", "lenet_cifar.py"], cwd=tmp_path)
    assert len(shp_lines(r.stdout)) == 1, r.stdout
    lines = lenet_text.splitlines(keepends=True)
    lines[fc2_line - 1] = lines[fc2_line - 1].rstrip("\r\n") + "  # noqa: SHP101\n"
    (tmp_path / "lenet_cifar.py").write_text("".join(lines), encoding="utf-8")
    r = run([sys.executable, "-m", "flake8", "--select=SHP", "lenet_cifar.py"], cwd=tmp_path)
    assert shp_lines(r.stdout) == [] and r.returncode == 0, r.stdout
    r = run([*shape_lint_cmd(), "check", "--output-format", "concise", "lenet_cifar.py"], cwd=tmp_path)
    assert shp_lines(r.stdout) == [] and r.returncode == 0, (r.stdout, r.stderr)
