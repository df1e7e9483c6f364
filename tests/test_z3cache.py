"""The cache of Z3 answers (``shape_lint.z3cache``, around ``solver._solve``).

Z3 calls are counted where they enter Z3 (``z3.Solver.check``), never by timing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shape_lint import _core, cache, solver, z3cache

z3 = pytest.importorskip("z3")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

# The README's example: N*N similarities never fit N*(N-1)//2 slots (Z3 proves it).
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
# Fermat's n=3: unsatisfiable, but far beyond a small resource limit.
HARD = (
    "(declare-fun x () Int)(declare-fun y () Int)(declare-fun z () Int)"
    "(assert (>= x 1))(assert (>= y 1))(assert (>= z 1))"
)
FERMAT = "(= (+ (* x x x) (* y y y)) (* z z z))"


@pytest.fixture
def z3_calls(monkeypatch):
    """The queries that reach Z3 (each a call of ``Solver.check``), with a fresh memo."""
    calls = []
    real = z3.Solver.check

    def spy(self, *args):
        calls.append(self)
        return real(self, *args)

    monkeypatch.setattr(z3.Solver, "check", spy)
    z3cache.forget()
    cache.forget_stamps()
    yield calls
    z3cache.forget()
    cache.forget_stamps()


def make_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (root / "pairs.py").write_text(PAIRS)
    return root


def check(path: Path):
    return solver.check_source(path.read_text(), str(path), {})


def test_a_second_run_of_an_unchanged_file_makes_no_z3_call(tmp_path, z3_calls):
    root = make_project(tmp_path / "p")
    first = check(root / "pairs.py")
    assert [(f["row"], f["code"]) for f in first] == [(9, "SHP103")]
    # the precondition against the path, then the path alone; then the queries of the input
    # contract the finding cites (inside a model: `summary.cite`)
    calls = len(z3_calls)
    assert calls >= 2
    shards = list((root / cache.CACHE_DIR / "z3" / "v1").glob("*.json"))
    assert shards and all(isinstance(json.loads(s.read_text()), dict) for s in shards)
    # a new process (no memo), and the results cache cannot answer: another project file
    # changed the project stamp, so the file is analysed again; its queries are not new
    z3cache.forget()
    (root / "other.py").write_text("x = 1\n")
    cache.forget_stamps()
    assert check(root / "pairs.py") == first
    assert len(z3_calls) == calls


def test_a_run_answered_from_the_cache_does_not_import_z3(tmp_path):
    root = make_project(tmp_path / "p")
    code = textwrap.dedent(
        f"""
        import shutil, sys
        from pathlib import Path
        from shape_lint import solver
        path = Path({str(root / "pairs.py")!r})
        rows = [f["row"] for f in solver.check_source(path.read_text(), str(path), {{}})]
        if sys.argv[1] == "warm":
            assert "z3" not in sys.modules, "z3 imported"
        print(rows, "ok")
        """
    )

    def run(mode):
        r = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
        return r.stdout

    assert run("cold") == "[9] ok\n"
    shutil.rmtree(root / cache.CACHE_DIR / "v1")  # the results cache: gone; Z3's answers stay
    assert run("warm") == "[9] ok\n"


def test_the_key_holds_what_changes_the_answer(monkeypatch):
    k = z3cache.key("(assert true)", model=False, rlimit=10)
    assert k == z3cache.key("(assert true)", model=False, rlimit=10)
    assert k != z3cache.key("(assert false)", model=False, rlimit=10)
    assert k != z3cache.key("(assert true)", model=True, rlimit=10)
    assert k != z3cache.key("(assert true)", model=False, rlimit=11)
    monkeypatch.setattr(z3cache, "_version", ["0.0.1"])
    assert k != z3cache.key("(assert true)", model=False, rlimit=10)


def _rlimit_spent() -> int:
    return int(solver._state["solver"].statistics().get_key_value("rlimit count"))


def test_a_query_that_hits_its_limit_costs_the_cap_once(z3_calls):
    cap = 20_000
    solver.decide(["(assert true)"])  # Z3 loaded
    before, calls = _rlimit_spent(), len(z3_calls)
    assert solver._solve(HARD + f"(assert {FERMAT})", rlimit=cap, timeout_ms=0) == {"answer": "unknown"}
    spent = _rlimit_spent() - before
    assert len(z3_calls) == calls + 1 and cap <= spent <= cap * 1.05, spent
    # the resource limit is deterministic: the unknown is kept, and asking again is free
    assert solver._solve(HARD + f"(assert {FERMAT})", rlimit=cap, timeout_ms=0) == {"answer": "unknown"}
    assert len(z3_calls) == calls + 1 and _rlimit_spent() - before == spent


def test_a_query_that_spends_its_limit_slowly_is_no_clock_cut(z3_calls, monkeypatch):
    # Z3 says "canceled" for either limit. A query that spent its resource limit ended there on
    # any machine, however long it took: here, as on a loaded machine, longer than half its
    # timeout (a clock that moves 200 ms per reading; the real query takes a few ms)
    solver.decide(["(assert true)"])
    ticks = iter(range(0, 10_000_000, 200))
    monkeypatch.setattr(solver.time, "monotonic", lambda: next(ticks) / 1000)
    answer = solver._solve(HARD + "(assert (> x 7))" + f"(assert {FERMAT})", rlimit=20_000, timeout_ms=300)
    assert answer == {"answer": "unknown"}


def test_an_unknown_from_the_wall_clock_is_never_kept(z3_calls):
    for _ in range(2):
        # (marked: the clock decided, and the caller says the file was not fully checked)
        assert solver._solve(HARD + f"(assert {FERMAT})", rlimit=0, timeout_ms=30) == {"answer": "unknown", "clock": True}
    assert len(z3_calls) == 2


def test_a_sat_whose_model_breaks_the_script_is_never_kept(z3_calls, monkeypatch):
    # Z3 may say "sat" after a limit fired inside the check (its answers after a cancel are not
    # sanctioned; seen once on a loaded CI machine for FERMAT with a 30 ms timeout). Here the
    # check says so outright: the answer is a clock unknown, not cached, asked again next time
    real = z3.Solver.check  # (the fixture's spy: it counts the call)

    def says_sat(self, *args):
        real(self, *args)
        return z3.sat

    monkeypatch.setattr(z3.Solver, "check", says_sat)
    for model in (False, True, False):
        assert solver._solve(HARD + f"(assert {FERMAT})", rlimit=0, timeout_ms=30, model=model) == {
            "answer": "unknown", "clock": True}
    assert len(z3_calls) == 3
    # a true "sat" keeps its model, checked against the script
    got = solver._solve(HARD + "(assert (= (+ x y) z))", rlimit=0, timeout_ms=0, model=True)
    assert got["answer"] == "sat" and got["model"]["x"] + got["model"]["y"] == got["model"]["z"]


def test_checks_that_hit_their_limit_cost_the_cap_each_and_nothing_on_the_next_run(z3_calls):
    cap = 20_000
    checks = [
        {"code": "SHP103", "name": "n", "message": "m", "row": r, "col": 1, "end_row": r,
         "end_col": 2, "trace": [], "condition": None, "smt": HARD + f"(assert (>= x {r}))",
         "precondition": FERMAT}
        for r in range(1, 6)
    ]
    solver.decide(["(assert true)"])
    before = _rlimit_spent()
    assert solver.confirm(checks, rlimit=cap, timeout_ms=0, budget_ms=60_000) == []
    assert len(z3_calls) == 1 + 5  # one query per check: the first is unknown, so no second
    assert _rlimit_spent() - before <= 5 * cap * 1.05
    assert solver.confirm(checks, rlimit=cap, timeout_ms=0, budget_ms=60_000) == []
    assert len(z3_calls) == 6


def test_models_are_cached_with_their_answer(z3_calls):
    q = "(declare-fun n () Int)(assert (> n 6))(assert (= (mod n 5) 0))"
    got = solver._solve(q, model=True)
    assert got["answer"] == "sat" and got["model"]["n"] > 6 and got["model"]["n"] % 5 == 0
    assert solver._solve(q) == {"answer": "sat"}  # no model asked: another key
    assert len(z3_calls) == 2
    assert solver._solve(q, model=True) == got and len(z3_calls) == 2


def test_shards_are_bounded_and_a_broken_cache_only_costs_time(tmp_path, monkeypatch, z3_calls):
    root = make_project(tmp_path / "p")
    monkeypatch.setattr(z3cache, "SHARD_MAX", 3)
    with z3cache.project(str(root / "pairs.py")):
        for i in range(10):
            z3cache.put("ab" + f"{i:062d}", {"answer": "sat"})
    shard = root / cache.CACHE_DIR / "z3" / "v1" / "ab.json"
    assert list(json.loads(shard.read_text())) == ["ab" + f"{i:062d}" for i in (7, 8, 9)]
    # a corrupt shard, and a cache folder that is a file: the answers are the same
    z3cache.forget()
    for s in shard.parent.glob("*.json"):
        s.write_text("{not json")
    assert [f["row"] for f in check(root / "pairs.py")] == [9]
    shutil.rmtree(root / cache.CACHE_DIR)
    (root / cache.CACHE_DIR).write_text("not a folder")
    z3cache.forget()
    assert [f["row"] for f in check(root / "pairs.py")] == [9]


def test_concurrent_writers_leave_valid_shards(tmp_path):
    root = make_project(tmp_path / "p")
    code = textwrap.dedent(
        f"""
        import sys
        from shape_lint import z3cache
        with z3cache.project({str(root / "pairs.py")!r}):
            for i in range(300):
                z3cache.put(f"{{i % 4:02x}}" + sys.argv[1] * 8 + f"{{i:054d}}", {{"answer": "unsat"}})
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, w]) for w in "ab"]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    shards = sorted((root / cache.CACHE_DIR / "z3" / "v1").iterdir())
    assert [s.name for s in shards] == ["00.json", "01.json", "02.json", "03.json"]  # no .tmp left
    for s in shards:
        entries = json.loads(s.read_text())
        assert 0 < len(entries) <= z3cache.SHARD_MAX


