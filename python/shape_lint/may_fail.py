"""SHP902 may-fail-for-some-values: a line that fails for some legal values of the program's
free parameters, with a counterexample in the user's terms.

The core's SHP902 run (``free_params``) makes the free parameters symbols: ``argparse``
options with an int default (their default one legal value); the int constructor parameters
of a module class the file does not build, and the int defaults (at least 1) that the
outermost construction of a module class of the file leaves unpassed (``Net()``; an argument
passed pins its parameter, a block another class builds keeps its defaults); the length of a
dataset its files decide (``ImageFolder``: ``len(dataset)``, so the last batch may be any size);
and the sizes of ``forward``'s inputs. It exports its undecided checks with the free
parameters among their symbols (``params``) and whether every symbol is one (``free``). A check
is a candidate when every symbol of its query is a free parameter and one of them is an option,
a constructor parameter or a dataset length (an input size alone is never enough: every
convolution fails for a small enough input). The candidates of a site are tried longest
context first (it carries the site's earlier checks as facts, so its counterexample passes
them). A failure the core decides on a path (its condition involves free parameters) is
exported too. Per candidate:

1. ``context ∧ ¬precondition`` must be SAT: some legal values fail. Z3 gives a model.
2. The model is made plausible by extra constraints, each kept only when the query stays SAT:
   every parameter with a default (options, constructor defaults) at it; one that must move is
   moved as little as possible (the distance to its default bisected); a constructor default
   stays (a hard constraint, not a preference) within half to twice its value and keeps its
   power-of-two factor up to 8 (``dim=64`` may become 56 or 128, never 65: a configuration its
   author could have chosen); a constructor parameter
   without a default at least 8 (else 2), at most 512, a multiple of 4 (a size, a width, a head
   count), and not smaller than the constructor parameters after it (`dim, heads`); a dataset
   length between 100 and 100,000.
3. When input sizes are among the symbols: with the other parameters fixed at the
   counterexample, ``context ∧ precondition`` must be UNSAT (every input size fails).
4. The concrete run (``concrete``, given by ``solver``): the core runs the program again with
   the parameters bound to the counterexample (``param_values``). It must report a default
   (non-SHP9) finding on the same line, else the candidate is silent; that finding's message,
   with the shapes at those values, is the message.

``unknown``, a timeout or a spent budget mean silence. Every query goes through
``solver._solve``. The message is the concrete finding's, then ``(fails when --size=30)``:
``Conv2d: input size 2x2 gives output size 0x0, which is too small (0 < 1) (fails when
--size=30)``; the finding also carries the values as ``counterexample`` (``{"--size": 30}``).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import solver

CODE = "SHP902"
NAME = "may-fail-for-some-values"

#: Per query: a deterministic resource limit (about 60 ms of Z3 on an idle core when spent)
#: and a wall-clock safety net well above it, so that on a loaded machine the resource limit,
#: not the clock, decides, and the counterexample is the same from run to run.
QUERY_RLIMIT = 400_000
QUERY_TIMEOUT_MS = 1_000
#: Per file: a deterministic number of queries, and a wall-clock safety net; what is left when
#: either is spent is silent.
FILE_MAX_QUERIES = 64
FILE_BUDGET_MS = 6_000

_DROP = ("smt", "precondition", "params", "free")
#: The kinds of free parameter a counterexample names (an input size is never enough alone).
_CHOSEN = ("option", "ctor", "data")


class _Budget:
    def __init__(self, budget_ms: int, max_queries: int = FILE_MAX_QUERIES) -> None:
        self.deadline = time.monotonic() + budget_ms / 1000.0
        self.left_queries = max_queries

    def solve(self, script: str, model: bool = False) -> dict[str, Any]:
        left = int((self.deadline - time.monotonic()) * 1000)
        if left <= 0 or self.left_queries <= 0:
            return {"answer": "unknown"}
        self.left_queries -= 1
        return solver._solve(script, model=model, rlimit=QUERY_RLIMIT, timeout_ms=max(1, min(QUERY_TIMEOUT_MS, left)))


def _num(v: int) -> str:
    return f"(- {-v})" if v < 0 else str(v)


def _script(context: str, extra: Iterable[str], term: str) -> str:
    return context + "".join(f"(assert {c})\n" for c in extra) + f"(assert {term})\n"


def _counterexample(u: Mapping[str, Any], budget: _Budget) -> dict[str, int] | None:
    """The plausible failing values of the option and constructor parameters, by user name."""
    params: list[Mapping[str, Any]] = list(u["params"])
    chosen = [p for p in params if p["kind"] in _CHOSEN]
    if not u.get("free") or not chosen:
        return None
    context, fail = str(u["smt"]), f"(not {u['precondition']})"
    # a constructor default is varied only to another configuration its author could have
    # chosen: within half to twice the default, keeping its power-of-two factor (up to 8), so
    # `dim=64` may become 56 or 128 but not 65
    hard: list[str] = []
    for p in chosen:
        d = p.get("default")
        if p["kind"] == "ctor" and d is not None:
            k = min(8, int(d) & -int(d))
            hard += [f"(>= {p['smt']} {(int(d) + 1) // 2})", f"(<= {p['smt']} {2 * int(d)})"]
            if k > 1:
                hard.append(f"(= (mod {p['smt']} {k}) 0)")
    got = budget.solve(_script(context, hard, fail), model=True)
    if got["answer"] != "sat":
        return None
    model: dict[str, int] = dict(got.get("model", {}))
    extra: list[str] = list(hard)

    def keep(c: str) -> bool:
        nonlocal model
        r = budget.solve(_script(context, [*extra, c], fail), model=True)
        if r["answer"] == "sat":
            extra.append(c)
            model = dict(r.get("model", {}))
            return True
        return False

    # the parameters with a default (options, constructor defaults) stay there if they can
    options = [p for p in chosen if p.get("default") is not None]
    moved = [p for p in options if not keep(f"(= {p['smt']} {_num(p['default'])})")]
    for p in moved:
        s, d = p["smt"], int(p["default"])
        hi = abs(model.get(s, d) - d)
        lo = 1
        while lo < hi:  # the least distance to the default that still fails
            mid = (lo + hi) // 2
            r = budget.solve(_script(context, [*extra, f"(<= (abs (- {s} {_num(d)})) {mid})"], fail), model=True)
            if r["answer"] == "sat":
                hi, model = mid, dict(r.get("model", {}))
            elif r["answer"] == "unsat":
                lo = mid + 1
            else:
                break
        if s in model:
            extra.append(f"(= {s} {_num(model[s])})")
    ctors = [p["smt"] for p in chosen if p["kind"] == "ctor" and p.get("default") is None]
    for s in ctors:
        if not keep(f"(>= {s} 8)"):
            keep(f"(>= {s} 2)")
        keep(f"(<= {s} 512)")
        keep(f"(= (mod {s} 4) 0)")
    # a dataset read from files: a few hundred samples or more
    for s in (p["smt"] for p in chosen if p["kind"] == "data"):
        keep(f"(>= {s} 100)")
        keep(f"(<= {s} 100000)")
    # a size before a count in the signature (`dim, heads`): not smaller than it
    for i, s in enumerate(ctors):
        for t in ctors[i + 1 :]:
            keep(f"(>= {s} {t})")
    if any(p["smt"] not in model for p in chosen):
        return None
    values = {p["smt"]: model[p["smt"]] for p in chosen}
    if any(p["kind"] == "input" for p in params):
        # with those values, every input size fails
        fixed = [f"(= {s} {_num(v)})" for s, v in values.items()]
        if budget.solve(_script(context, fixed, str(u["precondition"])))["answer"] != "unsat":
            return None
    return {p["name"]: values[p["smt"]] for p in chosen}


def _describe(u: Mapping[str, Any], values: Mapping[str, int]) -> str:
    defaults = {p["name"]: p.get("default") for p in u["params"]}
    shown = {k: v for k, v in values.items() if defaults.get(k) is None or defaults[k] != v}
    parts = [f"{k}={v}" for k, v in (shown or values).items()]
    return ", ".join(parts)


def _evidence(f: Mapping[str, Any]) -> str:
    """A concrete finding's message without the suggested fix the core appended to it (a fix
    for the counterexample's values is no fix for the program)."""
    msg = str(f["message"])
    fix = f.get("fix")
    if fix and msg.endswith(f"; {fix['message']}"):
        msg = msg[: -len(fix["message"]) - 2]
    return msg


