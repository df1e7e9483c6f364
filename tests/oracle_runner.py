"""Run one fixture program as ``__main__`` and write what happened as JSON.

usage: python oracle_runner.py FIXTURE.py REPORT.json   (or FIXTURE.ipynb: its code cells)
       python oracle_runner.py --serve   (many fixtures, torch imported once: ``serve``)

The report holds ``ok`` (bool: the program ran to completion or exited with status 0),
``exc_type``, ``error`` (``"Type: first line of the message"``) and ``frames``: the traceback
as ``[[absolute file, line], ...]``, innermost first, all files included, and ``calls``: the
program's model calls as torch's forward hooks see them (``forward_hooks.py``; what
``test_summary.py`` compares ``shape-lint summary`` with, from the same run). A fixture marked
with a shape error (``# error: SHP1xx``) also has ``sizes`` and ``modules``: the sizes its lines
made and its layers' sizes (``size_recorder.py``; what ``test_origins.py`` checks the origin
chains of its finding against). A fixture that
imports torchvision where it cannot be imported (see ``torchvision_compat.py``) is not run: its
report has ``skip``, the reason. Used by ``test_oracle.py`` (through ``oracle_reports.py``) and
``test_fixes.py``; it is not a test module itself.
"""
import json
import os
import re
import runpy
import shlex
import sys
import traceback

import forward_hooks  # tests/, next to this script
import simulated_cuda  # tests/, next to this script
import size_recorder  # tests/, next to this script
import torchvision_compat  # tests/, next to this script

ARGV = "# oracle: argv "
SHAPE_ERROR = re.compile(r"#\s*error:\s*SHP1\d\d\b")


def main():
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        run(os.path.abspath(sys.argv[1]), sys.argv[2])


def run(fixture, report, replace=None):
    sys.path.insert(0, os.path.dirname(fixture))
    out = {"ok": True, "exc_type": None, "error": None, "frames": []}
    with open(fixture, encoding="utf-8") as f:
        text = f.read()
    if fixture.endswith(".ipynb"):
        # a notebook: its code cells as the one program the analyser reads (IPython syntax
        # rewritten to `get_ipython()` calls, which do nothing here), run from the working
        # directory; `program` names it, for the test to map its lines back to cells
        from shape_lint import notebook
        import builtins

        text = notebook.parse(text).source
        fixture = os.path.abspath("notebook_program.py")
        with open(fixture, "w", encoding="utf-8") as f:
            f.write(text)
        builtins.get_ipython = lambda: None
        out["program"] = fixture
    # a fixture whose bug needs a command-line switch runs with it (`# oracle: argv --flag`)
    sys.argv = [fixture] + [a for line in text.splitlines() if line.startswith(ARGV) for a in shlex.split(line[len(ARGV):])]
    uses_torchvision = "torchvision" in text
    if simulated_cuda.MARKER in text:
        simulated_cuda.enable()
    if uses_torchvision and torchvision_compat.load() is None:
        # not a verdict: the fixture cannot run here (test_oracle.py skips it with this reason)
        out.update(ok=False, skip=torchvision_compat.REASON)
        with open(report, "w") as f:
            json.dump(out, f)
        return
    out["calls"] = forward_hooks.install()
    if replace:
        # the first call of the model class `replace["model"]` gets inputs of the sizes
        # `replace["shapes"]` instead (test_contracts.py: a size outside its input contract)
        out["replaced"] = False
        _replace_inputs(replace["model"], replace["shapes"], out)
    if SHAPE_ERROR.search(text):
        # the sizes its lines make, for the origin chains of its finding (test_origins.py)
        out["sizes"], out["modules"] = size_recorder.install(fixture)
    try:
        runpy.run_path(fixture, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            out.update(ok=False, exc_type="SystemExit", error="SystemExit: %s" % (e.code,))
    except BaseException as e:  # noqa: B902 - any failure of the fixture is data here
        lines = str(e).strip().splitlines()
        out.update(ok=False, exc_type=type(e).__name__,
                   error="%s: %s" % (type(e).__name__, lines[0] if lines else ""))
        frames = traceback.extract_tb(e.__traceback__)
        out["frames"] = [[os.path.abspath(f.filename), f.lineno] for f in reversed(frames)]
        traceback.print_exc()
    with open(report, "w") as f:
        json.dump(out, f)


def _replace_inputs(model, shapes, out):
    """A global forward pre-hook that gives the first call of a module of class `model` tensors
    of `shapes` (one per positional input; a ``None`` keeps that input) of the dtype and device
    of the ones it replaces: random floats, zeros of an integer or bool dtype."""
    import torch

    def hook(module, args):
        if type(module).__name__ != model or out["replaced"]:
            return None
        out["replaced"] = True
        new = list(args)
        for i, shape in enumerate(shapes):
            if shape is None or i >= len(new) or not isinstance(new[i], torch.Tensor):
                continue
            old = new[i]
            if old.dtype.is_floating_point or old.dtype.is_complex:
                new[i] = torch.randn(shape, dtype=old.dtype, device=old.device)
            else:
                new[i] = torch.zeros(shape, dtype=old.dtype, device=old.device)
        return tuple(new)

    torch.nn.modules.module.register_module_forward_pre_hook(hook)


def serve():
    """Run fixtures for ``oracle_reports.py`` with torch imported once: read one request per
    line on stdin (JSON: ``fixture``, ``report``, ``cwd``, ``output``, ``timeout``), run it in a
    child forked from this process (so each fixture still starts from an interpreter that ran
    nothing but the imports: no state of another fixture reaches it), its stdout and stderr
    written to ``output``, and answer one line (JSON: ``status``, the child's exit status, or
    ``"timeout"`` when it ran past ``timeout`` seconds and was killed). Most of a fixture's run
    was torch's import."""
    import signal
    import time

    import torch  # noqa: F401 - imported once, before the forks

    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                os.chdir(req["cwd"])
                fd = os.open(req["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                sys.stdin = open(os.devnull)
                run(req["fixture"], req["report"], req.get("replace"))
            except BaseException:  # noqa: B902 - the report is missing: the client says so
                traceback.print_exc()
                status = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        deadline = time.monotonic() + req["timeout"]
        while True:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                answer = {"status": os.waitstatus_to_exitcode(code)}
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                answer = {"status": "timeout"}
                break
            time.sleep(0.005)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
