"""The torch oracle's runs of the fixtures, once per pytest session (not a test module).

Each fixture runs in its own process through ``oracle_runner.py`` (which reports the traceback
and the model calls forward hooks saw, as JSON), in a temporary working directory, with a 60 s
timeout: forked from a server that imported torch once, where processes fork (a fresh
interpreter each, else); the runs are concurrent, one per core, single-threaded. A report is kept
for the rest of the session: ``test_oracle.py`` (is the traceback where the markers say?) and
``test_summary.py`` (does ``shape-lint summary`` agree with the hooks?) read the same run, so
no fixture runs under torch twice.
"""
import atexit
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES_DIR = HERE / "fixtures"
RUNNER = HERE / "oracle_runner.py"
TIMEOUT_S = 60

_REPORTS = {}


def fixture_id(path):
    return path.relative_to(FIXTURES_DIR).as_posix()


_SERVERS = threading.local()
_STARTED = []


def _server():
    """This thread's fork server (``oracle_runner.py --serve``), started on first use."""
    proc = getattr(_SERVERS, "proc", None)
    if proc is None or proc.poll() is not None:
        proc = subprocess.Popen(
            [sys.executable, str(RUNNER), "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"),  # runs are concurrent
        )
        _SERVERS.proc = proc
        _STARTED.append(proc)
    return proc


@atexit.register
def _stop_servers():
    for proc in _STARTED:
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait(timeout=10)


def _run_forked(path, workdir, report, replace=None):
    """Run one fixture in a child of this thread's fork server: (exit status or "timeout",
    its output). ``None`` when the server is gone."""
    output = workdir / "output.txt"
    proc = _server()
    try:
        proc.stdin.write(json.dumps({"fixture": str(path), "report": str(report), "cwd": str(workdir), "output": str(output), "timeout": TIMEOUT_S, "replace": replace}) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
    except (BrokenPipeError, OSError):
        return None
    if not line:
        return None
    text = output.read_text(errors="replace") if output.exists() else ""
    return json.loads(line)["status"], text


def run_fixture(path, workdir, replace=None):
    """Run one fixture through the runner; return its report (see oracle_runner.py). With
    `replace` (``{"model", "shapes"}``), the first call of that model class gets inputs of those
    sizes (where processes fork only; else the report has ``skip``). Where
    processes fork, it runs in a child of a fork server that imported torch once (the same
    fresh interpreter state for each fixture, without paying torch's import each time)."""
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / "report.json"
    forked = _run_forked(path, workdir, report, replace) if hasattr(os, "fork") else None
    if replace is not None and forked is None:
        return {"ok": False, "skip": "inputs are replaced in a forked run only", "frames": [], "calls": []}
    if forked is not None:
        status, output = forked
        if status == "timeout":
            return {"ok": False, "exc_type": "Timeout", "frames": [], "output": "", "calls": [],
                    "error": "timed out after %d s" % TIMEOUT_S}
        if not report.exists():
            return {"ok": False, "exc_type": "RunnerCrashed", "frames": [], "calls": [],
                    "error": "runner exited with %s and wrote no report" % status, "output": output}
        out = json.loads(report.read_text())
        out["output"] = output[-3000:]
        return out
    try:
        proc = subprocess.run(
            [sys.executable, str(RUNNER), str(path), str(report)],
            cwd=workdir, capture_output=True, text=True, timeout=TIMEOUT_S,
            env=dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"),  # runs are concurrent
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "exc_type": "Timeout", "frames": [], "output": "", "calls": [],
                "error": "timed out after %d s" % TIMEOUT_S}
    if not report.exists():
        return {"ok": False, "exc_type": "RunnerCrashed", "frames": [], "calls": [],
                "error": "runner exited with %d and wrote no report" % proc.returncode,
                "output": proc.stdout + proc.stderr}
    out = json.loads(report.read_text())
    out["output"] = (proc.stdout + proc.stderr)[-3000:]
    return out


def reports(paths, base):
    """``{path: report}`` for `paths`: the ones not run yet in this session run now, under
    `base` (a temporary directory), concurrently."""
    todo = sorted({Path(p) for p in paths} - set(_REPORTS))

    def one(path):
        return path, run_fixture(path, Path(base) / fixture_id(path).replace("/", "__")[:-3])

    if todo:
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            _REPORTS.update(pool.map(one, todo))
    return {Path(p): _REPORTS[Path(p)] for p in paths}


def for_module(request, module, base):
    """The reports of the fixtures that the tests of `module` (a test module's ``__name__``)
    selected in this session take as ``path``, run under `base` (a module-scoped ``reports``
    fixture's answer)."""
    selected = sorted({item.callspec.params["path"] for item in request.session.items
                       if item.module.__name__ == module and getattr(item, "callspec", None) and "path" in item.callspec.params})
    return reports(selected, base)
