#!/usr/bin/env python3
"""Where one ``shape-lint check`` run spends its time, measured in-process.

Runs ``shape_lint.cli.main(ARGS)`` (default ``check -n --jobs 1 .``) in this interpreter with
timers around its parts, and prints:

* ``startup``: importing ``shape_lint.cli`` plus the work of ``main`` before discovery (argument
  parsing, the rule registry, the settings); the interpreter's own start-up comes before this
  script can time anything (``real_repos.py --profile`` adds it, from the subprocess's wall time);
* ``discover``: finding the files (walk, excludes, ``.gitignore``);
* ``core``: the calls into the Rust core (``_core.check_source_parsed``, ``_core.syntax_errors``
  and the like), which run with the GIL released; ``z3``: the Z3 bridge (``solver.confirm``,
  ctypes calls that release the GIL too);
* ``python``: the rest of each file's work (reading, decoding, ``# noqa``, selection,
  building the diagnostics): the part that holds the GIL, so the part that threads cannot
  overlap; shown per file and as a share of the core's time;
* ``output``: rendering the report.

With ``--jobs 1`` (the default here) nothing waits for the GIL, so ``python`` is the GIL-held
time itself; with more jobs it also counts the waits. ``--json`` prints one JSON object instead
of the table (``real_repos.py --profile`` reads it).

    python bench/cli_profile.py                      # check -n --jobs 1 . from the cwd
    python bench/cli_profile.py -- check -n --jobs 1 some/dir
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from typing import Any, Callable  # noqa: E402

CORE_FUNCTIONS = ("check_source", "check_source_undecided", "check_source_parsed", "check_source_stats", "syntax_errors",
                  "analyze_source", "model_summary")


class Timers:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spent: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def add(self, key: str, seconds: float) -> None:
        with self.lock:
            self.spent[key] = self.spent.get(key, 0.0) + seconds
            self.calls[key] = self.calls.get(key, 0) + 1

    def wrap(self, key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(key, time.perf_counter() - t)

        return timed


def profile(argv: list[str]) -> dict[str, Any]:
    from shape_lint import _core, cli, solver

    t_import = time.perf_counter() - T0
    timers = Timers()
    for name in CORE_FUNCTIONS:
        fn = getattr(_core, name, None)
        if fn is not None:
            setattr(_core, name, timers.wrap("core", fn))
    solver.confirm = timers.wrap("z3", solver.confirm)
    cli.discover = timers.wrap("discover", cli.discover)
    cli._check_file = timers.wrap("file", cli._check_file)
    cli.render = timers.wrap("output", cli.render)
    cli.render_statistics = timers.wrap("output", cli.render_statistics)

    out, err = io.StringIO(), io.StringIO()
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    t = time.perf_counter()
    try:
        code = cli.main(argv)
    finally:
        sys.stdout, sys.stderr = real_out, real_err
    t_main = time.perf_counter() - t
    s = timers.spent
    files = timers.calls.get("file", 0)
    core, z3 = s.get("core", 0.0), s.get("z3", 0.0)
    in_main = s.get("discover", 0.0) + s.get("file", 0.0) + s.get("output", 0.0)
    return {
        "exit": code,
        "files": files,
        "total": time.perf_counter() - T0,
        "startup": t_import + max(0.0, t_main - in_main),
        "import": t_import,
        "discover": s.get("discover", 0.0),
        "core": core,
        "z3": z3,
        "python": max(0.0, s.get("file", 0.0) - core - z3),
        "output": s.get("output", 0.0),
        "stderr_lines": len(err.getvalue().splitlines()),
    }


def main() -> int:
    args = sys.argv[1:]
    as_json = "--json" in args
    args = [a for a in args if a != "--json"]
    if args and args[0] == "--":
        args = args[1:]
    argv = args or ["check", "-n", "--jobs", "1", "."]
    p = profile(argv)
    if p["exit"] not in (0, 1):
        print(f"cli_profile: shape-lint exited {p['exit']}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(p))
        return 0
    files = max(1, p["files"])
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"shape-lint {' '.join(argv)}: {p['files']} files, {p['total']:.3f} s in this process")
    for key in ("startup", "import", "discover", "core", "z3", "python", "output"):
        share = p[key] / p["total"] if p["total"] else 0.0
        print(f"  {key:<9} {p[key]:8.3f} s  {share:6.1%} of the run")
    print(f"  python per file: {1000 * p['python'] / files:.2f} ms; python / core: "
          f"{(p['python'] / p['core'] if p['core'] else 0):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
