#!/usr/bin/env python3
"""The Unknown shares of `shape-lint coverage` over several trees, side by side.

usage: python bench/coverage.py ROOT [ROOT ...] [--save FILE] [--compare FILE] [--top N]

Each ROOT (a repository or a library's sources) is checked from its own directory, as a user
runs `shape-lint coverage .` there. One row per root: files, expressions, the share of known
values, of tensor expressions with a known rank / dtype / device, of backward() sites with a
known graph / optimizers. `--save` writes the figures as JSON; `--compare` prints a saved run's
share beside each of this run's (before -> after). `--top N` lists the N most frequent causes
over all roots.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict

SHARES = [
    ("values", "known_values"),
    ("rank", "tensor_rank_known"),
    ("dtype", "tensor_dtype_known"),
    ("device", "tensor_device_known"),
    ("bw.graph", "backward_graph_known"),
    ("bw.optim", "backward_optimizer_known"),
]


def run(root: str) -> dict:
    exe = os.path.join(os.path.dirname(sys.executable), "shape-lint")
    p = subprocess.run([exe, "coverage", "--output-format", "json", "."], cwd=root, capture_output=True, text=True)
    if p.returncode not in (0, 2) or not p.stdout.strip():
        raise SystemExit(f"{root}: shape-lint coverage failed ({p.returncode}): {p.stderr[-500:]}")
    data = json.loads(p.stdout)
    data.pop("per_file", None)
    return data


def cell(now: float | None, before: float | None) -> str:
    fmt = lambda v: "-" if v is None else f"{100 * v:.1f}"  # noqa: E731
    return fmt(now) if before is None and now is None or before is None else f"{fmt(before)}->{fmt(now)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="+")
    ap.add_argument("--save")
    ap.add_argument("--compare")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    before = json.load(open(args.compare)) if args.compare else {}
    results = {}
    for root in args.roots:
        results[os.path.basename(os.path.abspath(root))] = run(root)
    header = ["root", "files", "exprs", "tensors", "backward"] + [h for h, _ in SHARES]
    rows = []
    for name, r in results.items():
        b = before.get(name, {}).get("shares", {}) if before else {}
        t = r["totals"]
        rows.append([name, str(r["files"]), str(t["exprs"]), str(t["tensors"]), str(t["backward"])]
                    + [cell(r["shares"][k], b.get(k)) if before else cell(r["shares"][k], None) for _, k in SHARES])
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    for row in [header] + rows:
        print("  ".join(x.ljust(w) for x, w in zip(row, widths)))
    causes: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, ""])
    for name, r in results.items():
        for o in r["origins"]:
            c = causes[(o["kind"], o["label"])]
            c[0] += o["count"]
            c[1] += 1
            c[2] = c[2] or f"{name}/{o['example']}"
    if args.top:
        print(f"\ntop causes over all roots (sites, roots, kind, construct, first site):")
        for (kind, label), (n, k, ex) in sorted(causes.items(), key=lambda kv: -kv[1][0])[: args.top]:
            print(f"  {n:>6}  {k:>3}  {kind:<5}  {label}  {ex}")
    if args.save:
        with open(args.save, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
