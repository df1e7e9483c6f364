"""The lazy Z3 bridge for constraint sets that the Rust core could not decide itself.

``decide(queries)`` takes SMT-LIB2 scripts (declarations + assertions; ``check-sat``, ``set-logic``
and the like may be present and are ignored) and answers ``"sat"``, ``"unsat"`` or ``"unknown"`` for
each. ``unknown`` means undecided: a budget ran out or the script could not be parsed. It must
never become a reported error by itself.

Z3 costs 150-500 ms to import, so it is imported on the first call only, never at module import.
One ``z3.Context`` and ``Solver`` serve the whole process (re-created after a ``fork``); each
query runs between ``push`` and ``pop`` with a deterministic ``rlimit`` (the same answer on a slow
CI machine and a fast laptop) and a wall-clock ``timeout`` as a safety net.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Sequence

__all__ = ["DEFAULT_RLIMIT", "DEFAULT_TIMEOUT_MS", "decide"]

#: Z3 resource units per query (about a second of work on a typical machine).
DEFAULT_RLIMIT = 2_000_000
DEFAULT_TIMEOUT_MS = 1_000

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _solver() -> tuple[Any, Any, Any]:
    """(z3 module, context, solver) of this process; created on first use."""
    if _state.get("pid") != os.getpid():
        import z3

        ctx = z3.Context()
        _state.update(pid=os.getpid(), z3=z3, ctx=ctx, solver=z3.Solver(ctx=ctx))
    return _state["z3"], _state["ctx"], _state["solver"]


def decide(
    queries: Sequence[str],
    rlimit: int = DEFAULT_RLIMIT,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> list[str]:
    """Decide each SMT-LIB2 script: ``"sat"``, ``"unsat"`` or ``"unknown"``, in order.

    ``rlimit`` (Z3 resource units) and ``timeout_ms`` apply to each query separately; 0 means
    no limit. Declarations are local to each query.
    """
    if isinstance(queries, str):
        raise TypeError("decide() takes a list of SMT-LIB2 scripts, not one string")
    for q in queries:
        if not isinstance(q, str):
            raise TypeError(f"SMT-LIB2 query must be str, not {type(q).__name__}")
    if rlimit < 0 or timeout_ms < 0:
        raise ValueError("rlimit and timeout_ms must be >= 0")
    if not queries:
        return []
    with _lock:
        z3, ctx, solver = _solver()
        solver.set("rlimit", int(rlimit))
        solver.set("timeout", int(timeout_ms))
        answers = []
        for script in queries:
            solver.push()
            try:
                # parse_smt2_string gives each script its own declarations (Solver.from_string
                # would keep them across queries and reject a second `declare-const a`).
                solver.add(z3.parse_smt2_string(script, ctx=ctx))
                result = solver.check()
            except z3.Z3Exception:
                answers.append("unknown")
            else:
                answers.append(
                    "sat" if result == z3.sat else "unsat" if result == z3.unsat else "unknown"
                )
            finally:
                solver.pop()
        return answers
