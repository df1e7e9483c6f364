#!/usr/bin/env python3
"""Big-file benchmark: cost of one long file of many small models, built and called in turn.

The generated file (``--sizes``, default 2000, 5000, 10000 and 20000 lines) repeats a unit of
about 12 lines: an ``nn.Module`` subclass with one or two layers (a Linear, a Conv2d, or a
small Sequential, varied by index) and its ``forward``, then at module level
``m_i = Model_i()`` and ``y_i = m_i(torch.randn(...))``. The sizes are correct, so the only bug
is the file's last line, ``torch.randn(3, 4) @ torch.randn(5, 6)``, which the engine reaches
last. ``--verify`` runs the smallest file under torch (``--python``, default
``/work/venv/bin/python`` when present, else this interpreter) and checks that it raises at
that line and nowhere before.

Each size is analysed in its own subprocess (``_core.check_source_stats``), so that its peak
RSS is its own (``os.wait4``'s ``ru_maxrss``). Two runs per size:

* *big budgets* (``timeout_ms=600000``, ``max_steps=10**9``): nothing cuts the analysis, so the
  time, peak RSS and interpreter steps are the real cost of the file;
* *default settings* (no options): whether the default budgets still report the bug.

The table shows lines, ms, peak MB and steps of each run with the ratio to the smallest size,
and the growth ``(x / x_smallest) / (lines / lines_smallest)`` of time, memory and steps:
1.0 means linear, 2.0 twice as fast as linear. ``base MB`` is the peak RSS of the same
subprocess analysing an empty file (the interpreter and the module), and the memory growth is
also shown over the analysis alone (peak - base).

    python bench/big_file.py                          # 2k/5k/10k/20k lines
    python bench/big_file.py --sizes 2000 8000 --verify
    python bench/big_file.py --write /tmp/big         # also write the files (big_<lines>.py)
    python bench/big_file.py --json                   # one JSON object per size (tests)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIG_BUDGET = {"timeout_ms": 600_000, "max_steps": 10**9}
BUG = "torch.randn(3, 4) @ torch.randn(5, 6)\n"

HEADER = '''\
"""Generated: {units} small models built and called in turn (bench/big_file.py)."""
import torch
import torch.nn as nn

'''


def unit(i: int) -> str:
    """One unit of 12 lines (a class of 8, its instance and its call), varied by ``i``."""
    kind = i % 3
    b = 1 + i % 4
    if kind == 0:
        a, c = 4 + i % 13, 3 + (i * 7) % 11
        body = (f"        self.fc = nn.Linear({a}, {c})\n"
                "        self.act = nn.ReLU()\n")
        fwd = "        return self.act(self.fc(x))\n"
        arg = f"{b}, {a}"
    elif kind == 1:
        cin, cout, k, hw = 1 + i % 3, 2 + i % 5, 1 + 2 * (i % 2), 6 + i % 5
        body = (f"        self.conv = nn.Conv2d({cin}, {cout}, {k}, padding={k // 2})\n"
                "        self.pool = nn.MaxPool2d(2)\n")
        fwd = "        return self.pool(self.conv(x))\n"
        arg = f"{b}, {cin}, {hw}, {hw}"
    else:
        a, h, c = 5 + i % 9, 8 + i % 6, 2 + i % 7
        body = (f"        self.net = nn.Sequential(nn.Linear({a}, {h}), nn.Tanh(), "
                f"nn.Linear({h}, {c}))\n"
                f"        self.width = {h}\n")
        fwd = "        return self.net(x)\n"
        arg = f"{b}, {a}"
    return (f"\nclass Model{i}(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            f"{body}\n"
            "    def forward(self, x):\n"
            f"{fwd}"
            f"\nm{i} = Model{i}()\ny{i} = m{i}(torch.randn({arg}))\n")


UNIT_LINES = unit(0).count("\n")
HEADER_LINES = HEADER.count("\n")


def build(target_lines: int) -> str:
    """A file of about ``target_lines`` lines whose last line is the bug."""
    units = max(1, round((target_lines - HEADER_LINES - 2) / UNIT_LINES))
    parts = [HEADER.format(units=units), *(unit(i) for i in range(units)), "\n\n", BUG]
    return "".join(parts)


def count_lines(src: str) -> int:
    return src.count("\n")


# --------------------------------------------------------------------------------------------
# One measured analysis per subprocess

CHILD = r'''
import json, sys, time
from shape_lint import _core
src = open(sys.argv[1], encoding="utf-8").read()
options = json.loads(sys.argv[2])
times, cpu = [], []
for _ in range(int(sys.argv[3])):
    t0, c0 = time.perf_counter(), time.process_time()
    findings, _undecided, stats = _core.check_source_stats(src, sys.argv[1], options)
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
print(json.dumps({"times": times, "cpu": cpu, "steps": stats["steps"], "abandoned": stats["abandoned"],
                  "entries": stats["entries"], "core": _core.__file__,
                  "findings": [(f["row"], f["code"]) for f in findings]}))
'''


def measure(path: Path, options: dict | None, python: str = sys.executable, runs: int = 1) -> dict:
    """Analyse ``path`` ``runs`` times in a fresh subprocess: its result, the wall times (min
    and median seconds), the least CPU time (of the process: the analysis runs on a thread of
    its own) and the peak RSS (MB, the same for every run: the first one's)."""
    p = subprocess.Popen([python, "-c", CHILD, str(path), json.dumps(options or {}), str(runs)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # (read the pipes first: a full pipe would block the child before it exits)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"analysis of {path} failed ({p.returncode}):\n{err}")
    r = json.loads(out.strip().splitlines()[-1])
    r["peak_mb"] = usage.ru_maxrss / 1024  # KB on Linux
    r["seconds"] = min(r["times"])
    r["median"] = statistics.median(r["times"])
    r["cpu_seconds"] = min(r["cpu"])
    return r


def verify(path: Path, python: str) -> str | None:
    """Run the file under torch: None when it raises at its last line only, else why not."""
    p = subprocess.run([python, str(path)], capture_output=True, text=True, timeout=1800)
    last = count_lines(path.read_text(encoding="utf-8"))
    if p.returncode == 0:
        return "the file ran without error"
    where = f'File "{path}", line {last}'
    if where not in p.stderr or "RuntimeError" not in p.stderr:
        return "it did not raise at its last line:\n" + p.stderr[-2000:]
    return None


def default_python() -> str:
    venv = Path("/work/venv/bin/python")
    return str(venv) if venv.exists() else sys.executable


# --------------------------------------------------------------------------------------------


def run(sizes: list[int], write: Path | None, do_verify: bool, python: str, analyser: str,
        runs: int, as_json: bool, default_run: bool) -> int:
    tmp = tempfile.TemporaryDirectory(prefix="big_file_")
    out_dir = write or Path(tmp.name)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for target in sorted(sizes):
        src = build(target)
        path = out_dir / f"big_{target}.py"
        path.write_text(src, encoding="utf-8")
        files.append((count_lines(src), path))
    if do_verify:
        why = verify(files[0][1], python)
        if why:
            print(f"VERIFY FAILED for {files[0][1]}: {why}", file=sys.stderr)
            return 1
        if not as_json:
            print(f"verified under torch ({python}): {files[0][1].name} raises at its last "
                  "line only")
    empty = out_dir / "empty.py"
    empty.write_text("", encoding="utf-8")
    base = measure(empty, BIG_BUDGET, analyser)
    base_mb = base["peak_mb"]
    if not as_json:
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"{os.cpu_count()} CPUs; core {base['core']}")
        print(f"big budgets (timeout_ms=600000, max_steps=10**9: nothing cuts the analysis), "
              f"min and median of {runs} runs; base MB {base_mb:.0f} (the same subprocess on an "
              "empty file)")
        print(f"{'lines':>6} {'x':>5} | {'ms':>6} {'med':>6} {'cpu ms':>6} {'x':>6} {'growth':>6} | "
              f"{'peak MB':>7} {'x':>5} {'growth':>6} {'g(-base)':>8} | {'steps':>8} {'x':>6} "
              f"{'growth':>6} | {'bug':>3} | {'default: bug':>12} {'ms':>6} {'MB':>5}")
    first = None
    ok = True
    for lines, path in files:
        r = measure(path, BIG_BUDGET, analyser, runs)
        d = measure(path, None, analyser) if default_run else None
        found = any(row == lines and code.startswith("SHP") for row, code in r["findings"])
        extra = [f for f in r["findings"] if f[0] != lines]
        d_found = d is not None and any(row == lines for row, _ in d["findings"])
        if first is None:
            first = (lines, r)
        l0, r0 = first
        lr = lines / l0
        t_x, m_x, s_x = r["cpu_seconds"] / r0["cpu_seconds"], r["peak_mb"] / r0["peak_mb"], r["steps"] / r0["steps"]
        m_net_x = (r["peak_mb"] - base_mb) / max(r0["peak_mb"] - base_mb, 1e-9)
        row = {"lines": lines, "ms": r["seconds"] * 1e3, "median_ms": r["median"] * 1e3,
               "cpu_ms": r["cpu_seconds"] * 1e3,
               "peak_mb": r["peak_mb"], "base_mb": base_mb, "steps": r["steps"], "found": found,
               "extra_findings": extra, "time_growth": t_x / lr, "mem_growth": m_x / lr,
               "mem_net_growth": m_net_x / lr, "steps_growth": s_x / lr,
               "abandoned": r["abandoned"]}
        if d is not None:
            row.update(default_found=d_found, default_ms=d["seconds"] * 1e3,
                       default_mb=d["peak_mb"], default_steps=d["steps"])
        ok = ok and found and not extra
        if as_json:
            print(json.dumps(row))
            continue
        dflt = (f"{'yes' if d_found else 'NO':>12} {d['seconds'] * 1e3:6.0f} {d['peak_mb']:5.0f}"
                if d is not None else f"{'-':>12}")
        print(f"{lines:6d} {lr:5.1f} | {r['seconds'] * 1e3:6.0f} {r['median'] * 1e3:6.0f} "
              f"{r['cpu_seconds'] * 1e3:6.0f} "
              f"{t_x:6.2f} {t_x / lr:6.2f} | {r['peak_mb']:7.0f} {m_x:5.2f} {m_x / lr:6.2f} "
              f"{m_net_x / lr:8.2f} | {r['steps']:8d} {s_x:6.2f} {s_x / lr:6.2f} | "
              f"{'yes' if found else 'NO':>3} | {dflt}")
        if extra:
            print(f"  FALSE ALARM(S) before the last line: {extra}", file=sys.stderr)
    if not as_json:
        print("ms, med = wall time, min and median; cpu ms = the least CPU time of the process "
              "(less sensitive to other load); x = ratio to the smallest size (time: of the CPU "
              "minima); growth = x / (lines / lines of the smallest): 1.0 = linear; g(-base) = "
              "the same for the analysis' own memory (peak - base MB)")
        print("bug = the last line's error reported with big budgets; default = the same file "
              "with the default settings (one run: its ms and peak MB)")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000, 20000],
                    help="target line counts of the generated files")
    ap.add_argument("--write", type=Path, metavar="DIR", help="write the files to DIR (kept)")
    ap.add_argument("--verify", action="store_true",
                    help="run the smallest file under torch: it must raise at its last line")
    ap.add_argument("--python", default=default_python(),
                    help="the interpreter with torch for --verify")
    ap.add_argument("--analyser", default=sys.executable, metavar="PYTHON",
                    help="the interpreter whose shape_lint is measured (default: this one)")
    ap.add_argument("--runs", type=int, default=3,
                    help="analyses per size, in its subprocess (the time shown: the minimum)")
    ap.add_argument("--no-default", action="store_true",
                    help="skip the run with the default settings")
    ap.add_argument("--json", action="store_true", help="print one JSON object per size")
    args = ap.parse_args(argv)
    if min(args.sizes) < UNIT_LINES + HEADER_LINES:
        ap.error(f"--sizes must be at least {UNIT_LINES + HEADER_LINES}")
    if args.runs < 1:
        ap.error("--runs must be positive")
    return run(args.sizes, args.write, args.verify, args.python, args.analyser, args.runs,
               args.json, not args.no_default)


if __name__ == "__main__":
    sys.exit(main())
