"""The quick forms of ``bench/real_repos.py``, ``bench/vs_ruff.py`` and ``bench/cli_profile.py``:
each runs over a few fixture files and prints its table (no speed is asserted)."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
FIXTURES = ROOT / "tests" / "fixtures"


def corpus(tmp_path: Path, name: str, files: list[str]) -> Path:
    """A checkout of a few fixtures (a `.git` marks its root, as in a clone)."""
    repo = tmp_path / name
    repo.mkdir(parents=True)
    for f in files:
        shutil.copy(FIXTURES / f, repo / Path(f).name)
    (repo / ".git").mkdir()
    return repo


def bench(script: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def bench_module(name: str):
    """A script of ``bench/`` imported as a module (to call its functions with fakes)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


def test_real_repos_prints_the_table_and_the_findings(tmp_path):
    root = tmp_path / "repos"
    corpus(root, "one", ["linear/flatten_pool_mlp.py", "linear/flatten_pool_mlp_ok.py"])
    corpus(root, "two", ["conv/bn_after_widen.py"])
    (root / "notebooks-only").mkdir()
    r = bench("real_repos.py", "--root", str(root), "--jobs", "2", "--strict", "--profile")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert out.startswith("load average: ")
    rows: dict[str, list[str]] = {}
    for ln in out.splitlines():  # the first table (the profile's rows come later)
        if ln.split()[:1] in (["one"], ["two"], ["TOTAL"]):
            rows.setdefault(ln.split()[0], ln.split())
    assert rows["one"][1] == "2" and rows["two"][1] == "1" and rows["TOTAL"][1] == "3"
    assert int(rows["one"][2]) >= 1 and int(rows["two"][2]) >= 1  # the planted bugs
    assert "notebooks-only" not in out
    assert "x the target of 100 files/s; 0 file(s) cut by a budget" in out
    assert "one/flatten_pool_mlp.py:" in out  # the findings are listed
    assert "profile (in-process, --jobs 1)" in out


def test_real_repos_strict_fails_on_a_file_cut_by_a_budget(tmp_path, monkeypatch):
    real_repos = bench_module("real_repos")
    root = tmp_path / "repos"
    corpus(root, "one", ["linear/flatten_pool_mlp_ok.py"])
    cut = "warning: flatten_pool_mlp_ok.py: analysis incomplete: the step budget ran out\n"

    def fake_run(cmd, repo, jobs):
        return 0.5, 0.4, 0, "All checks passed!\n", cut

    monkeypatch.setattr(real_repos, "run_once", fake_run)
    assert real_repos.main(["--root", str(root), "--strict"]) == 1
    assert real_repos.main(["--root", str(root)]) == 0


def test_real_repos_against_another_build_alternates_and_lists_what_differs(tmp_path, monkeypatch, capsys):
    real_repos = bench_module("real_repos")
    root = tmp_path / "repos"
    corpus(root, "one", ["linear/flatten_pool_mlp_ok.py"])
    order = []

    def fake_run(cmd, repo, jobs):
        build = cmd[-1]
        order.append(build)
        found = "m.py:3:5: SHP101 x\n" if build == "old" else ""
        return (2.0 if build == "old" else 1.0), 0.5, 0, found, ""

    monkeypatch.setattr(real_repos, "run_once", fake_run)
    monkeypatch.setattr(real_repos, "warm_up", lambda cmd: None)
    assert real_repos.main(["--root", str(root), "--rounds", "4", "--cmd", "new", "--against", "old"]) == 0
    assert order == ["old", "new", "new", "old", "old", "new", "new", "old"]
    out = capsys.readouterr().out
    total = next(ln.split() for ln in out.split("against the other build")[1].splitlines() if ln.startswith("TOTAL"))
    assert total[1:] == ["2.00", "1.00", "0.50"]
    assert "findings and cuts that differ: 1" in out and "  - one/m.py:3:5: SHP101 x" in out


def test_vs_ruff_quick_form(tmp_path):
    if shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists():
        pytest.importorskip("ruff", reason="ruff is not installed")
    repo = corpus(tmp_path, "corpus", ["linear/flatten_pool_mlp_ok.py", "conv/bn_after_widen.py"])
    r = bench("vs_ruff.py", "--corpus", str(repo), "--rounds", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert out.startswith("load average: ") and "(2 files," in out
    lines = out.splitlines()
    head = lines.index(next(ln for ln in lines if ln.split()[:1] == ["round"]))
    assert [ln.split()[0] for ln in lines[head + 1 : head + 5]] == ["1", "2", "median", "min"]
    assert "median ratio" in out and "4x target" in out
    assert "shape-lint: 1 finding(s), 0 file(s) cut by a budget" in out


def test_cli_profile_splits_the_time(tmp_path):
    repo = corpus(tmp_path, "corpus", ["linear/flatten_pool_mlp_ok.py", "linear/flatten_pool_mlp.py"])
    r = bench("cli_profile.py", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    assert p["files"] == 2 and p["exit"] == 1
    assert p["core"] > 0 and p["python"] >= 0
    assert p["startup"] + p["discover"] + p["core"] + p["z3"] + p["python"] + p["output"] <= p["total"] * 1.01