# ------------------------------------------------------------------------------------------------
# The cache never changes an answer


# The queries of the SHP902 run (`free_params`): it exports every undecided check, where the
# default run exports only those no values of the symbols pass (`shape::smt::Query::witness`:
# most of the fixtures' queries are answered SAT by the core itself, and only 3 files export one).
QUERY_OPTIONS = {"free_params": True}
#: enough files for both answers and confirmed findings, few enough for the permutations below
MAX_FILES = 16


def _with_undecided() -> list[Path]:
    out = []
    for p in sorted(FIXTURES.rglob("*.py")):
        if "stubs" in p.parts:
            continue
        if _core.check_source_undecided(p.read_text(encoding="utf-8"), str(p), QUERY_OPTIONS)[1]:
            out.append(p)
        if len(out) == MAX_FILES:
            break
    return out


UNDECIDED = _with_undecided()


def _answers(paths, store: Path | None):
    """Per file: Z3's answers to each query of each undecided check, and the findings."""
    out = {}
    for p in paths:
        text = p.read_text(encoding="utf-8")
        # generous limits: an answer the wall clock cuts short is nobody's answer
        with z3cache.project(str(store) if store else "", enabled=store is not None):
            _, undecided = _core.check_source_undecided(text, str(p), QUERY_OPTIONS)
            answers = [
                solver._solve(q, rlimit=solver.CHECK_RLIMIT, timeout_ms=30_000)["answer"]
                for u in undecided
                for q in (f"{u['smt']}(assert {u['precondition']})\n", u["smt"])
            ]
            found = solver.confirm(undecided, timeout_ms=30_000, budget_ms=300_000)
        out[p.name] = (answers, found)
    return out