def is_candidate(u: Mapping[str, Any]) -> bool:
    """Whether an exported check of the SHP902 run is a candidate: every symbol of its query
    is a free parameter, and one is an option, a constructor parameter or a dataset length.

    A constructor default alone is no candidate: a check over one default and constants
    (`Net()` with `n_features=12` meeting the script's own `torch.randn(16, 12)`, or
    `d_model=dim` with a literal `nhead=4`) fails only when the program's own values change
    with it; the class's own constraints relate two parameters (`size % patch`), or a
    parameter and an input size (`dim // heads` for every input)."""
    params = list(u.get("params", []))
    if not (u.get("free") and any(p["kind"] in _CHOSEN for p in params)):
        return False
    alone = len({p["smt"] for p in params}) == 1
    return not (alone and params[0]["kind"] == "ctor" and params[0].get("default") is not None)


def find(
    candidates: Sequence[Mapping[str, Any]],
    reported: set[tuple[int, int]],
    *,
    budget_ms: int = FILE_BUDGET_MS,
    max_queries: int = FILE_MAX_QUERIES,
    concrete: Callable[[dict[str, int]], list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """The SHP902 findings among the SHP902 run's undecided checks (``candidates``), one per
    site, none at a site in ``reported``. Without Z3 installed: ``[]``.

    ``concrete(values)`` runs the core with the free parameters bound to a counterexample
    (``param_values``) and gives its findings: a candidate is reported only when that run
    fails on the same line with a default (non-SHP9) finding, and the message is that
    finding's, evaluated at those values (``Conv2d: input size 2x2 gives output size 0x0 ...
    (fails when --size=30)``). Without it, the message is the symbolic one."""
    todo = [u for u in candidates if is_candidate(u)]
    if not todo:
        return []
    try:
        import z3  # noqa: F401 - only to learn whether the bridge can run at all
    except ImportError:
        return []
    budget = _Budget(budget_ms, max_queries)
    by_site: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for u in todo:
        by_site.setdefault((int(u["row"]), int(u["col"])), []).append(u)
    out: list[dict[str, Any]] = []
    for site, us in sorted(by_site.items()):
        if site in reported:
            continue
        # the check with the most context first: it carries the site's earlier checks as facts
        for u in sorted(us, key=lambda u: -len(str(u["smt"]))):
            values = _counterexample(u, budget)
            if values is None:
                continue
            message = str(u["message"])
            if concrete is not None:
                same = [g for g in concrete(values) if int(g["row"]) == site[0] and not str(g["code"]).startswith("SHP9")]
                if not same:
                    continue  # the counterexample does not fail there when run: say nothing
                message = _evidence(same[0])
            f = {k: v for k, v in u.items() if k not in _DROP}
            f.update(code=CODE, name=NAME, counterexample=values)
            f["message"] = f"{message} (fails when {_describe(u, values)})"
            out.append(f)
            break
    return out
