"""Prints the differential suite's API coverage table (and the unread-argument summary) at the end of a pytest run."""
from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter):
    mod = sys.modules.get("test_differential_api")
    _unread_summary(terminalreporter, getattr(mod, "UNREAD", None))
    tallies = getattr(mod, "TALLIES", None)
    if not tallies:
        return
    w = terminalreporter
    w.section("torch API coverage (core vs real torch)")
    w.write_line(f"{'api':<36} {'kind':<8} {'cases':>5} {'agree':>5} {'silent':>6} {'disagree':>8} {'torch raised':>12}")
    for api in sorted(tallies, key=lambda a: (tallies[a][0], a)):
        kind, t = tallies[api]
        w.write_line(f"{api:<36} {kind:<8} {t.cases:>5} {t.agree:>5} {t.silent:>6} {t.disagree:>8} {t.raises:>12}")
    kinds = {}
    for kind, _ in tallies.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    cases = sum(t.cases for _, t in tallies.values())
    agree = sum(t.agree for _, t in tallies.values())
    dis = sum(t.disagree for _, t in tallies.values())
    per_kind = ", ".join(f"{n} {k}s" for k, n in sorted(kinds.items()))
    w.write_line(f"APIs: {len(tallies)} ({per_kind}); cases: {cases}; agree: {agree}; disagreements: {dis}")


def _unread_summary(w, results):
    """One line per API that was skipped or failed, and the registry entries without a spec."""
    if not results:
        return
    w.section("unread argument gives Unknown (registry gate)")
    orphans = results.pop("<registry entries without a spec>", None)
    ok = sum(v == "ok" for v in results.values())
    for api, v in sorted(results.items()):
        if v != "ok":
            w.write_line(f"{api:<36} {v}")
    w.write_line(f"APIs checked: {len(results)}; ok: {ok}")
    if orphans is not None:
        w.write_line(f"registry entries without a spec: {orphans}")
