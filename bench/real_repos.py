#!/usr/bin/env python3
"""Throughput of ``shape-lint check`` on real training repositories, the way a user runs it.

Given directories whose subdirectories are repository checkouts (``--root DIR``, repeatable;
default: ``$SHAPE_LINT_REPOS``, directories separated by ``os.pathsep``), it runs
``shape-lint check -n .`` from each checkout's root as a subprocess (the caches off, so every
file is analysed) and prints, with the load average first:

* per repository: the files checked, the findings, the wall time, files/s and its ratio to the
  target (100 files/s), the CPU time of the run (user + system, every thread) and its ratio to
  the wall time (how many cores it kept busy: on a shared machine, the share it got), and the
  files whose analysis a budget cut short (the CLI's ``warning: PATH: analysis incomplete:
  REASON`` lines on stderr);
* the total: files, seconds, files/s and the ratio to the target.

Then it lists every finding, each prefixed with its repository, so that they can be read (on
correct, published code any finding is a false-alarm candidate). The repositories are not part
of this repository and must never be committed.

``--cmd`` runs another build (``--cmd /work/venv/bin/shape-lint`` for a before/after pair);
``--against CMD`` runs a second build beside it, the two alternating in each repository's rounds,
and prints their times side by side (minimum of the rounds), the ratio, and every finding or
cut that differs between them;
``--jobs N`` is passed to ``shape-lint check``; ``--rounds N`` runs each repository N times and
shows the median (and the minimum) wall time. ``--profile`` adds, per repository, an in-process
``--jobs 1`` run that splits the time between the interpreter's start-up and imports, the core
(``_core`` calls, the GIL released), and the Python side of each file (reading, decoding,
noqa, selection: the part that holds the GIL), see ``cli_profile.py``.

Exit status: 1 with ``--strict`` when a file was cut by a budget or a run failed (exit 2 of
shape-lint, or no repository found), else 0.

    python bench/real_repos.py --root /tmp/real --root /tmp/real2
    SHAPE_LINT_REPOS=/tmp/real python bench/real_repos.py --jobs 1 --strict
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET_FILES_PER_S = 100.0
# `warning: PATH: analysis incomplete: REASON`, one line per file a budget cut short
CUT_RE = re.compile(r"^warning: (?P<path>.+?): analysis incomplete: (?P<reason>.*)$")
# a concise finding: `path:row:col: SHP101 message`
FINDING_RE = re.compile(r"^(?P<path>.+?):(?P<row>\d+):(?P<col>\d+): (?P<code>SHP\d+) ")


@dataclass
class RepoRun:
    name: str
    files: int
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    profile: dict[str, float] | None = None
    # with --against: the other build's wall times and findings, from the same rounds
    base_times: list[float] = field(default_factory=list)
    base_findings: list[str] = field(default_factory=list)
    base_cut: list[str] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(self.times)


def shape_lint_cmd(cmd: str | None) -> list[str]:
    """The command that runs ``shape-lint``: ``--cmd``, else the console script next to this
    interpreter, else ``python -m shape_lint.cli``."""
    if cmd:
        return cmd.split()
    script = Path(sys.executable).parent / "shape-lint"
    if script.is_file():
        return [str(script)]
    found = shutil.which("shape-lint")
    return [found] if found else [sys.executable, "-m", "shape_lint.cli"]


def count_files(repo: Path) -> int:
    """The files ``shape-lint check .`` checks from ``repo`` (its own discovery and settings)."""
    from shape_lint import cli
    from shape_lint import config as cfg

    here = os.getcwd()
    try:
        os.chdir(repo)
        try:
            settings = cfg.load_settings(None)
        except cfg.ConfigError:
            settings = cfg.Settings(project_root=repo)
        return len(cli.discover(["."], settings, force_exclude=False).files)
    finally:
        os.chdir(here)


def repositories(roots: list[str]) -> list[Path]:
    out = []
    for root in roots:
        base = Path(root).expanduser()
        if not base.is_dir():
            print(f"real_repos: {root}: not a directory", file=sys.stderr)
            continue
        out += sorted(d for d in base.iterdir() if d.is_dir() and not d.name.startswith("."))
    return out


def installed_env() -> dict[str, str]:
    """The environment of the timed runs: this one without ``PYTHONDONTWRITEBYTECODE``, so that
    the package's modules load from bytecode as those of an installed wheel do (pip compiles them
    at install). From a development checkout under that variable, each run would compile the
    CLI's modules from source again: about 30 ms per run, all of it start-up."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def warm_up(cmd: list[str]) -> None:
    """One untimed ``check`` of a one-line file: writes the bytecode of the modules a check
    imports (see ``installed_env``) and brings the package's files into the page cache."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "warm_up.py").write_text("x = 1\n", encoding="utf-8")
        subprocess.run([*cmd, "check", "-n", "."], cwd=tmp, capture_output=True, env=installed_env())


def timed(argv: list[str], cwd: Path) -> tuple[float, float, int, str, str]:
    """Wall time, CPU time (user + system, of every thread), exit status, stdout, stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace",
                          env=installed_env())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode, proc.stdout, proc.stderr


