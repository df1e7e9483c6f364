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
