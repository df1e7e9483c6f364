"""The lazy Z3 bridge for constraint sets that the Rust core could not decide itself.

``check_source(source, filename, options)`` is what the flake8 plugin and the CLI call: the
core's findings, plus the undecided checks that Z3 proves (``confirm``). The core exports a
check only where a violation would be reported (an untainted path, outside a ``try`` with
handlers, at a site not already reported, where none of the values the core tries satisfies the
context and the precondition: ``shape::smt::witness``), as an SMT-LIB context (declarations, symbol ranges,
solved equalities, path condition) and a precondition term. ``confirm`` reports it when the
context is SAT and context ∧ precondition is UNSAT: the path is feasible and every execution of
it fails. Unknown, a timeout, a spent budget or Z3 not installed mean silence. When nothing is
undecided, Z3 is never imported.

Every Z3 query goes through one function, ``_solve(script, *, model, rlimit, timeout_ms)``: an
SMT-LIB2 script (declarations + assertions; ``check-sat``, ``set-logic`` and the like may be
present and are ignored) answered ``{"answer": "sat" | "unsat" | "unknown"}``, with
``"model": {symbol: int}`` when a model was asked for and the answer is ``sat``. ``unknown``
means undecided: a limit ran out or the script could not be parsed. It must never become a
reported error by itself. ``_solve`` is where the answers are cached (``shape_lint.z3cache``:
in memory, and on disk in the project's ``.shape_lint_cache/z3/`` while ``check_source`` runs;
a run whose every query is cached does not even import Z3). New queries (counterexamples, ...)
must go through it too. ``decide(queries)`` answers a list of scripts with ``_solve``.

Z3 costs 150-500 ms to import, so it is imported on the first call only, never at module import.
One ``z3.Context`` and ``Solver`` serve the whole process (re-created after a ``fork``); each
query runs between ``push`` and ``pop`` with a deterministic ``rlimit`` (the same answer on a slow
CI machine and a fast laptop) and a wall-clock ``timeout`` as a safety net. A query that asks
for a model gets a fresh context and solver: a model depends on what the solver saw before.
"""

from __future__ import annotations

import os
import threading
import time

TYPE_CHECKING = False  # (typing costs 5 ms at start-up: for the checker only)
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

__all__ = [
    "CHECK_RLIMIT",
    "CHECK_TIMEOUT_MS",
    "DEFAULT_RLIMIT",
    "DEFAULT_TIMEOUT_MS",
    "FILE_BUDGET_MS",
    "FILE_MAX_QUERIES",
    "Findings",
    "analyze",
    "check_source",
    "confirm",
    "decide",
]

#: Z3 resource units per query (about a second of work on a typical machine).
DEFAULT_RLIMIT = 2_000_000
DEFAULT_TIMEOUT_MS = 1_000

#: Per query of :func:`confirm` (two queries per check): a deterministic resource limit, and a
#: wall-clock timeout as a safety net far above the time the limit takes (on an idle machine,
#: the queries that spend all 400k units take 140 to 180 ms).
CHECK_RLIMIT = 400_000
CHECK_TIMEOUT_MS = 1_000
#: The budget of :func:`confirm` for one file: a deterministic number of queries, and a
#: wall-clock safety net. Checks left when either is spent are silent, and the file gets the
#: analysis-incomplete notice (``SHP002``), as does a query the safety net cut.
FILE_MAX_QUERIES = 64
FILE_BUDGET_MS = 10_000

class Findings(list):  # type: ignore[type-arg]
    """A file's findings (a plain list of finding dicts) that also carries the parser's syntax
    errors of the same core run (``_core.check_source_parsed``): ``syntax_errors`` is ``None``
    when they are not known (the findings came from the results cache, or without the
    solver), and then whoever needs them parses the file (``_core.syntax_errors``)."""

    syntax_errors: list[tuple[str, int, int, int, int]] | None = None


