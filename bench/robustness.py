#!/usr/bin/env python3
"""Robustness harness: run the shape-lint core over a large corpus of real Python code.

The corpus is every ``.py`` file of

* the standard library (``sysconfig.get_paths()["stdlib"]``, without its site-packages),
* the site-packages of the running interpreter,
* torch's own Python sources, read straight out of ``../shared/wheels/torch-*.whl``
  (relative to the repository that holds this script; nothing is installed),
* with ``--libs``, the sources of real model libraries (by default ``timm``, ``diffusers`` and
  ``torchaudio``, pinned in ``DEFAULT_LIBS``): their wheels are fetched with
  ``python -m pip download --no-deps`` into a cache directory outside the repository
  (``--libs-cache``, default ``$XDG_CACHE_HOME/shape-lint/robustness-libs``), reused when
  present, and read like torch's wheel. Nothing is installed or vendored. A library whose
  wheel cannot be fetched is reported by name (and fails the run); the others still run.
  Each library gets its own line: files, findings, SHP001 and files/s.

Each file is decoded as Python would (PEP 263: ``tokenize.detect_encoding``) and passed to
``shape_lint.solver.check_source`` (the core plus the Z3 bridge for the checks the core leaves
undecided, as flake8 and the CLI run it) in a worker subprocess. A worker handles many files: it
reads tasks from its stdin pipe and writes one JSON line per file to its stdout, so the
parent always knows which file a worker is on. A worker that dies (abort, segfault, stack
overflow, a panic that escapes the boundary) is a CRASH, blamed on the file it was on; a
worker that spends more than ``--timeout`` seconds on one file is killed and the file is a
HANG. Either way a fresh worker takes over the rest of the queue. ``SHP001`` findings are the
analyzer's own caught internal errors and are listed; any other finding on this (working,
third-party) code is a false-alarm candidate and is listed too.

Exit status: 0 when there was no crash and no hang, 1 otherwise, 2 on a usage error or when
workers cannot start at all.

    python bench/robustness.py                 # the whole corpus, 2 workers
    python bench/robustness.py --limit 2000    # 2000 files spread evenly over the corpus
    python bench/robustness.py --paths some/dir some/file.py --json out.json
    python bench/robustness.py --libs                     # + timm, diffusers, torchaudio
    python bench/robustness.py --libs-only --libs transformers==4.57.1 torchmetrics
"""

from __future__ import annotations

import argparse
import io
import json
import os
import selectors
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import tokenize
import zipfile
from collections import Counter, deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WHEELS = REPO.parent / "shared" / "wheels"

CHUNK = 16  # tasks sent to a worker at once; a worker holds at most 2 chunks

# The libraries ``--libs`` analyses when it names none: pinned, so that a run is repeatable
# (0 findings over these 1487 files is the acceptance bar). ``--libs NAME`` takes the newest.
DEFAULT_LIBS = ["timm==1.0.31", "diffusers==0.42.1", "torchaudio==2.11.1"]


# --------------------------------------------------------------------------------------------
# Decoding, shared by the worker