def test_the_fixtures_have_undecided_checks():
    assert len(UNDECIDED) >= 10


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(UNDECIDED), warm=st.lists(st.booleans(), min_size=len(UNDECIDED),
                                                       max_size=len(UNDECIDED)))
def test_cached_and_uncached_runs_give_the_same_findings(tmp_path_factory, monkeypatch, order, warm):
    root = make_project(tmp_path_factory.mktemp("p"))
    store = root / "pairs.py"
    # uncached: the cache neither answers nor keeps anything
    with monkeypatch.context() as m:
        m.setattr(z3cache, "get", lambda k: None)
        m.setattr(z3cache, "put", lambda k, a: None)
        plain = _answers(order, None)
    answers = [a for ans, _ in plain.values() for a in ans]
    assert answers.count("sat") >= 10 and answers.count("unsat") >= 2
    assert sum(len(found) for _, found in plain.values()) >= 2
    # partly warm (some files' answers on disk, in another order), then from disk alone
    z3cache.forget()
    _answers([p for p, w in zip(order, warm) if w], store)
    z3cache.forget()
    assert _answers(order, store) == plain
    z3cache.forget()
    with monkeypatch.context() as m:  # now every answer comes from disk

        def no_z3(*args, **kwargs):
            raise AssertionError("Z3 asked")

        m.setattr(solver, "_z3_solve", no_z3)
        assert _answers(list(reversed(order)), store) == plain
    z3cache.forget()
