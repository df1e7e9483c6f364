"""Who decides the checks: the share decided by the core, by Z3, and left undecided.

usage: python bench/decisions.py [--corpus DIR ...] [--per-file]

A *check site* is a place in a checked file where a precondition of torch is checked (a call, an
operator; the checks of library code the core models count at the user's call that reached
them). For each corpus (by default ``tests/fixtures`` and ``tests/projects``) it prints:

- **sites**: the share decided by the core (every check there holds or is violated, or the
  site is reported anyway), by Z3 (every check the core left open there went to Z3 as a query,
  and Z3 answered each: the line fails on every execution of its path, the path is
  infeasible, or some execution passes), and left undecided (a check the core could not
  express or would not report, such as one inside a ``try``, or a query Z3 could not answer
  within its per-query limits ``solver.CHECK_RLIMIT`` / ``CHECK_TIMEOUT_MS``), and why the
  undecided ones are;
- **checks**: the same over every evaluation of a precondition (one per path and site, as
  ``Interp::check`` counts them; ``_core.check_source_stats``): holds, violated, undecided,
  and the share of the undecided that the core exported as queries;
- **queries**: what Z3 made of the exported checks (after one per site and text): fails on
  every execution (a finding), some execution passes, infeasible path, unknown.

- **may-fail run** (SHP902, ``free_params``: options, constructor parameters and the last
  batch as free parameters): its check sites, decided by the core (every check there holds or
  is violated for every value), by Z3 (every check left open there is an SHP902 candidate and
  Z3 answered its query ``context ∧ ¬precondition``: SAT, a counterexample exists; UNSAT, no
  legal value fails there, a guard holds), or left undecided (a check that is no candidate:
  over opaque data, or one constructor default alone; or a query Z3 could not answer); and its
  exported checks (candidates asked once each), with the SHP902 findings reported (a counterexample whose concrete run fails on
  the line: ``may_fail.find``).

Only shares and counts are printed, no times. The answers go through ``solver._solve`` and
its in-process memo (no disk cache); the per-file budget of ``solver.confirm`` is not applied,
so a query is undecided only when its own limits run out.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from shape_lint import _core, may_fail, solver

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPORA = [REPO / "tests" / "fixtures", REPO / "tests" / "projects"]


def classify(u: dict[str, Any]) -> str:
    """What Z3 makes of one exported check: ``fails``, ``passes``, ``infeasible``, ``unknown``."""
    limits = {"rlimit": solver.CHECK_RLIMIT, "timeout_ms": solver.CHECK_TIMEOUT_MS}
    failing = solver._solve(f"{u['smt']}(assert {u['precondition']})\n", **limits)["answer"]
    if failing == "sat":
        return "passes"
    if failing == "unknown":
        return "unknown"
    path = solver._solve(u["smt"], **limits)["answer"]
    return {"sat": "fails", "unsat": "infeasible"}.get(path, "unknown")


def file_stats(path: Path) -> Counter:
    """The counts of one file: ``site_core``, ``site_z3``, ``site_open``, the check counts and
    the query classes (``q_fails`` ...)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    findings, undecided, stats = _core.check_source_stats(text, str(path), {"check_sites": True})
    out: Counter = Counter()
    for k in ("holds", "violated", "undecided", "exported"):
        out[k] = stats[k]
    reported = {(f["row"], f["col"]) for f in findings}
    queries: dict[tuple[int, int], list[str]] = {}
    for u in undecided:
        c = classify(u)
        out[f"q_{c}"] += 1
        queries.setdefault((u["row"], u["col"]), []).append(c)
    for row, col, _holds, _violated, undec, exported in stats["check_sites"]:
        site = (row, col)
        answers = queries.get(site, [])
        if undec == 0 or site in reported:
            out["site_core"] += 1
        elif answers and ("fails" in answers or (undec == exported and "unknown" not in answers)):
            out["site_z3"] += 1
        else:
            out["site_open"] += 1
            # why: no check of the site went to Z3, some did not, or Z3 could not answer
            why = "none" if not answers else "part" if undec > exported else "unknown"
            out[f"open_{why}"] += 1
    return out


