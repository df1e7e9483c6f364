#!/usr/bin/env python3
"""flake8 overhead benchmark: what the SHP plugin adds to a real ``flake8`` run.

The corpus is every ``.py`` file under ``tests/fixtures`` plus ``../shared/eval-dev/cases``
(relative to the repository; skipped when absent). flake8 runs as a subprocess, with
``--jobs=1`` and with the default ``--jobs`` (auto), in three configurations:

* ``no plugin``: flake8 with the shape-lint plugin taken out of plugin discovery,
  ``--select=E,F,W``;
* ``SHP unselected``: plain ``--select=E,F,W`` with the plugin installed (check run only);
* ``plugin``: ``--select=E,F,W,SHP``.

``--select`` only filters what flake8 *reports*: flake8 still loads and runs every installed
plugin, so ``--select=E,F,W`` is not a plugin-free baseline (and ``--enable-extensions`` only
concerns plugins that are off by default, which shape-lint is not). The baseline therefore
runs flake8's own entry point (``flake8.main.cli.main``, exactly what the ``flake8`` script
calls) with ``flake8.plugins.finder.find_plugins`` wrapped to drop the plugin whose entry
point is ``SHP``; the other two configurations run the same launcher without dropping
anything, so all three share the same start-up path. Before timing, a check run of each
configuration (``--jobs=1``) counts the plugin's calls to the Rust core and the SHP lines
reported, which shows which configurations really run the plugin, and its wall time (one
run each, so only a rough ratio).

The timed runs compare ``no plugin`` with ``plugin``, interleaved (one run of each per round
and ``--jobs`` value) so that load from other processes spreads evenly. The table shows the
median (and minimum) wall time and the ratio plugin / no plugin; for scale it also shows the
in-process time of ``_core.check_source`` over the corpus as a fraction of the no-plugin run
(a lower bound of the overhead: flake8 also spends time on the plugin's reports, e.g. its
``# noqa`` scan of every file with a finding).

    python bench/flake8_overhead.py              # check run + 3 rounds
    python bench/flake8_overhead.py --rounds 5 --no-check
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS_DIRS = [REPO / "tests" / "fixtures", REPO.parent / "shared" / "eval-dev" / "cases"]

# Run flake8's own CLI entry point in this interpreter. argv[1] is the mode:
#   keep  - plugins as installed
#   drop  - the plugin whose entry point is SHP is removed from discovery
#   count - as keep, and print the number of calls to the Rust core to stderr
LAUNCHER = r"""
import sys
mode = sys.argv.pop(1)
if mode == "drop":
    import flake8.plugins.finder as finder
    _find = finder.find_plugins
    def find_plugins(cfg, opts):
        return [p for p in _find(cfg, opts) if p.entry_point.name != "SHP"]
    finder.find_plugins = find_plugins
elif mode == "count":
    import atexit
    import shape_lint.flake8_plugin as plugin
    calls = [0]
    _check = plugin._check_source
    def counting(*args, **kwargs):
        calls[0] += 1
        return _check(*args, **kwargs)
    plugin._check_source = counting
    atexit.register(lambda: sys.stderr.write(f"SHP-CALLS {calls[0]}\n"))
