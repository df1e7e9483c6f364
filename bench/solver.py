"""What the Z3 bridge costs and finds: undecided checks exported, proven, and time on vs off.

usage: python bench/solver.py [--runs N] [--corpus DIR ...]

For each corpus (by default tests/fixtures and ../shared/eval-dev/cases when present) it prints:
- files, files with undecided checks, checks exported by the core, checks Z3 proves (findings
  the core alone does not report);
- the time of the core alone (``_core.check_source``) and of the bridge
  (``solver.check_source``: the core with export on, plus Z3 for the files that have undecided
  checks), summed over the files, each file's time the median (and min) of N runs with Z3
  already imported, and the ratio on / off;
- the one-off cost of importing z3 in a fresh interpreter, which a flake8 or CLI run pays once, and
  only if some file has an undecided check.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from shape_lint import _core, solver

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPORA = [REPO / "tests" / "fixtures", REPO.parent / "shared" / "eval-dev" / "cases"]


def timed(fn, runs):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ts), min(ts)


def corpus_stats(root: Path, runs: int) -> dict:
    files = sorted(p for p in root.rglob("*.py") if "stubs" not in p.parts)
    out = {"files": len(files), "with_undecided": 0, "exported": 0, "proven": 0,
           "off_med": 0.0, "off_min": 0.0, "on_med": 0.0, "on_min": 0.0, "proven_at": []}
    for p in files:
        text = p.read_text(encoding="utf-8")
        name = str(p)
        _, undecided = _core.check_source_undecided(text, name)
        proven = solver.confirm(undecided)
        out["with_undecided"] += bool(undecided)
        out["exported"] += len(undecided)
        out["proven"] += len(proven)
        out["proven_at"] += [f"{p.relative_to(root)}:{f['row']} {f['code']}" for f in proven]
        med, mn = timed(lambda: _core.check_source(text, name), runs)
        out["off_med"] += med
        out["off_min"] += mn
        med, mn = timed(lambda: solver.check_source(text, name, {}), runs)
        out["on_med"] += med
        out["on_min"] += mn
    return out


def z3_import_ms(rounds: int = 3) -> tuple[float, float]:
    code = "import time; t = time.perf_counter(); import z3; print((time.perf_counter() - t) * 1000)"
    ts = []
    for _ in range(rounds):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        ts.append(float(r.stdout.strip()))
    return statistics.median(ts), min(ts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs per file and setting (default 7)")
    ap.add_argument("--corpus", action="append", type=Path, help="a directory of .py files")
    args = ap.parse_args()
    corpora = args.corpus or [c for c in DEFAULT_CORPORA if c.is_dir()]
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    solver.decide(["(assert true)"])  # z3 imported once, outside the timings
    header = ("corpus", "files", "w/ undec", "exported", "proven", "off ms med/min",
              "on ms med/min", "on/off med", "on/off min")
    rows = []
    for c in corpora:
        s = corpus_stats(c, args.runs)
        rows.append((
            c.name if c.name != "cases" else "eval-dev",
            str(s["files"]), str(s["with_undecided"]), str(s["exported"]), str(s["proven"]),
            f"{s['off_med']:.0f}/{s['off_min']:.0f}", f"{s['on_med']:.0f}/{s['on_min']:.0f}",
            f"{s['on_med'] / s['off_med']:.2f}x", f"{s['on_min'] / s['off_min']:.2f}x",
        ))
        for at in s["proven_at"]:
            print(f"  proven by Z3: {c.name}/{at}")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(x.rjust(w) for x, w in zip(r, widths)))
    med, mn = z3_import_ms()
    print(f"import z3 in a fresh interpreter (paid once per process, only when a file has "
          f"undecided checks): median {med:.0f} ms, min {mn:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
