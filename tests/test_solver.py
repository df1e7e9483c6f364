"""The lazy Z3 bridge (shape_lint.solver.decide)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shape_lint import solver
from shape_lint.solver import decide

SAT = (
    "(declare-const a Int)(declare-const b Int)"
    "(assert (= (* a b) 120))(assert (> a 1))(assert (> b 1))"
)
UNSAT = "(declare-const n Int)(assert (> n 3))(assert (< n 2))"
# Fermat's n=3: unsatisfiable, but far beyond a tiny resource budget.
HARD = textwrap.dedent(
    """
    (declare-const x Int)(declare-const y Int)(declare-const z Int)
    (assert (> x 0))(assert (> y 0))(assert (> z 0))
    (assert (= (+ (* x x x) (* y y y)) (* z z z)))
    """
)


def test_sat_unsat_in_order():
    assert decide([SAT, UNSAT, SAT]) == ["sat", "unsat", "sat"]
    assert decide([]) == []


def test_shape_style_queries():
    # view(-1, 120) of a [B, 16, 5, 5] tensor: 16*5*5 = 400 is not a multiple of 120.
    div = (
        "(declare-const B Int)(declare-const k Int)"
        "(assert (> B 0))(assert (= (* B 400) (* k 120)))(assert (> k 0))"
    )
    no_div = "(declare-const B Int)(assert (> B 0))(assert (= (* B 400) (+ (* 120 B) 1)))"
    assert decide([div, no_div]) == ["sat", "unsat"]


def test_commands_in_scripts_are_tolerated():
    q = "(set-logic QF_LIA)(declare-const a Int)(assert (> a 3))(assert (< a 2))(check-sat)(exit)"
    assert decide([q]) == ["unsat"]


def test_declarations_are_local_to_each_query():
    qs = [
        "(declare-const a Int)(assert (= a 1))",
        "(declare-const a Bool)(assert a)",
        "(declare-fun a () Real)(assert (= a 0.5))",
        "(declare-const a Int)(assert (and (> a 0) (< a 0)))",
    ]
    assert decide(qs) == ["sat", "sat", "sat", "unsat"]
    assert decide(qs) == ["sat", "sat", "sat", "unsat"]


def test_assertions_do_not_leak_between_queries():
    assert decide(["(assert false)", "(assert true)"]) == ["unsat", "sat"]


def test_malformed_script_is_unknown_and_harmless():
    assert decide(["(assert (= x 1))", "(declare-const", SAT]) == ["unknown", "unknown", "sat"]


def test_rlimit_gives_unknown_per_query():
    assert decide([HARD, SAT, HARD, UNSAT], rlimit=20_000) == ["unknown", "sat", "unknown", "unsat"]
    # The limit is per query, not cumulative: many small queries under a small limit all succeed.
    assert decide([SAT] * 30, rlimit=200_000) == ["sat"] * 30


def test_timeout_gives_unknown():
    assert decide([HARD], rlimit=0, timeout_ms=50) == ["unknown"]


def test_one_context_and_solver_per_process():
    decide([SAT])
    first = (solver._state["ctx"], solver._state["solver"])
    decide([UNSAT, SAT])
    assert (solver._state["ctx"], solver._state["solver"]) == first
    assert len(solver._state["solver"].assertions()) == 0  # every push was popped


def test_bad_arguments():
    with pytest.raises(TypeError):
        decide(SAT)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        decide([b"(assert true)"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        decide([SAT], rlimit=-1)


def test_threads_share_the_solver_safely():
    results = {}

    def work(i):
        results[i] = decide([SAT, UNSAT] * 5)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == ["sat", "unsat"] * 5 for r in results.values()) and len(results) == 4


def test_z3_is_imported_lazily():
    code = textwrap.dedent(
        """
        import sys
        from shape_lint import solver
        assert "z3" not in sys.modules
        assert solver.decide([]) == []
        assert "z3" not in sys.modules
        assert solver.decide(["(assert true)"]) == ["sat"]
        assert "z3" in sys.modules
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@settings(max_examples=30, deadline=None)
@given(a=st.integers(1, 500), b=st.integers(-2000, 2000))
def test_linear_divisibility_matches_arithmetic(a, b):
    # exists integer x with a*x = b  <=>  a divides b
    q = f"(declare-const x Int)(assert (= (* {a} x) {b}))"
    assert decide([q]) == ["sat" if b % a == 0 else "unsat"]


