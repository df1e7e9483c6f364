"""Run fixture projects' entry scripts as ``__main__`` and write what happened as JSON.

usage: python project_runner.py PROJECT_DIR ENTRY.py REPORT.json
       python project_runner.py --jobs JOBS.json

A run: the project directory becomes the working directory and the first entry of
``sys.path`` (as when one runs ``python ENTRY.py`` inside it) and ``sys.argv`` is ``[ENTRY.py]``,
so the script runs on its own argparse defaults. A project that uses torchvision gets
``fake_data.install()`` first (offline datasets, see fake_data.py); where torchvision cannot be
imported (see ``tests/torchvision_compat.py``) it is not run and the report has ``skip``, the
reason.

The report holds ``ok`` (bool: the script ran to completion or exited with status 0),
``exc_type``, ``error`` (``"Type: first line of the message"``), ``frames``: the traceback
as ``[[absolute file, line], ...]``, innermost first, all files included, and ``calls``: the
model calls as torch's forward hooks see them (``tests/forward_hooks.py``).

``--jobs`` runs many projects from one interpreter: JOBS.json is a list of
``{"project", "entry", "report", "log"}``. torch (and torchvision, once a job needs it) is
imported once, then each job runs in a child forked from that interpreter, so every run starts
from the same fresh state without paying torch's import again (several seconds, most of it
``torch._dynamo``, which every optimizer imports). A child's stdout and stderr go to ``log``;
a child still running after ``TIMEOUT_S`` is killed and reported as a ``Timeout``.
Used by ``test_projects.py``; it is not a test module itself.
"""
import json
import os
import runpy
import signal
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
TIMEOUT_S = 60

sys.path.insert(0, TESTS)  # for torchvision_compat and forward_hooks
import forward_hooks  # noqa: E402
import torchvision_compat  # noqa: E402

sys.path.insert(0, HERE)  # for fake_data
import fake_data  # noqa: E402


def uses_torchvision(project):
    for dirpath, _, filenames in os.walk(project):
        for name in filenames:
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    if "torchvision" in f.read():
                        return True
    return False


def write(report, out):
    with open(report, "w") as f:
        json.dump(out, f)


def run_one(project, entry, report):
    """Run ``entry`` of ``project`` in this interpreter and write its report."""
    project, report = os.path.abspath(project), os.path.abspath(report)
    script = os.path.join(project, entry)
    out = {"ok": True, "exc_type": None, "error": None, "frames": []}
    if uses_torchvision(project):
        if torchvision_compat.load() is None:
            # not a verdict: the project cannot run here (test_projects.py skips it with this reason)
            out.update(ok=False, skip=torchvision_compat.REASON)
            write(report, out)
            return
        fake_data.install()
    # The runner's own directories leave sys.path: the project sees itself first, as under python.
    sys.path[:] = [project] + [p for p in sys.path if p not in (HERE, TESTS)]
    sys.argv = [script]
    os.chdir(project)
    # the model calls as torch's forward hooks see them (test_projects.py compares
    # `shape-lint summary` of the entry script with them)
    out["calls"] = forward_hooks.install()
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            out.update(ok=False, exc_type="SystemExit", error="SystemExit: %s" % (e.code,))
    except BaseException as e:  # noqa: B902 - any failure of the project is data here
        lines = str(e).strip().splitlines()
        out.update(ok=False, exc_type=type(e).__name__,
                   error="%s: %s" % (type(e).__name__, lines[0] if lines else ""))
        frames = traceback.extract_tb(e.__traceback__)
        out["frames"] = [[os.path.abspath(f.filename), f.lineno] for f in reversed(frames)]
        traceback.print_exc()
    write(report, out)


def run_forked(job):
    """Run one job in a forked child; report a child that died or hung without a report."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            signal.alarm(TIMEOUT_S)  # default action: the child dies, the parent reports it
            run_one(job["project"], job["entry"], job["report"])
        except BaseException:  # noqa: B902 - the child must never return into the parent's loop
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if not os.path.exists(job["report"]):
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
            error = "timed out after %d s" % TIMEOUT_S
            kind = "Timeout"
        else:
            error = "runner child ended with status %d and wrote no report" % status
            kind = "RunnerCrashed"
        write(job["report"], {"ok": False, "exc_type": kind, "error": error, "frames": []})


def run_jobs(jobs_file):
    with open(jobs_file, encoding="utf-8") as f:
        jobs = json.load(f)
    import torch  # noqa: F401 - imported once here, inherited by every child
    import torch._dynamo  # noqa: F401 - what the optimizers import on first use
    # Projects without torchvision first: their children fork from an interpreter without it.
    jobs.sort(key=lambda job: uses_torchvision(job["project"]))
    for job in jobs:
        if uses_torchvision(job["project"]):
            torchvision_compat.load()  # once; a child that needs it then finds it imported
        run_forked(job)


def main():
    if sys.argv[1] == "--jobs":
        run_jobs(sys.argv[2])
    else:
        run_one(sys.argv[1], sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
