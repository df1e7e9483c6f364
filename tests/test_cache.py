"""The results cache (``shape_lint.cache``) and project-wide answers of the two front ends."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shape_lint import cache, solver

MODEL = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.fc1(x.flatten(1)).relu())
"""

TRAIN = """import torch
from model import Net

if __name__ == "__main__":
    net = Net(hidden=64)
    print(net(torch.randn(8, 1, 28, 28)).shape)
"""


def make_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (root / "model.py").write_text(MODEL)
    (root / "train.py").write_text(TRAIN)
    return root


@pytest.fixture
def counted(monkeypatch):
    """Count the analyses that really run (the seam below the cache)."""
    calls = []
    real = solver._check_source

    def spy(source, filename, options):
        calls.append(filename)
        return real(source, filename, options)

    monkeypatch.setattr(solver, "_check_source", spy)
    cache.forget_stamps()
    yield calls
    cache.forget_stamps()


def check(path: Path, **options):
    return solver.check_source(path.read_text(), str(path), {"solver": False, **options})


def test_a_second_check_of_an_unchanged_project_is_answered_from_the_cache(tmp_path, counted):
    root = make_project(tmp_path / "p")
    first = check(root / "model.py")
    assert [f["row"] for f in first] == [11], "train.py's hidden=64 breaks fc2 in model.py"
    assert check(root / "model.py") == first
    assert len(counted) == 1
    entries = list((root / cache.CACHE_DIR).rglob("*.json"))
    assert len(entries) == 1 and json.loads(entries[0].read_text()) == first
    assert (root / cache.CACHE_DIR / ".gitignore").read_text().strip().endswith("*")


def test_what_the_findings_depend_on_is_in_the_key(tmp_path, counted):
    root = make_project(tmp_path / "p")
    check(root / "model.py")
    # the file's own text
    solver.check_source(MODEL + "\n", str(root / "model.py"), {"solver": False})
    assert len(counted) == 2
    # the options
    check(root / "model.py", may_fail=True)
    assert len(counted) == 3
    # another file of the project: the importing script is fixed
    (root / "train.py").write_text(TRAIN.replace("hidden=64", "hidden=128"))
    cache.forget_stamps()
    assert check(root / "model.py") == []
    assert len(counted) == 4


def test_no_cache_reads_and_writes_nothing_and_files_outside_projects_are_not_cached(tmp_path, counted):
    root = make_project(tmp_path / "p")
    check(root / "model.py", cache=False)
    check(root / "model.py", cache=False)
    assert len(counted) == 2
    assert not (root / cache.CACHE_DIR).exists()
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "m.py").write_text(MODEL)
    # no project marker above tmp_path's folder is assumed; skip if the machine has one
    if cache.project_root(loose / "m.py") is None:
        check(loose / "m.py")
        check(loose / "m.py")
        assert len(counted) == 4
        assert not (loose / cache.CACHE_DIR).exists()


def test_an_unwritable_cache_only_costs_time(tmp_path, counted):
    root = make_project(tmp_path / "p")
    (root / cache.CACHE_DIR).write_text("not a folder")
    assert [f["row"] for f in check(root / "model.py")] == [11]
    assert [f["row"] for f in check(root / "model.py")] == [11]
    assert len(counted) == 2


def _run(args, cwd):
    env = dict(os.environ, PYTHONPATH=str(Path(solver.__file__).resolve().parent.parent))
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def test_flake8_with_two_jobs_and_the_cli_give_the_same_findings(tmp_path):
    pytest.importorskip("flake8")
    root = make_project(tmp_path / "p")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("from .layers import head\n")
    (root / "pkg" / "layers.py").write_text("import torch.nn as nn\n\n\ndef head(n):\n    return nn.Linear(n, 10)\n")
    (root / "use.py").write_text("import torch\nfrom pkg import head\n\nhead(32)(torch.randn(4, 16))\n")
    flake = _run(["flake8", "--select=SHP", "--jobs", "2", "--shp-no-cache", "."], root)
    cli = _run(["shape_lint.cli", "check", "--no-cache", "--output-format", "concise", "."], root)

    def norm(text):
        found = (re.match(r"^(?:\./)?([^:]+):(\d+):\d+: (SHP\d+)", line) for line in text.splitlines())
        return sorted(f"{m[1]}:{m[2]}:{m[3]}" for m in found if m)

    assert norm(flake.stdout) == ["model.py:11:SHP101", "use.py:4:SHP101"], flake.stdout + flake.stderr
    assert norm(cli.stdout) == norm(flake.stdout), cli.stdout + cli.stderr
    assert not (root / cache.CACHE_DIR).exists()


STATS = """import json, sys
from shape_lint import cache, solver, _core
path = sys.argv[1]
options = {"script_cache": cache.script_salt()} if sys.argv[2] == "cache" else {}
findings, _, stats = _core.check_source_stats(open(path).read(), path, options)
print(json.dumps([[f["row"], f["code"]] for f in findings] + [stats["script_runs"]]))
"""


def _stats_in_a_new_process(path: Path, mode: str = "cache"):
    here = str(Path(cache.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", STATS, str(path), mode], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    *found, runs = json.loads(p.stdout)
    return found, runs


def test_a_script_importing_the_checked_file_runs_once_across_processes(tmp_path):
    # two model files imported by one script: the first process runs the script and keeps its
    # result in the project's cache; a second process checking the other file takes it
    root = make_project(tmp_path / "p")
    (root / "other.py").write_text(MODEL.replace("Net", "Other").replace("nn.Linear(128, 10)", "nn.Linear(hidden, 10)"))
    (root / "train.py").write_text(TRAIN.replace("from model import Net", "from model import Net\nfrom other import Other"))
    assert _stats_in_a_new_process(root / "model.py") == ([[11, "SHP101"]], 1)
    assert (root / cache.CACHE_DIR / "scripts" / "v1").is_dir()
    assert _stats_in_a_new_process(root / "other.py") == ([], 0)
    assert _stats_in_a_new_process(root / "model.py") == ([[11, "SHP101"]], 0)
    # a file the script loads changed: the kept result is stale
    (root / "other.py").write_text((root / "other.py").read_text() + "# edited\n")
    assert _stats_in_a_new_process(root / "model.py") == ([[11, "SHP101"]], 1)
    assert _stats_in_a_new_process(root / "other.py") == ([], 0)
    # without the salt (the results cache off) the core keeps nothing on disk
    assert _stats_in_a_new_process(root / "other.py", "none") == ([], 1)


def test_no_cache_keeps_no_script_results(tmp_path):
    pytest.importorskip("flake8")
    root = make_project(tmp_path / "p")
    flake = _run(["flake8", "--select=SHP", "--shp-no-cache", "."], root)
    assert "model.py:11:" in flake.stdout, flake.stdout + flake.stderr
    assert not (root / cache.CACHE_DIR).exists()
    # with the cache: the results and the script's result
    flake = _run(["flake8", "--select=SHP", "."], root)
    assert "model.py:11:" in flake.stdout, flake.stdout + flake.stderr
    assert any((root / cache.CACHE_DIR / "scripts" / "v1").iterdir())