# ------------------------------------------------------------------------------------------------
# The bridge: undecided checks of the core, decided by Z3 (solver.confirm, solver.check_source)

from pathlib import Path  # noqa: E402

from shape_lint import _core  # noqa: E402

# The README's example: N*N similarities never fit N*(N-1)//2 slots, whatever N is.
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
PAIRS_ROW = 9
POS = "(declare-fun n () Int)(assert (>= n 1))"


def und(smt, precondition, row=1, col=1, code="SHP103"):
    return {
        "code": code, "name": "reshape-size-mismatch", "message": f"m{row}", "row": row,
        "col": col, "end_row": row, "end_col": col + 1, "trace": [], "condition": None,
        "smt": smt, "precondition": precondition,
    }


def test_confirm_reports_only_what_fails_on_every_execution():
    proven = und(POS, "(= (* n n) (div (- (* n n) n) 2))", row=1)
    satisfiable = und(POS, "(= (* n n) (* 4 n))", row=2)  # n = 4 passes
    infeasible = und(POS + "(assert (< n 0))", "false", row=3)  # no execution reaches it
    got = solver.confirm([proven, satisfiable, infeasible])
    assert [f["row"] for f in got] == [1]
    assert set(got[0]) == set(proven) - {"smt", "precondition"}
    assert got[0]["message"] == "m1"


def test_confirm_one_finding_per_site_and_nothing_for_nothing():
    a = und(POS, "(< n 0)", row=4, col=2)
    b = und(POS, "(= n 0)", row=4, col=2)
    assert [f["row"] for f in solver.confirm([a, b])] == [4]
    assert solver.confirm([]) == []


def test_confirm_timeout_and_resource_limit_mean_silence():
    # context SAT, context ∧ precondition UNSAT (Fermat, n=3) but far beyond the limits
    hard_ctx = "".join(f"(declare-fun {v} () Int)(assert (>= {v} 1))" for v in "xyz")
    fermat = "(= (+ (* x x x) (* y y y)) (* z z z))"
    # the clock cut the query: nothing reported, and the file says it was not fully checked
    cut = solver.confirm([und(hard_ctx, fermat)], rlimit=0, timeout_ms=50)
    assert [f["code"] for f in cut] == ["SHP002"]
    assert "safety time limit" in cut[0]["message"] and cut[0]["row"] == 1
    # the deterministic resource limit: silence, and nothing to say (the same on every machine)
    assert solver.confirm([und(hard_ctx, fermat)], rlimit=20_000) == []


def test_confirm_query_budget_is_counted_and_reported():
    # three undecided checks that each need two queries; a budget of three queries tries one
    # whole check and half of another, and says what it left
    ctx = "(declare-fun n () Int)(assert (>= n 1))"
    checks = [und(ctx + f"(assert (>= n {k}))", "(< n 0)", row=k) for k in (1, 2, 3)]
    got = solver.confirm(checks, max_queries=3)
    assert [f["code"] for f in got] == ["SHP103", "SHP002"]
    assert "query budget (3 queries per file)" in got[-1]["message"]
    assert "2 undecided checks not tried" in got[-1]["message"]
    assert [f["row"] for f in solver.confirm(checks, max_queries=6)] == [1, 2, 3]


def test_confirm_file_budget_and_malformed_queries_mean_silence():
    proven = und(POS, "(< n 0)")
    # the safety net spent before the first query: nothing reported, and said so
    got = solver.confirm([proven], budget_ms=0)
    assert [f["code"] for f in got] == ["SHP002"] and "1 undecided check not tried" in got[0]["message"]
    assert solver.confirm([und(POS, "(< m 0)"), und("(declare-fun", "true", row=2)]) == []


