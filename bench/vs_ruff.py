#!/usr/bin/env python3
"""``shape-lint check`` against ``ruff check`` on real model code: the wall-time ratio.

The corpus is transformers' ``models/*/modeling_*.py`` files plus torchvision's ``models/``
sources, read out of their wheels: ``python -m pip download --no-deps`` fetches them into the
cache that ``robustness.py --libs`` uses (``--libs-cache``, default
``$XDG_CACHE_HOME/shape-lint/robustness-libs``; its code is reused) and the files are
extracted once into a folder beside it (``vs-ruff/<versions>/``, with a ``pyproject.toml`` on
top so that it is a project, as a checkout of the library would be). Nothing is installed or
vendored. ``--corpus DIR`` takes a directory instead (the test suite's quick form).

Then ``--rounds`` paired runs (default 5), interleaved (each round runs both, the order
alternating between rounds, so that load from other processes spreads evenly), from the
corpus root:

    shape-lint check -n .                          (every file analysed: caches off)
    ruff check --no-cache --select F .             (pyflakes' rules, the closest to ours)

It prints the load average, each pair's wall and CPU times (user + system, every thread) and
their ratios, and the median (and min) of the ratios against the target: shape-lint within 4x
of ruff. On a shared machine the wall ratio depends on the CPU share each run gets; the CPU
ratio does not, and is what the wall ratio tends to when both keep every core busy. It also shows what shape-lint reported
on the corpus (findings on published library code are false-alarm candidates) and how many
files a budget cut short (``warning: PATH: analysis incomplete: REASON`` lines). ``--profile``
adds ``cli_profile.py``'s split of a ``--jobs 1`` run (start-up, discovery, core, the GIL-held
Python side, output). ``--jobs N`` is passed to shape-lint.

Exit status: 0; 1 when a run failed (an exit status other than 0 or 1) or ruff is missing;
2 when the wheels cannot be fetched.

    python bench/vs_ruff.py                        # transformers 5.24.0 + torchvision 0.29.2
    python bench/vs_ruff.py --libs transformers==5.24.0 torchvision==0.29.2 --rounds 7
    python bench/vs_ruff.py --corpus tests/fixtures/conv --rounds 1
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_repos import CUT_RE, FINDING_RE, shape_lint_cmd, timed, warm_up  # noqa: E402
from robustness import fetch_lib, libs_cache  # noqa: E402

TARGET_RATIO = 4.0
DEFAULT_LIBS = ["transformers==5.24.0", "torchvision==0.29.2"]
# which members of each wheel form the corpus
MEMBERS = {
    "transformers": re.compile(r"transformers/models/[^/]+/modeling_[^/]*\.py"),
    "torchvision": re.compile(r"torchvision/models/.*\.py"),
}


def build_corpus(specs: list[str], cache: Path) -> Path:
    """The corpus folder for ``specs``, extracted from their wheels when not there yet."""
    wheels = []
    for spec in specs:
        whl, how = fetch_lib(spec, cache)
        if whl is None:
            raise SystemExit(f"vs_ruff: {spec}: {how}")
        wheels.append(whl)
    label = "+".join("-".join(w.name.split("-")[:2]) for w in wheels)
    root = cache.parent / "vs-ruff" / label
    done = root / ".complete"
    if done.is_file():
        return root
    if root.exists():
        shutil.rmtree(root)
    for whl in wheels:
        name = whl.name.split("-")[0].lower()
        pattern = MEMBERS.get(name)
        with zipfile.ZipFile(whl) as zf:
            for m in zf.namelist():
                if pattern is not None and not pattern.fullmatch(m):
                    continue
                if pattern is None and not m.endswith(".py"):
                    continue
                target = root / m
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(m))
    (root / "pyproject.toml").write_text('[project]\nname = "vs-ruff-corpus"\n', encoding="utf-8")
    done.write_text(" ".join(w.name for w in wheels) + "\n", encoding="utf-8")
    return root


def ruff_cmd() -> list[str] | None:
    script = Path(sys.executable).parent / "ruff"
    if script.is_file():
        return [str(script)]
    found = shutil.which("ruff")
    if found:
        return [found]
    try:  # the ruff package of this Python, its binary installed elsewhere (a .pth'd venv)
        from ruff.__main__ import find_ruff_bin

        return [str(find_ruff_bin())]
    except (ImportError, FileNotFoundError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--libs", nargs="+", metavar="SPEC", default=DEFAULT_LIBS,
                    help=f"the wheels of the corpus (default: {' '.join(DEFAULT_LIBS)})")
    ap.add_argument("--libs-cache", metavar="DIR", help="where the wheels are kept (robustness.py's cache)")
    ap.add_argument("--corpus", metavar="DIR", help="check this directory instead of the wheels' files")
    ap.add_argument("--rounds", type=int, default=5, metavar="N", help="paired runs (default 5)")
    ap.add_argument("--cmd", metavar="CMD", help="the shape-lint command (default: the one of this Python)")
    ap.add_argument("--jobs", type=int, metavar="N", help="passed to shape-lint check --jobs")
    ap.add_argument("--profile", action="store_true", help="also split a --jobs 1 run's time (cli_profile.py)")
    args = ap.parse_args(argv)

    ruff = ruff_cmd()
    if ruff is None:
        print("vs_ruff: ruff is not installed (pip install ruff)", file=sys.stderr)
        return 1
    if args.corpus:
        corpus = Path(args.corpus).resolve()
    else:
        corpus = build_corpus(args.libs, libs_cache(args))
    files = sorted(p for p in corpus.rglob("*.py") if p.is_file())
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    sl = [*shape_lint_cmd(args.cmd), "check", "-n", "--output-format", "concise"]
    if args.jobs is not None:
        sl += ["--jobs", str(args.jobs)]
    sl.append(".")
    rf = [*ruff, "check", "--no-cache", "--select", "F", "--output-format", "concise", "."]
    version = subprocess.run([*ruff, "--version"], capture_output=True, text=True).stdout.strip()
    warm_up(shape_lint_cmd(args.cmd))

    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"corpus: {corpus} ({len(files)} files, {lines} lines)")
    print(f"shape-lint: {' '.join(sl)}")
    print(f"ruff:       {' '.join(rf)}  ({version})\n")
    print(f"{'round':>5} {'shape-lint s':>12} {'cpu s':>6} {'ruff s':>7} {'cpu s':>6} {'ratio':>6} {'cpu ratio':>9}")
    ratios, sl_times, rf_times, cpu_ratios, sl_cpu, rf_cpu = [], [], [], [], [], []
    failed = False
    found: list[str] = []
    cut: list[str] = []
    for r in range(args.rounds):
        pair, cpu = {}, {}
        for which in (("sl", "rf") if r % 2 == 0 else ("rf", "sl")):
            wall, cpu[which], rc, out, err = timed(sl if which == "sl" else rf, corpus)
            if rc not in (0, 1):
                failed = True
                tail = " | ".join(err.strip().splitlines()[-3:])
                print(f"error: {'shape-lint' if which == 'sl' else 'ruff'} exited {rc}: {tail}")
            if which == "sl":
                found = [ln for ln in out.splitlines() if FINDING_RE.match(ln)]
                cut = [ln for ln in err.splitlines() if CUT_RE.match(ln)]
            pair[which] = wall
        ratio = pair["sl"] / pair["rf"] if pair["rf"] > 0 else float("inf")
        cpu_ratio = cpu["sl"] / cpu["rf"] if cpu["rf"] > 0 else float("inf")
        ratios.append(ratio)
        cpu_ratios.append(cpu_ratio)
        sl_times.append(pair["sl"])
        rf_times.append(pair["rf"])
        sl_cpu.append(cpu["sl"])
        rf_cpu.append(cpu["rf"])
        print(f"{r + 1:>5} {pair['sl']:>12.2f} {cpu['sl']:>6.2f} {pair['rf']:>7.2f} {cpu['rf']:>6.2f} "
              f"{ratio:>5.1f}x {cpu_ratio:>8.1f}x")
    med = statistics.median(ratios)
    med_cpu = statistics.median(cpu_ratios)
    print(f"{'median':>5} {statistics.median(sl_times):>12.2f} {statistics.median(sl_cpu):>6.2f} "
          f"{statistics.median(rf_times):>7.2f} {statistics.median(rf_cpu):>6.2f} {med:>5.1f}x {med_cpu:>8.1f}x")
    print(f"{'min':>5} {min(sl_times):>12.2f} {min(sl_cpu):>6.2f} {min(rf_times):>7.2f} {min(rf_cpu):>6.2f} "
          f"{min(ratios):>5.1f}x {min(cpu_ratios):>8.1f}x")
    verdict = "within" if med <= TARGET_RATIO else "over"
    print(f"\nmedian ratio {med:.1f}x: {verdict} the {TARGET_RATIO:.0f}x target "
          f"({med / TARGET_RATIO:.2f}x the target); shape-lint {len(files) / statistics.median(sl_times):.1f} files/s")
    print(f"median CPU-time ratio {med_cpu:.1f}x (what the wall ratio tends to on an idle machine where "
          f"both keep every core busy; on a shared one each gets the share the others leave it)")
    print(f"shape-lint: {len(found)} finding(s), {len(cut)} file(s) cut by a budget")
    for line in found:
        print(f"  {line}")
    for line in cut:
        print(f"  {line}")
    if args.profile:
        profile(corpus)
    return 1 if failed else 0


def profile(corpus: Path) -> None:
    """cli_profile.py's split of one --jobs 1 run over the corpus."""
    import json

    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(HERE / "cli_profile.py"), "--json", "--", "check", "-n", "--jobs", "1", "."],
        cwd=corpus, capture_output=True, text=True,
    )
    wall = time.perf_counter() - t0
    try:
        p = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"\nprofile failed: {proc.stderr.strip()[-300:]}")
        return
    p["startup"] += max(0.0, wall - p["total"])
    files = max(1, p["files"])
    print(f"\nprofile (in-process, --jobs 1): {p['files']} files, {wall:.2f} s")
    for key in ("startup", "discover", "core", "z3", "python", "output"):
        print(f"  {key:<9} {p[key]:8.3f} s  {p[key] / wall:6.1%}")
    print(f"  python per file: {1000 * p['python'] / files:.2f} ms; python / core: "
          f"{(p['python'] / p['core'] if p['core'] else 0):.1%} (the part that holds the GIL)")


if __name__ == "__main__":
    sys.exit(main())