def run_once(cmd: list[str], repo: Path, jobs: int | None) -> tuple[float, float, int, str, str]:
    argv = [*cmd, "check", "-n", "--output-format", "concise"]
    if jobs is not None:
        argv += ["--jobs", str(jobs)]
    argv.append(".")
    return timed(argv, repo)


def profile_repo(repo: Path) -> dict[str, float] | None:
    """``cli_profile.py``'s split of one in-process ``--jobs 1`` run (a subprocess, so that its
    start-up is measured too)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(HERE / "cli_profile.py"), "--json", "--", "check", "-n", "--jobs", "1", "."],
        cwd=repo, capture_output=True, text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return None
    import json

    try:
        got = dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return None
    # the interpreter's own start-up happens before cli_profile can time anything
    got["startup"] += max(0.0, wall - got["total"])
    got["total"] = wall
    return got


def measure(repo: Path, cmd: list[str], args: argparse.Namespace, against: list[str] | None = None) -> RepoRun:
    run = RepoRun(repo.name, count_files(repo))
    if run.files == 0:
        return run  # a checkout without Python files (notebooks only): left out
    for k in range(args.rounds):
        if against is not None and k % 2 == 0:
            # the two builds alternate, each first in every other round: a drift of the host's
            # speed within the run falls on both
            measure_against(run, against, repo, args)
        wall, cpu, rc, out, err = run_once(cmd, repo, args.jobs)
        run.times.append(wall)
        run.cpu.append(cpu)
        if rc not in (0, 1):
            tail = " | ".join(err.strip().splitlines()[-3:])
            run.errors.append(f"exit {rc}: {tail}")
        run.findings = [ln for ln in out.splitlines() if FINDING_RE.match(ln)]
        run.cut = [ln for ln in err.splitlines() if CUT_RE.match(ln)]
        if against is not None and k % 2 == 1:
            measure_against(run, against, repo, args)
    if args.profile:
        run.profile = profile_repo(repo)
    return run


def measure_against(run: RepoRun, against: list[str], repo: Path, args: argparse.Namespace) -> None:
    wall, _, _, out, err = run_once(against, repo, args.jobs)
    run.base_times.append(wall)
    run.base_findings = [ln for ln in out.splitlines() if FINDING_RE.match(ln)]
    run.base_cut = [ln for ln in err.splitlines() if CUT_RE.match(ln)]


def report_against(runs: list[RepoRun], width: int) -> None:
    """``--against``: the other build's times beside this one's (minimum of the rounds), their
    ratio, and every finding or cut that differs."""
    print("\nagainst the other build (min of the rounds, the builds alternating):")
    head = f"{'repository':<{width}} {'other s':>8} {'this s':>8} {'this/other':>10}"
    print(head)
    for r in runs:
        a, b = min(r.base_times), min(r.times)
        print(f"{r.name:<{width}} {a:>8.2f} {b:>8.2f} {(b / a if a > 0 else 0):>10.2f}")
    a = sum(min(r.base_times) for r in runs)
    b = sum(min(r.times) for r in runs)
    files = sum(r.files for r in runs)
    print(f"{'TOTAL':<{width}} {a:>8.2f} {b:>8.2f} {(b / a if a > 0 else 0):>10.2f}")
    print(f"files/s: {files / a:.1f} -> {files / b:.1f}")
    differ = [(r.name, "-", x) for r in runs for x in sorted(set(r.base_findings + r.base_cut) - set(r.findings + r.cut))]
    differ += [(r.name, "+", x) for r in runs for x in sorted(set(r.findings + r.cut) - set(r.base_findings + r.base_cut))]
    print(f"findings and cuts that differ: {len(differ)}")
    for name, sign, line in differ:
        print(f"  {sign} {name}/{line}")


def fmt_ratio(files_per_s: float) -> str:
    return f"{files_per_s / TARGET_FILES_PER_S:.2f}x"


def report(runs: list[RepoRun], args: argparse.Namespace) -> None:
    width = max([len("repository")] + [len(r.name) for r in runs])
    med = "median s" if args.rounds > 1 else "s"
    head = (f"{'repository':<{width}} {'files':>5} {'found':>5} {med:>8} {'min s':>6} {'files/s':>8} {'x target':>8} "
            f"{'cpu s':>7} {'cpu/wall':>8} {'cut':>4}")
    print(head)
    print("-" * len(head))
    for r in runs:
        fps = r.files / r.wall if r.wall > 0 else 0.0
        cpu = statistics.median(r.cpu)
        err = "  ERROR" if r.errors else ""
        print(f"{r.name:<{width}} {r.files:>5} {len(r.findings):>5} {r.wall:>8.2f} {min(r.times):>6.2f} "
              f"{fps:>8.1f} {fmt_ratio(fps):>8} {cpu:>7.2f} {(cpu / r.wall if r.wall > 0 else 0):>8.2f} "
              f"{len(r.cut):>4}{err}")
    files = sum(r.files for r in runs)
    wall = sum(r.wall for r in runs)
    cpu = sum(statistics.median(r.cpu) for r in runs)
    fps = files / wall if wall > 0 else 0.0
    cut = sum(len(r.cut) for r in runs)
    print("-" * len(head))
    print(f"{'TOTAL':<{width}} {files:>5} {sum(len(r.findings) for r in runs):>5} {wall:>8.2f} "
          f"{sum(min(r.times) for r in runs):>6.2f} {fps:>8.1f} {fmt_ratio(fps):>8} {cpu:>7.2f} "
          f"{(cpu / wall if wall else 0):>8.2f} {cut:>4}")
    print(f"\ntotal: {files} files in {wall:.2f} s = {fps:.1f} files/s, {fmt_ratio(fps)} the target of "
          f"{TARGET_FILES_PER_S:.0f} files/s; {cut} file(s) cut by a budget")
    if args.profile:
        report_profile(runs, width)
    if args.against:
        report_against(runs, width)
    for r in runs:
        for e in r.errors:
            print(f"error: {r.name}: {e}")
    cuts = [(r.name, c) for r in runs for c in r.cut]
    if cuts:
        print("\nfiles cut by a budget:")
        for name, line in cuts:
            print(f"  {name}/{CUT_RE.match(line).group('path')}: {CUT_RE.match(line).group('reason')}")  # type: ignore[union-attr]
    found = [(r.name, f) for r in runs for f in r.findings]
    if found and not args.no_findings:
        print(f"\nfindings ({len(found)}):")
        for name, line in found:
            print(f"  {name}/{line}")


def report_profile(runs: list[RepoRun], width: int) -> None:
    """Where a ``--jobs 1`` run's time goes, per repository and in total."""
    print("\nprofile (in-process, --jobs 1): start-up = interpreter + imports + settings, core = the "
          "_core calls (GIL released), python = the rest of each file's work (holds the GIL)")
    head = (f"{'repository':<{width}} {'wall s':>7} {'start-up':>8} {'discover':>8} {'core s':>7} "
            f"{'python s':>8} {'py ms/file':>10} {'python/core':>11} {'output':>7}")
    print(head)
    tot: dict[str, float] = {}
    nfiles = 0
    for r in runs:
        p = r.profile
        if not p:
            print(f"{r.name:<{width}} (profile failed)")
            continue
        for k, v in p.items():
            tot[k] = tot.get(k, 0.0) + float(v)
        nfiles += int(p["files"])
        print(_profile_line(r.name, p, width))
    if tot:
        tot["files"] = nfiles
        print(_profile_line("TOTAL", tot, width))