#: Keys of an undecided check that a finding does not have.
_QUERY_KEYS = ("smt", "precondition", "params", "free")

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _solver() -> tuple[Any, Any, Any]:
    """(z3 module, context, solver) of this process; created on first use."""
    if _state.get("pid") != os.getpid():
        import z3

        ctx = z3.Context()
        _state.update(pid=os.getpid(), z3=z3, ctx=ctx, solver=z3.Solver(ctx=ctx))
    return _state["z3"], _state["ctx"], _state["solver"]


def _solve(
    script: str,
    *,
    model: bool = False,
    rlimit: int = DEFAULT_RLIMIT,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> dict[str, Any]:
    """Decide one SMT-LIB2 script: the one door through which every Z3 query of shape-lint goes.

    Returns ``{"answer": "sat" | "unsat" | "unknown"}``; with ``model=True`` and a ``sat``
    answer also ``"model": {symbol: int}`` (the integer constants of Z3's model; other sorts
    are left out). ``rlimit`` (Z3 resource units, deterministic) and ``timeout_ms`` (wall clock,
    a safety net) bound this query alone; 0 means no limit. Declarations are local to the
    script; ``check-sat``, ``set-logic`` and the like are ignored. ``unknown`` (a limit, a
    script Z3 cannot parse, Z3 not installed) must never become a reported error by itself.

    Answers are cached by ``z3cache.key(script, model=..., rlimit=...)``: in memory for the
    process, and on disk in the project's ``.shape_lint_cache/z3/`` while ``check_source`` runs
    for a file of a project. An ``unknown`` from the wall-clock timeout is not cached. The
    returned dict is shared with the cache: do not change it.
    """
    if not isinstance(script, str):
        raise TypeError(f"SMT-LIB2 query must be str, not {type(script).__name__}")
    if rlimit < 0 or timeout_ms < 0:
        raise ValueError("rlimit and timeout_ms must be >= 0")
    from . import z3cache

    k = z3cache.key(script, model=model, rlimit=rlimit)
    if k is None:  # Z3 is not installed
        return {"answer": "unknown"}
    got = z3cache.get(k)
    if got is not None:
        return got
    answer, deterministic = _z3_solve(script, model=model, rlimit=rlimit, timeout_ms=timeout_ms)
    if deterministic:
        z3cache.put(k, answer)
    return answer


def _units(solver: Any) -> int:
    """The Z3 resource units the solver's context spent so far (its ``rlimit count``)."""
    stats = solver.statistics()
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0


def _trusted_model(z3: Any, solver: Any, assertions: Any) -> Any:
    """The model of a ``sat`` answer if it makes every assertion true, else None."""
    try:
        m = solver.model()
        return m if all(z3.is_true(m.eval(a, model_completion=True)) for a in assertions) else None
    except z3.Z3Exception:
        return None


def _z3_solve(script: str, *, model: bool, rlimit: int, timeout_ms: int) -> tuple[dict[str, Any], bool]:
    """Ask Z3 (no cache): the answer, and whether asking again gives the same one (not an
    ``unknown`` that the wall-clock timeout, or a missing Z3, caused)."""
    with _lock:
        try:
            z3, ctx, solver = _solver()
        except ImportError:
            return {"answer": "unknown"}, False
        if model:
            # a model depends on what the solver and its context saw before: a fresh pair (5 ms)
            # gives the same model to the same script in every process, whatever ran there first
            ctx = z3.Context()
            solver = z3.Solver(ctx=ctx)
        solver.set("rlimit", int(rlimit))
        solver.set("timeout", int(timeout_ms))
        solver.push()
        units0 = _units(solver)
        t0 = time.monotonic()
        try:
            # parse_smt2_string gives each script its own declarations (Solver.from_string
            # would keep them across queries and reject a second `declare-const a`).
            assertions = z3.parse_smt2_string(script, ctx=ctx)
            solver.add(assertions)
            result = solver.check()
            if result == z3.sat:
                m = _trusted_model(z3, solver, assertions)
                if m is None:
                    # a limit that fired inside the check can leave a "sat" whose model breaks
                    # the script (Z3's answers after a cancel are not sanctioned): never kept
                    return {"answer": "unknown", "clock": True}, False
                out: dict[str, Any] = {"answer": "sat"}
                if model:
                    out["model"] = {
                        d.name(): m[d].as_long()
                        for d in m.decls()
                        if d.arity() == 0 and z3.is_int_value(m[d])
                    }
                return out, True
            if result == z3.unsat:
                return {"answer": "unsat"}, True
            reason = str(solver.reason_unknown())
            spent_ms = (time.monotonic() - t0) * 1000
            # (Z3 says "canceled" for both limits: the resource count tells them apart; a query
            # that spent its resource limit ended the same way on any machine)
            spent_units = rlimit > 0 and _units(solver) - units0 >= rlimit
            timed_out = not spent_units and ("timeout" in reason or (timeout_ms > 0 and spent_ms >= timeout_ms / 2))
            if timed_out:  # the clock decided: the caller may say the check was not finished
                return {"answer": "unknown", "clock": True}, False
            return {"answer": "unknown"}, True
        except z3.Z3Exception:
            return {"answer": "unknown"}, True  # a script Z3 cannot parse stays one
        finally:
            solver.pop()


def decide(
    queries: Sequence[str],
    rlimit: int = DEFAULT_RLIMIT,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> list[str]:
    """Decide each SMT-LIB2 script: ``"sat"``, ``"unsat"`` or ``"unknown"``, in order
    (:func:`_solve` for each).

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
    return [_solve(q, rlimit=rlimit, timeout_ms=timeout_ms)["answer"] for q in queries]


def confirm(
    undecided: Sequence[Mapping[str, Any]],
    *,
    rlimit: int = CHECK_RLIMIT,
    timeout_ms: int = CHECK_TIMEOUT_MS,
    budget_ms: int = FILE_BUDGET_MS,
    max_queries: int = FILE_MAX_QUERIES,
) -> list[dict[str, Any]]:
    """The undecided checks that fail on every execution of their path, as findings.

    Each item is an undecided check of ``_core.check_source_undecided``. It becomes a finding
    (the item without its ``smt`` and ``precondition`` keys) when ``smt`` is SAT and ``smt`` plus
    ``(assert precondition)`` is UNSAT. ``rlimit`` and ``timeout_ms`` apply to each query,
    ``max_queries`` and ``budget_ms`` to the whole call; one finding per site. When a budget or
    the clock left a check undecided, the list ends with the ``SHP002`` notice. Without Z3
    installed: ``[]``.
    """
    if not undecided:
        return []
    from . import z3cache

    if z3cache.z3_version() is None:  # Z3 is not installed
        return []
    deadline = time.monotonic() + budget_ms / 1000.0
    out: list[dict[str, Any]] = []
    done: set[tuple[int, int]] = set()
    queries = 0
    cut: str | None = None  # which budget left checks untried
    untried = 0

    def ask(script: str) -> dict[str, Any] | None:
        nonlocal queries, cut
        left_ms = int((deadline - time.monotonic()) * 1000)
        if queries >= max_queries:
            cut = cut or f"the solver's query budget ({max_queries} queries per file) ran out"
            return None
        if left_ms <= 0:
            cut = cut or f"the solver's safety time limit ({budget_ms} ms per file) was reached"
            return None
        queries += 1
        per = max(1, min(timeout_ms, left_ms)) if timeout_ms else left_ms
        got = _solve(script, rlimit=rlimit, timeout_ms=per)
        if got.get("clock"):
            cut = cut or f"a solver query reached its safety time limit ({per} ms)"
        return got

    for u in undecided:
        site = (int(u["row"]), int(u["col"]))
        if site in done:
            continue
        context = str(u["smt"])
        # every execution fails: the precondition cannot hold on the path ...
        failing = ask(f"{context}(assert {u['precondition']})\n")
        if failing is None:
            untried += 1
            continue
        if failing["answer"] != "unsat":
            continue
        # ... and the path is feasible (else the UNSAT above says nothing)
        feasible = ask(context)
        if feasible is None:
            untried += 1
            continue
        if feasible["answer"] != "sat":
            continue
        done.add(site)
        out.append({k: v for k, v in u.items() if k not in _QUERY_KEYS})
    if cut is not None:
        what = f"; {untried} undecided check{'s' if untried != 1 else ''} not tried" if untried else ""
        out.append(_incomplete(f"analysis incomplete: {cut}{what}"))
    return out


def _incomplete(message: str) -> dict[str, Any]:
    """The analysis-incomplete notice (``SHP002``) at line 1, as the core gives it."""
    return {
        "code": "SHP002", "name": "analysis-incomplete", "message": message,
        "row": 1, "col": 1, "end_row": 1, "end_col": 1,
        "trace": [], "origins": [], "condition": None, "related": [], "fix": None,
    }


def check_source(source: str, filename: str, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The core's findings for one file plus the undecided checks Z3 proves (``confirm``).

    ``options`` are ``_core.check_source``'s, plus ``solver`` (default ``True``): ``False``
    runs the core alone, and ``cache`` (default ``True``): ``False`` skips the results cache
    (``shape_lint.cache``). Findings come sorted by position.
    """
    if options.get("cache", True):
        from . import cache, z3cache

        opts = {k: v for k, v in options.items() if k != "cache"}

        def run() -> list[dict[str, Any]]:
            with z3cache.project(filename):
                # the core keeps the results of the project's scripts in the same cache, for
                # the other workers and later runs (not part of this entry's key)
                return _check_source(source, filename, {**opts, "script_cache": cache.script_salt()})

        return cache.cached(source, filename, opts, run)
    return _check_source(source, filename, options)


def _check_source(source: str, filename: str, options: Mapping[str, Any]) -> list[dict[str, Any]]:
    from . import _core

    opts = {k: v for k, v in options.items() if k not in ("solver", "cache")}
    if not options.get("solver", True):
        return [dict(f) for f in _core.check_source(source, filename, opts)]
    findings, undecided, errors = _core.check_source_parsed(source, filename, opts)
    out = Findings(dict(f) for f in findings)
    out.syntax_errors = [tuple(e) for e in errors]
    if undecided:
        out.extend(confirm(undecided))
    # a shape error inside a model cites what the model accepts
    if any(str(f.get("code", "")).startswith("SHP1") for f in out):
        from . import summary

        summary.cite(out, source, filename)
    if opts.get("may_fail"):
        # SHP902: a second run with the options as free parameters (``may_fail.py``)
        from . import may_fail

        _, candidates = _core.check_source_undecided(source, filename, {**opts, "free_params": True})

        def concrete(values: dict[str, int]) -> list[dict[str, Any]]:
            # the program run with the counterexample's values: what fails there, and how
            found, open_checks = _core.check_source_undecided(source, filename, {**opts, "param_values": values})
            return [dict(f) for f in found] + confirm(open_checks)

        out.extend(may_fail.find(candidates, {(f["row"], f["col"]) for f in out}, concrete=concrete))
    out.sort(key=lambda f: (f["row"], f["col"]))
    return out


def analyze(source: str, filename: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """ONE core run for an editor: ``{"findings": ..., "shapes": ...}``, the findings as
    :func:`check_source` gives them (the undecided checks Z3 proves included) and the tensors of
    every span (``_core.analyze_source``). ``options`` as for :func:`check_source`; the results
    cache keeps these entries apart from ``check_source``'s (another key)."""
    if options.get("cache", True):
        from . import cache

        opts = {k: v for k, v in options.items() if k != "cache"}
        return cache.cached(
            source, filename, {**opts, "analysis": "editor"}, lambda: _analyze(source, filename, opts), kind=dict
        )
    return _analyze(source, filename, options)


def _analyze(source: str, filename: str, options: Mapping[str, Any]) -> dict[str, Any]:
    from . import _core

    opts = {k: v for k, v in options.items() if k not in ("solver", "cache")}
    got = _core.analyze_source(source, filename, opts)
    findings = [dict(f) for f in got["findings"]]
    if options.get("solver", True) and got["undecided"]:
        findings.extend(confirm(got["undecided"]))
        findings.sort(key=lambda f: (f["row"], f["col"]))
    return {"findings": findings, "shapes": [dict(s) for s in got["shapes"]]}