from flake8.main.cli import main
sys.argv[0] = "flake8"
sys.exit(main())
"""

CONFIGS = [
    # (label, launcher mode, flake8 --select)
    ("no plugin", "drop", "E,F,W"),
    ("SHP unselected", "keep", "E,F,W"),
    ("plugin", "keep", "E,F,W,SHP"),
]


def corpus_dirs() -> list[Path]:
    return [d for d in CORPUS_DIRS if d.is_dir()]


def corpus_files(dirs: list[Path]) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.py"))


def flake8_cmd(mode: str, select: str, jobs: str | None, dirs: list[Path]) -> list[str]:
    cmd = [sys.executable, "-c", LAUNCHER, mode, f"--select={select}"]
    if mode != "drop":
        # the analysis itself, every round: the results cache would answer rounds after the
        # first (bench/project.py measures the cache)
        cmd.append("--shp-no-cache")
    if jobs is not None:
        cmd.append(f"--jobs={jobs}")
    return cmd + [str(d) for d in dirs]


def run(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    dt = time.perf_counter() - t0
    if proc.returncode not in (0, 1):  # 1 = violations found
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"flake8 failed (exit {proc.returncode}): {' '.join(cmd[3:])}")
    return dt, proc


def check_configs(dirs: list[Path]) -> None:
    """One --jobs=1 run per configuration: plugin calls, plugin listed, lines reported."""
    print("check run (--jobs=1, one run each): does the configuration run the plugin?")
    print(f"  {'config':<16} {'--select':<10} {'loaded':>6} {'core calls':>10} {'SHP lines':>9} "
          f"{'other lines':>11} {'wall s':>7} {'x no plugin':>11}")
    base = None
    for label, mode, select in CONFIGS:
        dt, proc = run(flake8_cmd("count" if mode == "keep" else mode, select, "1", dirs))
        base = base or dt
        calls = next((int(line.split()[1]) for line in proc.stderr.splitlines()
                      if line.startswith("SHP-CALLS ")), 0)
        lines = proc.stdout.splitlines()
        shp = sum(1 for line in lines if ": SHP" in line)
        _, ver = run(flake8_cmd(mode, select, None, []) + ["--version"])
        loaded = "yes" if "shape-lint" in ver.stdout else "no"
        print(f"  {label:<16} {select:<10} {loaded:>6} {calls:>10} {shp:>9} "
              f"{len(lines) - shp:>11} {dt:7.3f} {dt / base:11.3f}")
    print()


def core_time(files: list[Path]) -> float:
    """In-process time of the plugin's analysis over the corpus (the same defaults as flake8)."""
    from shape_lint import _core

    sources = [(p.read_text(encoding="utf-8"), str(p)) for p in files]
    for src, name in sources:  # warm-up
        _core.check_source(src, name)
    t0 = time.perf_counter()
    for src, name in sources:
        _core.check_source(src, name)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3,
                    help="timed runs of each timed configuration and --jobs value (default 3)")
    ap.add_argument("--no-check", action="store_true", help="skip the check run")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be positive")

    dirs = corpus_dirs()
    files = corpus_files(dirs)
    if not files:
        print("empty corpus: no tests/fixtures or ../shared/eval-dev/cases")
        return 1
    lines = sum(p.read_text(encoding="utf-8").count("\n") for p in files)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    from flake8 import __version__ as flake8_version

    print(f"flake8 {flake8_version}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {load} (times are noisy under load)")
    sources = ", ".join(os.path.relpath(d, REPO) for d in dirs)
    print(f"corpus: {len(files)} files, {lines} lines from {sources}")
    missing = [os.path.relpath(d, REPO) for d in CORPUS_DIRS if d not in dirs]
    if missing:
        print(f"skipped (absent): {', '.join(missing)}")
    print()
    if not args.no_check:
        check_configs(dirs)

    timed = [CONFIGS[0], CONFIGS[2]]  # no plugin, plugin
    jobs_values = [("1", "--jobs=1"), (None, "--jobs default")]
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for jobs, jlabel in jobs_values:
            for label, mode, select in timed:
                dt, _ = run(flake8_cmd(mode, select, jobs, dirs))
                times.setdefault((jlabel, label), []).append(dt)

    core = core_time(files)
    print(f"wall time of one flake8 run over the corpus, {args.rounds} rounds (interleaved)")
    print(f"  {'jobs':<15} {'no plugin s':>11} {'plugin s':>9} {'plugin/no plugin':>16} "
          f"{'min no plugin s':>15} {'min plugin s':>12} {'ratio of minima':>15}")
    for _, jlabel in jobs_values:
        off, on = times[(jlabel, timed[0][0])], times[(jlabel, timed[1][0])]
        m_off, m_on = statistics.median(off), statistics.median(on)
        print(f"  {jlabel:<15} {m_off:11.3f} {m_on:9.3f} {m_on / m_off:16.3f} "
              f"{min(off):15.3f} {min(on):12.3f} {min(on) / min(off):15.3f}")
    print("  (first three columns: medians; last three: minima, less sensitive to other load)")
    base1 = statistics.median(times[("--jobs=1", timed[0][0])])
    print(f"for scale: _core.check_source over the corpus in-process = {core * 1e3:.1f} ms = "
          f"{core / base1:.3f} x the median no-plugin --jobs=1 run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
