"""Prints the differential suite's API coverage table (and the unread-argument summary), and the
share of `shape-lint summary` records that agree with torch, at the end of a pytest run."""
from __future__ import annotations

import sys


def _cache_summary(w, times):
    """test_projects: `shape-lint check` of each project copy, cold and then from the cache."""
    if not times:
        return
    w.section("shape-lint check, cold and warm (the cache), per project copy")
    w.write_line(f"{'copy':<44} {'command cold':>12} {'warm':>6} {'ratio':>6} {'analysis cold':>14} {'warm':>6} {'ratio':>6}")
    for label in sorted(times):
        cold, warm, a_cold, a_warm = times[label]
        w.write_line(f"{label:<44} {cold * 1000:10.0f}ms {warm * 1000:4.0f}ms {warm / cold:6.2f} {a_cold * 1000:12.1f}ms {a_warm * 1000:4.1f}ms {a_warm / a_cold:6.2f}")
    total = [sum(t[k] for t in times.values()) for k in range(4)]
    w.write_line(f"all {len(times)} copies: warm/cold {total[1] / total[0]:.2f} for the whole command (interpreter start-up included), "
                 f"{total[3] / total[2]:.2f} for the analysis alone")


def _summary_share(w, mod):
    """test_summary: the share of clean fixtures whose `shape-lint summary` agrees exactly with
    torch's forward hooks, by group, and the top reasons of the incomplete records."""
    share = getattr(mod, "SHARE", None)
    sized = getattr(mod, "INPUT_SIZE_SHARE", None)
    projects = getattr(sys.modules.get("test_projects"), "PROJECT_SUMMARY", None)
    if share or sized or projects:
        w.section("shape-lint summary against torch's forward hooks")
    if share:
        for line in mod.share_text(share["groups"], share["reasons"]).splitlines():
            w.write_line(line)
    if sized:
        w.write_line(f"summary --model --input-size vs forward hooks (each script's first call of a model it defines): "
                     f"{sized['agree']} agree, {sized['incomplete']} incomplete, {sized['differ']} differ")
    if projects:
        agree = sum(v == "agree" for v, _ in projects.values())
        w.write_line(f"projects (tests/projects, entry scripts): {agree}/{len(projects)} agree exactly; "
                     + "; ".join(f"{n}: {v}" for n, (v, _) in sorted(projects.items())))


def pytest_terminal_summary(terminalreporter):
    _cache_summary(terminalreporter, getattr(sys.modules.get("test_projects"), "CACHE_TIMES", None))
    _summary_share(terminalreporter, sys.modules.get("test_summary"))
    mod = sys.modules.get("test_differential_api")
    _unread_summary(terminalreporter, getattr(mod, "UNREAD", None))
    tallies = getattr(mod, "TALLIES", None)
    if not tallies:
        return
    w = terminalreporter
    w.section("torch API coverage (core vs real torch)")
    w.write_line(f"{'api':<36} {'kind':<8} {'cases':>5} {'agree':>5} {'silent':>6} {'disagree':>8} {'torch raised':>12} {'families':>8}")
    for api in sorted(tallies, key=lambda a: (tallies[a][0], a)):
        kind, t = tallies[api]
        w.write_line(f"{api:<36} {kind:<8} {t.cases:>5} {t.agree:>5} {t.silent:>6} {t.disagree:>8} {t.raises:>12} {len(t.families):>8}")
    kinds = {}
    for kind, _ in tallies.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    cases = sum(t.cases for _, t in tallies.values())
    agree = sum(t.agree for _, t in tallies.values())
    dis = sum(t.disagree for _, t in tallies.values())
    per_kind = ", ".join(f"{n} {k}s" for k, n in sorted(kinds.items()))
    missed = sum(t.missed for _, t in tallies.values())
    w.write_line(f"APIs: {len(tallies)} ({per_kind}); cases: {cases}; agree: {agree}; disagreements: {dis}"
                 + (f"; known model misses (differential/known_misses.py): {missed}" if missed else ""))
    for _, t in tallies.values():
        for m in t.misses:
            reason, _, prog = m.partition("\n")
            w.write_line(f"  missed: {reason}: {prog.splitlines()[-1] if prog else ''}")
        for st in t.stale:
            w.write_line(f"  stale known miss (no longer disagrees; remove it from known_misses.py): {st}")
    _family_summary(w, tallies)


def _family_summary(w, tallies):
    """The precondition catalogue's families: provoked, detected by the core (a provoked case
    agrees), the gap list (provoked, the core always silent) and the uncatalogued torch errors."""
    from collections import Counter

    from differential import catalogue

    verdicts: dict[str, Counter] = {}
    unclassified: Counter = Counter()
    for _, t in tallies.values():
        for fid, v in t.families.items():
            verdicts.setdefault(fid, Counter()).update(v)
        unclassified.update(t.unclassified)
    fams = catalogue.FAMILIES
    provoked = [f for f in fams if f.id in verdicts]
    detected = [f for f in provoked if verdicts[f.id]["agree"]]
    kinds = Counter(f.kind for f in fams)
    w.write_line(f"families: {len(fams)} catalogued ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), "
                 f"{len(provoked)} provoked, {len(detected)} detected by the core (agree)")
    gaps = [f.id for f in provoked if f not in detected]
    w.write_line(f"families provoked but never detected (the core is silent; {len(gaps)}): {', '.join(gaps) or 'none'}")
    unprovoked = [f.id for f in fams if f.id not in verdicts]
    if unprovoked:
        w.write_line(f"families not provoked ({len(unprovoked)}): {', '.join(unprovoked)}")
    w.write_line(f"torch errors no family matches (out of scope or not catalogued): {sum(unclassified.values())} cases")
    for msg, n in unclassified.most_common(8):
        w.write_line(f"  {n:>4}  {msg[:140]}")


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