def test_check_source_adds_what_z3_proves_and_the_switch_turns_it_off():
    findings, undecided = _core.check_source_undecided(PAIRS, "m.py")
    assert findings == [] and _core.check_source(PAIRS, "m.py") == []
    assert PAIRS_ROW in {u["row"] for u in undecided}
    got = solver.check_source(PAIRS, "m.py", {})
    assert [(f["row"], f["code"]) for f in got] == [(PAIRS_ROW, "SHP103")]
    assert "invalid for input of shape [B, T, T]" in got[0]["message"]
    assert "smt" not in got[0]
    assert solver.check_source(PAIRS, "m.py", {"solver": False}) == []
    # the core's own findings come first, sorted with Z3's
    bug = PAIRS + "\n\ndef demo():\n    return torch.zeros(2, 3) @ torch.zeros(4, 5)\n\n\ndemo()\n"
    got = solver.check_source(bug, "m.py", {"timeout_ms": 5000})
    assert [(f["row"], f["code"]) for f in got] == [(PAIRS_ROW, "SHP103"), (13, "SHP101")]


def _run_python(code):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
    return r.stdout


def test_without_z3_installed_the_bridge_is_silent():
    _run_python(
        f"""
        import sys
        sys.modules["z3"] = None  # `import z3` raises ImportError
        from shape_lint import solver
        assert solver.check_source({PAIRS!r}, "m.py", {{}}) == []
        assert solver.confirm([{und(POS, "(< n 0)")!r}]) == []
        print("ok")
        """
    )


def test_z3_is_not_imported_when_nothing_is_undecided():
    decided = "import torch\nx = torch.zeros(2, 3) @ torch.zeros(4, 5)\n"
    _run_python(
        f"""
        import sys
        from shape_lint import _core, solver
        for text in ("x = 1\\n", {decided!r}):
            assert _core.check_source_undecided(text, "m.py")[1] == []
            solver.check_source(text, "m.py", {{}})
        assert "z3" not in sys.modules
        assert solver.check_source({PAIRS!r}, "m.py", {{}})
        assert "z3" in sys.modules
        print("ok")
        """
    )


def _cli():
    exe = Path(sys.executable).with_name("shape-lint")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "shape_lint.cli"]


def test_cli_and_flake8_use_the_bridge(tmp_path):
    f = tmp_path / "pairs.py"
    f.write_text(PAIRS)

    def run(*cmd):
        return subprocess.run(list(cmd), cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)

    on = run(*_cli(), "check", "--isolated", "pairs.py")
    assert on.returncode == 1 and f"pairs.py:{PAIRS_ROW}:" in on.stdout and "SHP103" in on.stdout
    off = run(*_cli(), "check", "--isolated", "--no-solver", "pairs.py")
    assert off.returncode == 0, off.stdout + off.stderr
    flake8 = [sys.executable, "-m", "flake8", "--select=SHP", "--isolated"]
    on = run(*flake8, "pairs.py")
    assert f"pairs.py:{PAIRS_ROW}:" in on.stdout and "SHP103" in on.stdout, on.stdout + on.stderr
    off = run(*flake8, "--shp-no-solver", "pairs.py")
    assert off.returncode == 0 and off.stdout == "", off.stdout + off.stderr
    # `solver = false` in [tool.shape-lint] switches both off
    (tmp_path / "pyproject.toml").write_text("[tool.shape-lint]\nsolver = false\n")
    assert run(*_cli(), "check", "pairs.py").returncode == 0
    assert run(*flake8, "pairs.py").stdout == ""


AGAIN = """import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self, h, o):
        super().__init__()
        self.norm = nn.LayerNorm(h)
        self.fc = nn.Linear(h, o)

    def forward(self, x):
        b, t, c = x.shape
        y = self.norm(x)
        z = self.norm(x)
        return self.fc(z) + self.fc(y)
"""


def test_a_precondition_left_undecided_is_decided_when_checked_again_on_its_path():
    """`c == h` is undecided at the first LayerNorm (the core has no value for either), and the
    path goes on with the executions where it held: the second LayerNorm and the Linears need
    the same, and the core decides them (before, each was undecided again, and hiera's were
    exported to Z3, which took a tenth of a second to import)."""
    _, stats = _core.check_source_stats(AGAIN, "m.py", {"check_sites": True})[-2:]
    sites = {(row, col): (holds, undecided) for row, col, holds, _violated, undecided, _exported in stats["check_sites"]}
    assert sites[(13, 13)] == (0, 1)
    assert sites[(14, 13)] == (1, 0)
    assert sites[(15, 29)] == (1, 0)