def _profile_line(name: str, p: dict[str, float], width: int) -> str:
    files = max(1, int(p["files"]))
    ratio = p["python"] / p["core"] if p["core"] > 0 else 0.0
    return (f"{name:<{width}} {p['total']:>7.2f} {p['startup']:>8.3f} {p['discover']:>8.3f} {p['core']:>7.2f} "
            f"{p['python']:>8.3f} {1000 * p['python'] / files:>10.2f} {ratio:>10.1%} {p['output']:>7.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", action="append", metavar="DIR",
                    help="a directory of repository checkouts (repeatable; default $SHAPE_LINT_REPOS)")
    ap.add_argument("--cmd", metavar="CMD", help="the shape-lint command (default: the one of this Python)")
    ap.add_argument("--against", metavar="CMD",
                    help="another build's command, run beside --cmd in alternation (before/after, paired)")
    ap.add_argument("--jobs", type=int, metavar="N", help="passed to shape-lint check --jobs")
    ap.add_argument("--rounds", type=int, default=1, metavar="N", help="runs per repository (median shown)")
    ap.add_argument("--profile", action="store_true", help="also split a --jobs 1 run's time (cli_profile.py)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a file was cut by a budget or a run failed")
    ap.add_argument("--no-findings", action="store_true", help="do not list the findings")
    args = ap.parse_args(argv)
    roots = args.root or [r for r in os.environ.get("SHAPE_LINT_REPOS", "").split(os.pathsep) if r]
    if not roots:
        ap.error("give --root DIR or set SHAPE_LINT_REPOS")
    repos = repositories(roots)
    cmd = shape_lint_cmd(args.cmd)
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"command: {' '.join(cmd)} check -n{'' if args.jobs is None else f' --jobs {args.jobs}'} .  "
          f"({len(repos)} repositories, cores: {os.cpu_count()})\n")
    warm_up(cmd)
    against = args.against.split() if args.against else None
    if against is not None:
        warm_up(against)
    runs = []
    for repo in repos:
        run = measure(repo, cmd, args, against)
        if run.files == 0:
            continue  # a checkout without Python files (notebooks only)
        runs.append(run)
    if not runs:
        print("real_repos: no repository with Python files found", file=sys.stderr)
        return 1 if args.strict else 0
    report(runs, args)
    failed = any(r.errors for r in runs) or any(r.cut for r in runs)
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