def mayfail_stats(path: Path) -> Counter:
    """The counts of the may-fail (SHP902) run of one file: ``mf_core``, ``mf_z3_sat``,
    ``mf_z3_unsat``, ``mf_open`` (sites), ``mf_q_sat`` / ``mf_q_unsat`` / ``mf_q_unknown`` /
    ``mf_q_not_free`` (exported checks) and ``mf_reported`` (SHP902 findings)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    opts = {"check_sites": True, "may_fail": True, "free_params": True}
    _, cands, stats = _core.check_source_stats(text, str(path), opts)
    limits = {"rlimit": may_fail.QUERY_RLIMIT, "timeout_ms": may_fail.QUERY_TIMEOUT_MS}
    out: Counter = Counter()
    queries: dict[tuple[int, int], list[str]] = {}
    for u in cands:
        if may_fail.is_candidate(u):
            got = solver._solve(f"{u['smt']}(assert (not {u['precondition']}))\n", model=True, **limits)["answer"]
        else:
            got = "not_free"
        out[f"mf_q_{got}"] += 1
        queries.setdefault((u["row"], u["col"]), []).append(got)
    for row, col, _holds, _violated, undec, exported in stats["check_sites"]:
        answers = queries.get((row, col), [])
        if undec == 0:
            out["mf_core"] += 1
        elif answers and undec <= exported and all(a in ("sat", "unsat") for a in answers):
            out["mf_z3_sat" if "sat" in answers else "mf_z3_unsat"] += 1
        else:
            out["mf_open"] += 1
    if cands:
        found = solver.check_source(text, str(path), {"may_fail": True, "cache": False})
        out["mf_reported"] += sum(f["code"] == may_fail.CODE for f in found)
    return out


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "stubs" not in p.parts)


def corpus_stats(files: Iterable[Path]) -> Counter:
    total: Counter = Counter()
    for p in files:
        total["files"] += 1
        total.update(file_stats(p))
        total.update(mayfail_stats(p))
    return total


def share(n: int, of: int) -> str:
    return f"{100 * n / of:.1f}%" if of else "-"


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(x.rjust(w) for x, w in zip(r, widths)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", type=Path, help="a directory of .py files")
    ap.add_argument("--per-file", action="store_true", help="list the files with open sites")
    args = ap.parse_args()
    corpora = args.corpus or [c for c in DEFAULT_CORPORA if c.is_dir()]
    results = []
    for c in corpora:
        files = corpus_files(c)
        s = corpus_stats(files)
        results.append((c.name, s))
        if args.per_file:
            for p in files:
                f = file_stats(p)
                if f["site_open"]:
                    print(f"  open sites: {p.relative_to(c)}: {f['site_open']}")
    print("check sites (a place in a file where torch's preconditions are checked)")
    rows = []
    for name, s in results:
        sites = s["site_core"] + s["site_z3"] + s["site_open"]
        rows.append((name, str(s["files"]), str(sites), share(s["site_core"], sites),
                     share(s["site_z3"], sites), share(s["site_open"], sites)))
    table(("corpus", "files", "sites", "core", "Z3", "undecided"), rows)
    print("\nundecided sites: none of their open checks went to Z3 (not expressible, or where"
          " nothing is reported), only some did, or Z3 could not answer")
    rows = []
    for name, s in results:
        n = s["site_open"]
        rows.append((name, str(n), share(s["open_none"], n), share(s["open_part"], n),
                     share(s["open_unknown"], n)))
    table(("corpus", "undecided", "not sent", "partly sent", "Z3 unknown"), rows)
    print("\nchecks (one precondition on one path)")
    rows = []
    for name, s in results:
        n = s["holds"] + s["violated"] + s["undecided"]
        rows.append((name, str(n), share(s["holds"] + s["violated"], n), share(s["holds"], n),
                     share(s["violated"], n), share(s["undecided"], n),
                     share(s["exported"], s["undecided"])))
    table(("corpus", "checks", "core", "holds", "violated", "undecided", "exported/undec"), rows)
    print("\nqueries to Z3 (the exported checks, one per site and text)")
    rows = []
    for name, s in results:
        q = sum(s[f"q_{k}"] for k in ("fails", "passes", "infeasible", "unknown"))
        rows.append((name, str(q), share(s["q_fails"], q), share(s["q_passes"], q),
                     share(s["q_infeasible"], q), share(s["q_unknown"], q)))
    table(("corpus", "queries", "fails", "passes", "infeasible", "unknown"), rows)
    print("\nmay-fail run (SHP902, free parameters): check sites decided by the core, by Z3"
          " (SAT: a counterexample; UNSAT: no legal value fails), or left undecided")
    rows = []
    for name, s in results:
        sites = s["mf_core"] + s["mf_z3_sat"] + s["mf_z3_unsat"] + s["mf_open"]
        rows.append((name, str(sites), share(s["mf_core"], sites), share(s["mf_z3_sat"], sites),
                     share(s["mf_z3_unsat"], sites), share(s["mf_open"], sites)))
    table(("corpus", "sites", "core", "Z3 SAT", "Z3 UNSAT", "undecided"), rows)
    print("\nmay-fail queries (exported checks; no candidate: over opaque data, or one constructor"
          " default alone, may_fail.is_candidate)")
    rows = []
    for name, s in results:
        q = sum(s[f"mf_q_{k}"] for k in ("sat", "unsat", "unknown", "not_free"))
        rows.append((name, str(q), str(s["mf_q_sat"]), str(s["mf_q_unsat"]), str(s["mf_q_unknown"]),
                     str(s["mf_q_not_free"]), str(s["mf_reported"])))
    table(("corpus", "exported", "SAT", "UNSAT", "unknown", "no candidate", "SHP902"), rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
