"""The same findings whatever the parallelism and the load: ``shape-lint check -n`` over the
repository's own corpus (``tests/projects`` and ``tests/fixtures``) with ``--jobs 1``, with
``--jobs`` = every core, and with every core busy with a CPU hog beside it (busy-looping
subprocesses started before the run and killed after) must print the same JSON records.

A budget measured in wall-clock time would make the third run lose findings on a slow or busy
machine; an analysis that depended on the order of the files or on another thread's state would
make the first two differ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = [HERE / "projects", HERE / "fixtures"]
HOG = "while True:\n    pass\n"


def shape_lint(*args: str) -> list:
    exe = Path(sys.executable).with_name("shape-lint")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "shape_lint.cli"]
    r = subprocess.run(
        [*cmd, "check", "-n", "--isolated", "--output-format", "json", *args, *map(str, CORPUS)],
        cwd=HERE.parent, capture_output=True, text=True, timeout=600,
    )
    assert r.returncode in (0, 1), r.stderr[-2000:]
    records = json.loads(r.stdout)
    return sorted(records, key=lambda d: json.dumps(d, sort_keys=True))


def summary(records: list) -> str:
    return "\n".join(f"{d['filename']}:{d['location']['row']}: {d['code']}" for d in records)


def test_findings_do_not_depend_on_jobs_or_load():
    cores = os.cpu_count() or 1
    sequential = shape_lint("--jobs", "1")
    parallel = shape_lint("--jobs", str(cores))
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(cores)]
    try:
        loaded = shape_lint()  # the default: every core, each shared with a hog
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()
    assert sequential, "the corpus gives findings: the comparison means something"
    assert summary(parallel) == summary(sequential)
    assert parallel == sequential
    assert summary(loaded) == summary(sequential)
    assert loaded == sequential
