"""The decision statistics: the core's check counters (``_core.check_source_stats``) and
``bench/decisions.py``, which splits the check sites into decided by the core, by Z3, undecided."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from shape_lint import _core

REPO = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("decisions", REPO / "bench" / "decisions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PAIRS = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class PairHead(nn.Module):
        def forward(self, pts):
            B, N, D = pts.shape
            sim = pts @ pts.transpose(1, 2)
            return sim.reshape(B, N * (N - 1) // 2)
    """
)
BUG = "import torch\n\nx = torch.zeros(2, 3) @ torch.zeros(4, 5)\ny = torch.zeros(2, 3) + 1\n"
# inside a `try` with a handler nothing is reported, so nothing is exported to Z3
GUARDED = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class M(nn.Module):
        def forward(self, x):
            B, N = x.shape
            try:
                return x.view(B, N * (N - 1) // 2)
            except RuntimeError:
                return x
    """
)


def test_the_core_counts_its_checks_by_verdict():
    _, undecided, s = _core.check_source_stats(PAIRS, "m.py", {"check_sites": True})
    assert s["undecided"] >= s["exported"] >= 1 and s["holds"] >= 1
    assert [(u["row"], u["col"]) for u in undecided] == [(9, 16)]
    sites = {(r, c): (h, v, u, e) for r, c, h, v, u, e in s["check_sites"]}
    assert sites[(9, 16)][2:] == (1, 1) and sites[(8, 15)][0] >= 1 and sites[(8, 15)][1:] == (0, 0, 0)
    findings, _, s = _core.check_source_stats(BUG, "m.py")
    assert [f["row"] for f in findings] == [3] and s["violated"] >= 1
    assert s["check_sites"] == []  # only when asked for


def test_counting_sites_changes_no_finding():
    for p in sorted((REPO / "tests" / "fixtures" / "shapeops").glob("*.py"))[:40]:
        text = p.read_text(encoding="utf-8")
        on = _core.check_source_stats(text, str(p), {"check_sites": True})
        off = _core.check_source_stats(text, str(p))
        assert on[:2] == off[:2] == _core.check_source_undecided(text, str(p)), p
        assert {k: v for k, v in on[2].items() if k != "check_sites"} == {
            k: v for k, v in off[2].items() if k != "check_sites"
        }


def test_the_bench_splits_sites_between_core_z3_and_undecided(tmp_path):
    pytest.importorskip("z3")
    bench = _bench()
    for name, text in (("pairs.py", PAIRS), ("bug.py", BUG), ("guarded.py", GUARDED)):
        (tmp_path / name).write_text(text)
    pairs = bench.file_stats(tmp_path / "pairs.py")
    assert (pairs["site_z3"], pairs["site_open"], pairs["q_fails"]) == (1, 0, 1)
    assert pairs["site_core"] >= 2
    bug = bench.file_stats(tmp_path / "bug.py")
    assert bug["site_z3"] == bug["site_open"] == 0 and bug["site_core"] >= 1 and bug["violated"] >= 1
    guarded = bench.file_stats(tmp_path / "guarded.py")
    assert guarded["site_open"] == 1 and guarded["site_z3"] == 0
    assert guarded["undecided"] == 1 and guarded["exported"] == 0
    total = bench.corpus_stats(bench.corpus_files(tmp_path))
    assert total["files"] == 3
    assert total["site_core"] + total["site_z3"] + total["site_open"] == sum(
        pairs[k] + bug[k] + guarded[k] for k in ("site_core", "site_z3", "site_open"))


def test_the_bench_counts_the_may_fail_queries():
    pytest.importorskip("z3")
    bench = _bench()
    fixtures = REPO / "tests" / "fixtures" / "may_fail"
    # an unguarded head split: Z3 finds a counterexample, and it is reported
    bug = bench.mayfail_stats(fixtures / "head_split_option.py")
    assert bug["mf_z3_sat"] == 1 and bug["mf_q_sat"] >= 1 and bug["mf_reported"] == 1
    # the guarded twin: the guard is a fact of the path; whatever reaches Z3 is UNSAT
    ok = bench.mayfail_stats(fixtures / "head_split_option_ok.py")
    assert ok["mf_z3_sat"] == ok["mf_q_sat"] == ok["mf_reported"] == 0
    assert ok["mf_core"] + ok["mf_z3_unsat"] >= 1 and ok["mf_open"] == 0
    # no free parameter: the run's checks are the core's, nothing is asked
    plain = bench.mayfail_stats(REPO / "tests" / "fixtures" / "may_fail" / "mha_ctor_ok.py")
    assert plain["mf_q_sat"] == plain["mf_reported"] == 0
    total = bench.corpus_stats([fixtures / "head_split_option.py", fixtures / "head_split_option_ok.py"])
    assert total["mf_reported"] == 1 and total["mf_z3_sat"] == 1