def decode_source(data: bytes) -> str | None:
    """Decode ``data`` the way the interpreter decodes a source file, or None if it cannot."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)  # "utf-8-sig" strips a BOM
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def count_lines(src: str) -> int:
    if not src:
        return 0
    return src.count("\n") + (0 if src.endswith("\n") else 1)


# --------------------------------------------------------------------------------------------
# Worker


def worker_main() -> int:
    import faulthandler

    faulthandler.enable()  # a segfault also shows the Python stack in the crash report
    from shape_lint import solver

    out = sys.stdout.buffer
    zips: dict[str, zipfile.ZipFile] = {}

    def report(obj: dict) -> None:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()

    report({"ready": os.getpid()})
    for raw in sys.stdin.buffer:
        task = json.loads(raw)
        idx, kind, loc = task[0], task[1], task[2]
        try:
            if kind == "z":
                zf = zips.get(loc)
                if zf is None:
                    zf = zips[loc] = zipfile.ZipFile(loc)
                name = task[3]
                data = zf.read(name)
            else:
                name = loc
                with open(loc, "rb") as fh:
                    data = fh.read()
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            report({"i": idx, "st": "unreadable", "err": str(exc)})
            continue
        src = decode_source(data)
        if src is None:
            report({"i": idx, "st": "undecodable"})
            continue
        t0 = time.perf_counter()
        try:
            # SHAPE_LINT_BENCH_MAY_FAIL=1 (set by --may-fail): the opt-in SHP9xx codes too
            res = solver.check_source(src, name, {"cache": False, "may_fail": os.environ.get("SHAPE_LINT_BENCH_MAY_FAIL") == "1"})
        except BaseException as exc:  # noqa: BLE001 - e.g. pyo3's PanicException
            report(
                {
                    "i": idx,
                    "st": "exception",
                    "t": time.perf_counter() - t0,
                    "lines": count_lines(src),
                    "err": f"{type(exc).__name__}: {exc}"[:500],
                }
            )
            continue
        dt = time.perf_counter() - t0
        findings = [[f["code"], f["row"], f["col"], f["message"]] for f in res]
        report({"i": idx, "st": "ok", "t": dt, "lines": count_lines(src), "f": findings})
    return 0


# --------------------------------------------------------------------------------------------
# Corpus


def _walk_py(root: Path, prune: set[str]) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in prune and d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                p = os.path.join(dirpath, fn)
                if os.path.isfile(p):
                    found.append(p)
    return found


def site_package_dirs() -> list[Path]:
    cands = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    try:
        import site

        cands += site.getsitepackages()
    except AttributeError:  # pragma: no cover - some embedded interpreters
        pass
    seen: list[Path] = []
    for c in cands:
        p = Path(c).resolve()
        if p.is_dir() and p not in seen and not any(p.is_relative_to(s) for s in seen):
            seen.append(p)
    return seen


def find_torch_wheel() -> Path | None:
    wheels = sorted(WHEELS.glob("torch-*.whl"))
    return wheels[-1] if wheels else None


def libs_cache(args) -> Path:
    if args.libs_cache:
        return Path(args.libs_cache).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "shape-lint" / "robustness-libs"


def _norm(name: str) -> str:
    # a wheel's file name spells the distribution with underscores (PEP 427 / PEP 503)
    return "".join("_" if c in "-_." else c for c in name.lower())


def _cached_wheel(cache: Path, name: str, version: str | None) -> Path | None:
    found = []
    for whl in cache.glob("*.whl"):
        parts = whl.name.split("-")
        if len(parts) >= 3 and _norm(parts[0]) == _norm(name) and (version is None or parts[1] == version):
            found.append(whl)
    return sorted(found)[-1] if found else None


def fetch_lib(spec: str, cache: Path) -> tuple[Path | None, str]:
    """The wheel of ``spec`` (``name`` or ``name==version``) in ``cache``, downloaded with pip
    when it is not there yet; ``(None, why)`` when it cannot be had."""
    name, _, version = spec.partition("==")
    name, version = name.strip(), (version.strip() or None)
    if not name or any(c in name for c in "<>=!~;[ "):
        return None, "not a NAME or NAME==VERSION"
    if version is not None:
        whl = _cached_wheel(cache, name, version)
        if whl is not None:
            return whl, "cached"
    cache.mkdir(parents=True, exist_ok=True)
    before = set(cache.glob("*.whl"))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--no-input", "--dest", str(cache), spec]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"pip download failed: {exc}"
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return None, f"pip download exited {proc.returncode}: " + " | ".join(tail)
    new = sorted(set(cache.glob("*.whl")) - before)
    whl = next((w for w in new if _norm(w.name.split("-")[0]) == _norm(name)), None)
    whl = whl or _cached_wheel(cache, name, version)
    if whl is None:
        return None, "pip download gave no wheel"
    return whl, "downloaded"


def collect(args) -> tuple[list[list], dict[str, int]]:
    """Return the tasks ``[corpus, kind, location, member?]`` and per-corpus counts."""
    tasks: list[list] = []
    per_corpus: Counter = Counter()

    def add(corpus: str, task: list) -> None:
        tasks.append([corpus, *task])
        per_corpus[corpus] += 1

    if args.paths:
        for p in args.paths:
            path = Path(p)
            if path.is_dir():
                for f in _walk_py(path, set()):
                    add("paths", ["f", f])
            elif path.is_file():
                add("paths", ["f", str(path)])
            else:
                print(f"robustness: no such file or directory: {p}", file=sys.stderr)
                raise SystemExit(2)
        return tasks, dict(per_corpus)

    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    if not args.libs_only:
        for f in _walk_py(stdlib, {"site-packages", "dist-packages"}):
            add("stdlib", ["f", f])
        for sp in site_package_dirs():
            if sp.is_relative_to(stdlib) and sp.name not in ("site-packages", "dist-packages"):
                continue
            for f in _walk_py(sp, set()):
                add("site-packages", ["f", f])
    if args.libs is not None:
        cache = libs_cache(args)
        for spec in args.libs or DEFAULT_LIBS:
            whl, how = fetch_lib(spec, cache)
            if whl is None:
                print(f"robustness: library {spec}: {how}", file=sys.stderr)
                args.lib_failures.append({"lib": spec, "error": how})
                continue
            try:
                with zipfile.ZipFile(whl) as zf:
                    members = sorted(n for n in zf.namelist() if n.endswith(".py"))
            except (OSError, zipfile.BadZipFile) as exc:
                print(f"robustness: library {spec}: unreadable wheel {whl}: {exc}", file=sys.stderr)
                args.lib_failures.append({"lib": spec, "error": f"unreadable wheel: {exc}"})
                continue
            label = "lib:" + whl.name.split("-")[0] + "-" + whl.name.split("-")[1]
            print(f"robustness: {label}: {len(members)} .py files ({how}: {whl})", file=sys.stderr)
            if args.on_disk:
                # a project of its own (a root marker on top), so that the core resolves the
                # library's imports of its own modules as it does a user's project
                root = Path(args.on_disk) / label.removeprefix("lib:")
                with zipfile.ZipFile(whl) as zf:
                    for m in members:
                        target = root / m
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(zf.read(m))
                (root / "pyproject.toml").write_text("[project]\nname = \"robustness\"\n")
                for m in members:
                    add(label, ["f", str(root / m)])
                continue
            for m in members:
                add(label, ["z", str(whl), m])
    if not args.no_torch and not args.libs_only:
        whl = find_torch_wheel()
        if whl is None:
            print(f"robustness: warning: no torch-*.whl in {WHEELS}; torch skipped",
                  file=sys.stderr)
        else:
            with zipfile.ZipFile(whl) as zf:
                members = sorted(n for n in zf.namelist() if n.endswith(".py"))
            for m in members:
                add("torch-wheel", ["z", str(whl), m])
    return tasks, dict(per_corpus)


def display(task: list) -> str:
    if task[1] == "z":
        return f"{Path(task[2]).name}!{task[3]}"
    return task[2]


# --------------------------------------------------------------------------------------------
# Parent


class Worker:
    def __init__(self, sel: selectors.BaseSelector, env: dict):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            bufsize=0,
        )
        self.sel = sel
        self.buf = b""
        self.pending: deque[int] = deque()
        self.started: float | None = None  # when pending[0] became the current file
        self.ready = False
        sel.register(self.proc.stdout, selectors.EVENT_READ, self)

    def send(self, idxs: list[int], tasks: list[list]) -> None:
        if not self.pending:
            self.started = time.monotonic()
        self.pending.extend(idxs)
        payload = b"".join(json.dumps([i, *tasks[i][1:]]).encode() + b"\n" for i in idxs)
        try:
            self.proc.stdin.write(payload)
        except (BrokenPipeError, OSError):
            pass  # the death shows up as EOF on stdout

    def stderr_tail(self, n: int = 1500) -> str:
        try:
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - n))
            return self.stderr.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def close(self, kill: bool = False) -> int:
        try:
            self.sel.unregister(self.proc.stdout)
        except (KeyError, ValueError):
            pass
        if kill and self.proc.poll() is None:
            self.proc.kill()
        for s in (self.proc.stdin, self.proc.stdout):
            try:
                s.close()
            except OSError:
                pass
        rc = self.proc.wait()
        self.stderr.close()
        return rc


def describe_rc(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def run(args) -> int:
    t_start = time.monotonic()
    tasks, per_corpus = collect(args)
    total_found = len(tasks)
    if args.limit is not None and args.limit < len(tasks):
        # An even spread, so that a small sample still touches every corpus.
        n = max(args.limit, 0)
        tasks = [tasks[(k * len(tasks)) // n] for k in range(n)] if n else []
    if not tasks:
        print("robustness: no files to analyse", file=sys.stderr)
        for f in args.lib_failures:
            print(f"  LIBRARY NOT ANALYSED {f['lib']}: {f['error']}", file=sys.stderr)
        return 2

    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    sel = selectors.DefaultSelector()
    queue: deque[int] = deque(range(len(tasks)))
    results: dict[int, dict] = {}
    crashes: list[dict] = []
    hangs: list[dict] = []
    startup_failures = 0
    workers: list[Worker] = []
    n_jobs = max(1, args.jobs)

    def spawn() -> Worker:
        w = Worker(sel, env)
        workers.append(w)
        return w

    def retire(w: Worker, kill: bool) -> int:
        workers.remove(w)
        return w.close(kill=kill)

    def requeue(w: Worker, skip_first: bool) -> None:
        rest = list(w.pending)[1 if skip_first else 0:]
        queue.extendleft(reversed(rest))
        w.pending.clear()

    for _ in range(min(n_jobs, len(tasks))):
        spawn()

    last_progress = time.monotonic()
    done = 0
    while queue or any(w.pending for w in workers):
        # Keep every worker fed.
        for w in list(workers):
            while w.ready and queue and len(w.pending) <= CHUNK:
                chunk = [queue.popleft() for _ in range(min(CHUNK, len(queue)))]
                w.send(chunk, tasks)
        # Keep the pool at full strength while there is work.
        while len(workers) < min(n_jobs, len(queue) + sum(len(w.pending) for w in workers)):
            spawn()

        for key, _ in sel.select(timeout=0.25):
            w: Worker = key.data
            if w not in workers:
                continue
            chunk_bytes = os.read(w.proc.stdout.fileno(), 1 << 16)
            if chunk_bytes:
                w.buf += chunk_bytes
                *lines, w.buf = w.buf.split(b"\n")
                for line in lines:
                    msg = json.loads(line)
                    if "ready" in msg:
                        w.ready = True
                        if w.pending:
                            w.started = time.monotonic()
                        continue
                    idx = msg.pop("i")
                    expect = w.pending.popleft()
                    assert idx == expect, (idx, expect)
                    results[idx] = msg
                    done += 1
                    w.started = time.monotonic() if w.pending else None
                continue
            # EOF: the worker died.
            was_ready = w.ready
            tail = w.stderr_tail()
            culprit = w.pending[0] if w.pending else None
            rc = retire(w, kill=True)
            if not was_ready:
                startup_failures += 1
                requeue(w, skip_first=False)
                if startup_failures >= 3:
                    print("robustness: workers cannot start:\n" + tail, file=sys.stderr)
                    return 2
                continue
            if culprit is not None:
                crashes.append(
                    {
                        "path": display(tasks[culprit]),
                        "corpus": tasks[culprit][0],
                        "how": describe_rc(rc),
                        "stderr": tail[-800:],
                    }
                )
                results[culprit] = {"st": "crash"}
                done += 1
                requeue(w, skip_first=True)
            else:
                crashes.append({"path": None, "corpus": None, "how": describe_rc(rc),
                                "stderr": tail[-800:]})

        now = time.monotonic()
        for w in list(workers):
            if w.pending and w.started is not None and now - w.started > args.timeout:
                culprit = w.pending[0]
                hangs.append(
                    {"path": display(tasks[culprit]), "corpus": tasks[culprit][0],
                     "seconds": round(now - w.started, 1)}
                )
                results[culprit] = {"st": "hang"}
                done += 1
                requeue(w, skip_first=True)
                retire(w, kill=True)
        if args.progress and now - last_progress > 10:
            last_progress = now
            print(f"  ... {done}/{len(tasks)} files, {now - t_start:.0f} s", file=sys.stderr,
                  flush=True)

    # Orderly shutdown: a worker that dies at exit is a crash too.
    for w in list(workers):
        try:
            w.proc.stdin.close()
        except OSError:
            pass
    for w in list(workers):
        try:
            w.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        tail = w.stderr_tail()
        rc = retire(w, kill=True)
        if rc != 0:
            crashes.append({"path": None, "corpus": None,
                            "how": f"at shutdown: {describe_rc(rc)}", "stderr": tail[-800:]})
    elapsed = time.monotonic() - t_start
    return report(args, tasks, total_found, per_corpus, results, crashes, hangs, elapsed)


def report(args, tasks, total_found, per_corpus, results, crashes, hangs, elapsed) -> int:
    status = Counter(r["st"] for r in results.values())
    analysed = [i for i, r in results.items() if r["st"] in ("ok", "exception")]
    lines = sum(results[i].get("lines", 0) for i in analysed)
    by_code: Counter = Counter()
    internal: list[dict] = []
    false_alarms: list[dict] = []
    exceptions: list[dict] = []
    for i in sorted(results):
        r = results[i]
        if r["st"] == "exception":
            exceptions.append({"path": display(tasks[i]), "error": r["err"]})
        for code, row, col, message in r.get("f", ()):
            by_code[code] += 1
            item = {"path": display(tasks[i]), "row": row, "col": col, "code": code,
                    "message": message}
            (internal if code == "SHP001" else false_alarms).append(item)
    slowest = sorted(((results[i]["t"], i) for i in analysed), reverse=True)[:10]
    # per library: files, findings (SHP001 apart) and files per second of analysis time
    libs: dict[str, dict] = {}
    for i in analysed:
        corpus = tasks[i][0]
        if not corpus.startswith("lib:"):
            continue
        row = libs.setdefault(corpus[4:], {"files": 0, "findings": 0, "shp001": 0, "seconds": 0.0})
        row["files"] += 1
        row["seconds"] += results[i].get("t", 0.0)
        for code, *_ in results[i].get("f", ()):
            row["shp001" if code == "SHP001" else "findings"] += 1
    undecodable = [display(tasks[i]) for i, r in results.items() if r["st"] == "undecodable"]
    unreadable = [display(tasks[i]) for i, r in results.items() if r["st"] == "unreadable"]

    p = print
    p("shape-lint robustness")
    p(f"  corpus:       {total_found} .py files found ("
      + ", ".join(f"{k} {v}" for k, v in per_corpus.items()) + ")"
      + (f"; sample of {len(tasks)} (--limit)" if len(tasks) < total_found else ""))
    p(f"  files:        {len(analysed)} analysed, {status['undecodable']} undecodable "
      f"(skipped), {status['unreadable']} unreadable")
    p(f"  lines:        {lines}")
    p(f"  seconds:      {elapsed:.1f} wall, {args.jobs} worker(s)")
    p(f"  files/s:      {len(analysed) / elapsed if elapsed else 0:.1f}")
    p(f"  crashes:      {len(crashes)}")
    for c in crashes:
        p(f"    CRASH {c['path'] or '(no file)'}: {c['how']}")
        for line in (c["stderr"] or "").splitlines()[-6:]:
            p(f"        | {line}")
    p(f"  exceptions:   {len(exceptions)} (check_source raised into Python)")
    for e in exceptions[:30]:
        p(f"    EXC {e['path']}: {e['error']}")
    p(f"  hangs:        {len(hangs)} (> {args.timeout:g} s)")
    for h in hangs:
        p(f"    HANG {h['path']}")
    p(f"  SHP001:       {len(internal)} caught internal errors")
    for f in internal[:30]:
        p(f"    {f['path']}:{f['row']}: {f['code']} {f['message']}")
    if libs or args.lib_failures:
        p("  libraries:    (files/s: files per second of analysis time in the workers)")
        for name, row in sorted(libs.items()):
            rate = row["files"] / row["seconds"] if row["seconds"] else 0.0
            p(f"    {name:32} {row['files']:5} files, {row['findings']} findings, "
              f"{row['shp001']} SHP001, {rate:.1f} files/s")
        for f in args.lib_failures:
            p(f"    LIBRARY NOT ANALYSED {f['lib']}: {f['error']}")
    p("  findings by code: "
      + (", ".join(f"{c} {n}" for c, n in sorted(by_code.items())) or "none"))
    p(f"  false-alarm candidates (findings other than SHP001 on third-party code): "
      f"{len(false_alarms)}")
    for f in false_alarms[:30]:
        p(f"    {f['path']}:{f['row']}: {f['code']} {f['message']}")
    if undecodable:
        p(f"  undecodable:  " + ", ".join(undecodable[:10])
          + (" ..." if len(undecodable) > 10 else ""))
    p("  slowest files:")
    for t, i in slowest:
        p(f"    {t * 1000:9.1f} ms  {display(tasks[i])} ({results[i].get('lines', 0)} lines)")

    failed = bool(crashes or hangs or exceptions or args.lib_failures)
    p("RESULT: " + ("FAIL" if failed else "OK")
      + f" ({len(crashes)} crashes, {len(hangs)} hangs, {len(exceptions)} exceptions"
      + (f", {len(args.lib_failures)} libraries not analysed" if args.lib_failures else "") + ")")

    if args.json:
        data = {
            "files_found": total_found,
            "per_corpus": per_corpus,
            "files": len(analysed),
            "undecodable": undecodable,
            "unreadable": unreadable,
            "lines": lines,
            "seconds": round(elapsed, 3),
            "jobs": args.jobs,
            "timeout": args.timeout,
            "crashes": crashes,
            "hangs": hangs,
            "exceptions": exceptions,
            "shp001": internal,
            "findings_by_code": dict(by_code),
            "false_alarm_candidates": false_alarms,
            "libraries": {k: {**v, "seconds": round(v["seconds"], 3)} for k, v in libs.items()},
            "library_failures": args.lib_failures,
            "slowest": [{"path": display(tasks[i]), "seconds": round(t, 4),
                         "lines": results[i].get("lines", 0)} for t, i in slowest],
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker_main()
    ap = argparse.ArgumentParser(
        description="Run the shape-lint core over the stdlib, site-packages and torch's "
                    "sources; report crashes, hangs, internal errors and timings.")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds one file may take before it counts as a hang (default 10)")
    ap.add_argument("--limit", type=int, default=None,
                    help="analyse only N files, spread evenly over the corpus")
    ap.add_argument("--paths", nargs="+", metavar="P",
                    help="analyse only these files and directories")
    ap.add_argument("--no-torch", action="store_true",
                    help="leave out the torch wheel's sources")
    ap.add_argument("--libs", nargs="*", metavar="SPEC", default=None,
                    help="also analyse the wheels of these libraries (NAME or NAME==VERSION), "
                         "fetched with pip download --no-deps into --libs-cache; with no SPEC: "
                         + " ".join(DEFAULT_LIBS))
    ap.add_argument("--libs-cache", metavar="DIR",
                    help="where the library wheels are kept (default "
                         "$XDG_CACHE_HOME/shape-lint/robustness-libs, outside the repository)")
    ap.add_argument("--libs-only", action="store_true",
                    help="analyse only the --libs wheels (no stdlib, site-packages or torch)")
    ap.add_argument("--on-disk", action="store_true",
                    help="extract the --libs wheels into a temporary folder, each library a "
                         "project, and analyse the files there: the core then follows each "
                         "library's imports of its own modules (project imports)")
    ap.add_argument("--may-fail", action="store_true",
                    help="also run the opt-in SHP9xx diagnostics (--may-fail) in the workers")
    ap.add_argument("--json", metavar="OUT", help="also write the full results as JSON")
    ap.add_argument("--progress", action="store_true", help="print progress to stderr")
    args = ap.parse_args(argv)
    if args.may_fail:
        os.environ["SHAPE_LINT_BENCH_MAY_FAIL"] = "1"  # inherited by the workers
    if args.timeout <= 0 or args.jobs < 1:
        ap.error("--timeout and --jobs must be positive")
    if args.libs_only and args.libs is None:
        args.libs = []
    args.lib_failures = []
    if not args.on_disk:
        return run(args)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="shape-lint-robustness-") as tmp:
        args.on_disk = tmp
        return run(args)


if __name__ == "__main__":
    sys.exit(main())
