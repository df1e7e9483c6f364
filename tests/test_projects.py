"""Multi-file fixture projects and their single-line mutants (tests/projects/, see its README).

Three kinds of tests:

- conventions: the layout of ``tests/projects/`` and of ``mutants.toml`` (every mutant's
  ``original`` is the current line, one entry script per project, ...);
- oracle (needs torch): every clean project runs to completion from its entry script, and every
  mutant, applied to a temporary copy of its project, raises with the innermost traceback frame
  inside the copy at ``raises_at``. The runs go through ``projects/project_runner.py --jobs``,
  one runner per core, each forking one child per run from an interpreter that imported torch
  once;
- analyzer: ``flake8 --select=SHP <project dir>`` reports nothing on a clean project and exactly
  one finding, of ``code`` at ``raises_at``, on each mutated copy. The mutants the analyzer
  does not find yet are the ids in ``XFAIL_ANALYZER`` below (with what each needs), strict
  xfails. When a change makes one of them pass, pytest reports it as XPASS(strict) and
  fails: remove its id from the set.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROJECTS_DIR = HERE / "projects"
RUNNER = PROJECTS_DIR / "project_runner.py"
SPEC = tomllib.loads((PROJECTS_DIR / "mutants.toml").read_text(encoding="utf-8"))
PROJECTS = SPEC["projects"]  # name -> {"entry": "train.py"}
MUTANTS = {"%s/%s" % (m["project"], m["id"]): m for m in SPEC["mutant"]}
JOB_TIMEOUT_S = 60  # per run, as project_runner.TIMEOUT_S
FLAKE8_TIMEOUT_S = 120

# Mutants the analyzer does not find yet. Flip one (remove it) when its analyzer test passes: an
# XPASS(strict) fails the run. What each still needs:
# - transformer_cls/mask_batch_len, no_batch_first: the padding-mask check needs the layer to
#   be known in training mode (the script sets it with model.train(flag)); mode tracking is
#   issue 12.
XFAIL_ANALYZER: set[str] = set()
XFAIL_REASON = "not found yet (see XFAIL_ANALYZER)"
# What else a project's mutants need before their analyzer tests can pass (added to the reason).
ALSO_NEEDED: dict[str, str] = {}

FINDING = re.compile(r"^(?P<path>.*?):(?P<row>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<text>.*)$")


def mutant_params():
    out = []
    for mid in MUTANTS:
        reason = XFAIL_REASON
        if MUTANTS[mid]["project"] in ALSO_NEEDED:
            reason += "; also needs " + ALSO_NEEDED[MUTANTS[mid]["project"]]
        # raises=AssertionError: only a wrong set of findings is the expected failure; a drifted
        # mutant or a broken flake8 run fails the test even while it is listed.
        marks = [pytest.mark.xfail(strict=True, reason=reason, raises=AssertionError)] if mid in XFAIL_ANALYZER else []
        out.append(pytest.param(mid, marks=marks, id=mid))
    return out


def apply_mutant(mutant, project_copy):
    """Replace the mutant's line in ``project_copy``; None, or why it cannot (the line drifted)."""
    path = project_copy / mutant["file"]
    lines = path.read_text(encoding="utf-8").split("\n")
    current = lines[mutant["line"] - 1] if 1 <= mutant["line"] <= len(lines) else None
    if current is None or current.strip() != mutant["original"]:
        return "%s:%d is %r, the mutant expects %r (update mutants.toml)" % (
            mutant["file"], mutant["line"], current and current.strip(), mutant["original"])
    lines[mutant["line"] - 1] = mutant["replacement"]
    path.write_text("\n".join(lines), encoding="utf-8")
    return None


def copy_project(name, dest):
    shutil.copytree(PROJECTS_DIR / name, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """Temporary copies, made on demand: ``copies("clean", project)`` or ``copies("mutant", id)``
    give ``(directory, None)``, or ``(directory, why)`` for a mutant that no longer applies."""
    base = tmp_path_factory.mktemp("projects")
    made = {}

    def get(kind, key):
        if (kind, key) not in made:
            if kind == "clean":
                made[kind, key] = copy_project(key, base / "clean" / key), None
            else:
                m = MUTANTS[key]
                dest = copy_project(m["project"], base / "mutants" / key.replace("/", "__") / m["project"])
                made[kind, key] = dest, apply_mutant(m, dest)
        return made[kind, key]

    return get


def selected(request, argname):
    """The values of ``argname`` in this module's selected test items."""
    out = set()
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module.__name__ == __name__ and callspec and argname in callspec.params:
            out.add(callspec.params[argname])
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# Conventions


def test_project_layout():
    problems = []
    on_disk = sorted(p.name for p in PROJECTS_DIR.iterdir() if p.is_dir() and p.name != "__pycache__")
    if on_disk != sorted(PROJECTS):
        problems.append("project directories %s, but mutants.toml lists %s" % (on_disk, sorted(PROJECTS)))
    if len(PROJECTS) < 8:
        problems.append("expected at least 8 projects, got %d" % len(PROJECTS))
    for name, spec in PROJECTS.items():
        root = PROJECTS_DIR / name
        pyproject = root / "pyproject.toml"
        if not pyproject.is_file():
            problems.append("%s: no pyproject.toml (it marks the project root)" % name)
        elif tomllib.loads(pyproject.read_text()).get("project", {}).get("name") != name:
            problems.append("%s: pyproject.toml must have [project] name = %r" % (name, name))
        if set(spec) != {"entry"}:
            problems.append("%s: [projects.%s] has exactly one key, entry; got %s" % (name, name, sorted(spec)))
        entry = root / spec.get("entry", "")
        if not entry.is_file():
            problems.append("%s: entry script %s does not exist" % (name, spec.get("entry")))
            continue
        mains = [p.relative_to(root).as_posix() for p in sorted(root.rglob("*.py"))
                 if re.search(r'^if __name__ == "__main__":', p.read_text(encoding="utf-8"), re.M)]
        if mains != [spec["entry"]]:
            problems.append("%s: exactly the entry script has `if __name__ == \"__main__\":`, got %s"
                            % (name, mains))
        if len(list(root.rglob("*.py"))) < 2:
            problems.append("%s: a project has several files" % name)
    assert not problems, "\n".join(problems)


def test_mutants_match_the_projects():
    problems = []
    per_project = {}
    ids = [(m["project"], m["id"]) for m in SPEC["mutant"]]
    if len(ids) != len(set(ids)):
        problems.append("duplicate mutant ids: %s" % sorted({i for i in ids if ids.count(i) > 1}))
    keys = {"project", "id", "file", "line", "original", "replacement", "raises_at", "code", "note"}
    for mid, m in MUTANTS.items():
        if set(m) != keys:
            problems.append("%s: keys %s, expected %s" % (mid, sorted(m), sorted(keys)))
            continue
        per_project[m["project"]] = per_project.get(m["project"], 0) + 1
        if m["project"] not in PROJECTS:
            problems.append("%s: unknown project %r" % (mid, m["project"]))
            continue
        root = PROJECTS_DIR / m["project"]
        path = root / m["file"]
        if not path.is_file():
            problems.append("%s: no file %s" % (mid, m["file"]))
            continue
        lines = path.read_text(encoding="utf-8").split("\n")
        if not 1 <= m["line"] <= len(lines):
            problems.append("%s: line %d out of %s" % (mid, m["line"], m["file"]))
            continue
        current = lines[m["line"] - 1]
        if current.strip() != m["original"]:
            problems.append("%s: %s:%d is %r, original says %r"
                            % (mid, m["file"], m["line"], current.strip(), m["original"]))
        indent = current[:len(current) - len(current.lstrip())]
        if not m["replacement"].startswith(indent) or m["replacement"][len(indent):] != m["replacement"].strip():
            problems.append("%s: the replacement must keep the line's indentation %r" % (mid, indent))
        if m["replacement"].strip() == m["original"]:
            problems.append("%s: the replacement changes nothing" % mid)
        where = re.fullmatch(r"(.+\.py):(\d+)", m["raises_at"])
        if not where or not (root / where.group(1)).is_file():
            problems.append("%s: raises_at %r is not FILE.py:LINE of a project file" % (mid, m["raises_at"]))
        if not re.fullmatch(r"SHP\d{3}", m["code"]):
            problems.append("%s: code %r" % (mid, m["code"]))
        if not m["note"].strip() or "\n" in m["note"]:
            problems.append("%s: the note is one line" % mid)
    few = {p: per_project.get(p, 0) for p in PROJECTS if per_project.get(p, 0) < 4}
    if few:
        problems.append("at least 4 mutants per project: %s" % few)
    if len(MUTANTS) < 40:
        problems.append("at least 40 mutants, got %d" % len(MUTANTS))
    stale = sorted(XFAIL_ANALYZER - set(MUTANTS))
    if stale:
        problems.append("XFAIL_ANALYZER names no mutant: %s" % stale)
    assert not problems, "\n".join(problems)


def test_fake_datasets_keep_the_last_batch():
    """fake_data.BATCH_SIZES covers the batch sizes of every project that loads a torchvision
    dataset, so a fake's last batch has its real size."""
    sys.path.insert(0, str(PROJECTS_DIR))
    try:
        import fake_data
    finally:
        sys.path.remove(str(PROJECTS_DIR))
    for name, (_, _, train_len, test_len) in fake_data.IMAGE_DATASETS.items():
        for b in fake_data.BATCH_SIZES:
            for n in (train_len, test_len):
                assert fake_data.fake_length(n) % b == n % b, (name, n, b)
    batch_default = re.compile(r'add_argument\("--[\w-]*batch-size".*default=(\d+)')
    for name in PROJECTS:
        texts = [p.read_text(encoding="utf-8") for p in (PROJECTS_DIR / name).rglob("*.py")]
        if not any(re.search(r"datasets\.(%s)\(" % "|".join(fake_data.IMAGE_DATASETS), t) for t in texts):
            continue
        sizes = {int(m.group(1)) for t in texts for m in batch_default.finditer(t)}
        assert sizes and sizes <= set(fake_data.BATCH_SIZES), (
            "%s: batch sizes %s must all be in fake_data.BATCH_SIZES %s" % (name, sorted(sizes), fake_data.BATCH_SIZES))


def test_mutant_codes_are_registered():
    core = pytest.importorskip("shape_lint._core")
    registered = {r["code"] for r in core.rules()}
    missing = {mid: m["code"] for mid, m in MUTANTS.items() if m["code"] not in registered}
    assert not missing, "codes missing from shape_lint._core.rules(): %s" % missing


# ---------------------------------------------------------------------------------------------
# Oracle: real torch


def run_all(runs, workdir):
    """Run ``{key: (project_copy, entry)}`` through the runner, one worker per core; reports by key."""
    workdir.mkdir(parents=True, exist_ok=True)
    jobs = []
    for i, (key, (project, entry)) in enumerate(sorted(runs.items())):
        jobs.append({"key": key, "project": str(project), "entry": entry,
                     "report": str(workdir / ("%d.json" % i)), "log": str(workdir / ("%d.log" % i))})
    workers = max(1, min(os.cpu_count() or 1, len(jobs)))
    chunks = [jobs[i::workers] for i in range(workers)]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")

    def work(i):
        jobs_file = workdir / ("jobs%d.json" % i)
        jobs_file.write_text(json.dumps(chunks[i]))
        try:
            proc = subprocess.run([sys.executable, str(RUNNER), "--jobs", str(jobs_file)], cwd=workdir,
                                  capture_output=True, text=True, env=env,
                                  timeout=JOB_TIMEOUT_S * len(chunks[i]) + 60)
            return proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            return "runner worker %d timed out" % i

    with ThreadPoolExecutor(max_workers=workers) as pool:
        worker_output = "\n".join(pool.map(work, range(workers)))
    reports = {}
    for job in jobs:
        report = Path(job["report"])
        if report.exists():
            out = json.loads(report.read_text())
        else:
            out = {"ok": False, "exc_type": "RunnerCrashed", "frames": [],
                   "error": "no report", "output": worker_output[-3000:]}
        log = Path(job["log"])
        out.setdefault("output", log.read_text(errors="replace")[-3000:] if log.exists() else "")
        out["project_dir"] = job["project"]
        reports[job["key"]] = out
    return reports


@pytest.fixture(scope="module")
def reports(request, copies, tmp_path_factory):
    """Oracle reports of every project and mutant selected in this session, computed once."""
    pytest.importorskip("torch")
    runs = {}
    for name in selected(request, "clean_project"):
        runs["clean", name] = (copies("clean", name)[0], PROJECTS[name]["entry"])
    for mid in selected(request, "oracle_mutant"):
        project_copy, drifted = copies("mutant", mid)
        if not drifted:  # the test fails with the reason
            runs["mutant", mid] = (project_copy, PROJECTS[MUTANTS[mid]["project"]]["entry"])
    by_key = run_all({"%s:%s" % k: v for k, v in runs.items()}, tmp_path_factory.mktemp("oracle"))
    return {k: by_key["%s:%s" % k] for k in runs}


def describe(report):
    frames = "\n".join("    %s:%s" % (f, line) for f, line in report.get("frames", [])[:8])
    return "error: %s\ninnermost frames:\n%s\noutput tail:\n%s" % (
        report.get("error"), frames or "    (none)", report.get("output", "")[-1500:])


def innermost_in_project(report):
    """``"file.py:LINE"`` of the innermost frame inside the project copy, or None."""
    root = Path(report["project_dir"]).resolve()
    for f, line in report["frames"]:
        path = Path(f).resolve()
        if path.is_relative_to(root):
            return "%s:%d" % (path.relative_to(root).as_posix(), line)
    return None


@pytest.mark.parametrize("clean_project", sorted(PROJECTS))
def test_clean_project_runs(clean_project, reports):
    report = reports["clean", clean_project]
    if report.get("skip"):
        pytest.skip("%s: %s" % (clean_project, report["skip"]))
    assert report["ok"], "clean project %s failed under torch\n%s" % (clean_project, describe(report))


def test_clean_projects_summary_agrees_with_forward_hooks(reports, copies):
    """``shape-lint summary`` of each clean project's entry script against the forward hooks of
    the oracle's run of it (``project_runner.py`` records them): no record differs, and the
    share that agrees exactly does not fall (measured: see the README's summary section)."""
    from shape_lint import summary
    from test_summary import classify, comparable, reason_kind

    verdicts, differ = {}, []
    for (kind, name), report in reports.items():
        if kind != "clean":
            continue
        entry = copies("clean", name)[0] / PROJECTS[name]["entry"]
        calls = summary.summarise(entry.read_text(encoding="utf-8"), str(entry))
        verdict, why = classify(calls, report)
        if verdict is not None:
            verdicts[name] = (verdict, sorted({reason_kind(w) for w in why}))
        if verdict == "differ":
            differ.append((name, comparable(calls), comparable(report["calls"])))
    print("\nshape-lint summary vs forward hooks, projects: %s" % verdicts)
    PROJECT_SUMMARY.update(verdicts)
    assert differ == [], differ
    agree = sum(v == "agree" for v, _ in verdicts.values())
    if len(verdicts) >= len(PROJECTS) - 2:  # (two need torchvision)
        assert agree >= PROJECT_SUMMARY_FLOOR, verdicts


# the verdicts of test_clean_projects_summary_agrees_with_forward_hooks (conftest.py prints them)
PROJECT_SUMMARY: dict = {}
PROJECT_SUMMARY_FLOOR = 6


@pytest.mark.parametrize("oracle_mutant", sorted(MUTANTS))
def test_mutant_raises_at(oracle_mutant, reports, copies):
    m = MUTANTS[oracle_mutant]
    drifted = copies("mutant", oracle_mutant)[1]
    if drifted:
        pytest.fail(drifted)
    report = reports["mutant", oracle_mutant]
    if report.get("skip"):
        pytest.skip("%s: %s" % (oracle_mutant, report["skip"]))
    assert not report["ok"], "%s ran to completion, but %s should raise (%s)" % (
        oracle_mutant, m["raises_at"], m["note"])
    where = innermost_in_project(report)
    assert where == m["raises_at"], "%s: torch raised at %s, raises_at says %s\n%s" % (
        oracle_mutant, where, m["raises_at"], describe(report))


# ---------------------------------------------------------------------------------------------
# Analyzer: flake8 --select=SHP over the whole project directory


def flake8_findings(project_dir):
    """``[(relative path, row, code, text)]`` that ``flake8 --select=SHP`` reports in
    ``project_dir``, or a string: why flake8 gave no usable answer."""
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=SHP", "--jobs=1",
         "--format=%(path)s:%(row)d:%(col)d: %(code)s %(text)s", str(project_dir)],
        cwd=project_dir, capture_output=True, text=True, timeout=FLAKE8_TIMEOUT_S,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
    )
    if proc.returncode not in (0, 1):
        return "flake8 failed (exit %d):\n%s%s" % (proc.returncode, proc.stdout, proc.stderr[-3000:])
    found = []
    for line in proc.stdout.splitlines():
        m = FINDING.match(line)
        if not m:
            return "unexpected flake8 output line: %r" % line
        rel = Path(m.group("path")).resolve().relative_to(Path(project_dir).resolve()).as_posix()
        found.append((rel, int(m.group("row")), m.group("code"), m.group("text")))
    return found


@pytest.fixture(scope="module")
def findings(request, copies):
    """flake8 findings of every project and mutant selected in this session, computed once."""
    pytest.importorskip("shape_lint._core")
    pytest.importorskip("flake8")
    dirs = {("clean", name): PROJECTS_DIR / name for name in selected(request, "analyzed_project")}
    for mid in selected(request, "analyzed_mutant"):
        project_copy, drifted = copies("mutant", mid)
        if not drifted:  # the test fails with the reason
            dirs["mutant", mid] = project_copy
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return dict(zip(dirs, pool.map(flake8_findings, dirs.values())))


def shown(found):
    return "\n".join("    %s:%d: %s %s" % f for f in found) or "    (none)"


@pytest.mark.parametrize("analyzed_project", sorted(PROJECTS))
def test_clean_project_has_no_findings(analyzed_project, findings):
    found = findings["clean", analyzed_project]
    if isinstance(found, str):
        pytest.fail(found)
    assert not found, "false alarms in clean project %s:\n%s" % (analyzed_project, shown(found))


@pytest.mark.parametrize("analyzed_mutant", mutant_params())
def test_mutant_is_found_where_torch_raises(analyzed_mutant, findings, copies):
    m = MUTANTS[analyzed_mutant]
    drifted = copies("mutant", analyzed_mutant)[1]
    if drifted:
        pytest.fail(drifted)  # not an AssertionError: fails even while the mutant is an xfail
    found = findings["mutant", analyzed_mutant]
    if isinstance(found, str):
        pytest.fail(found)
    file, line = m["raises_at"].rsplit(":", 1)
    assert [(f, r, c) for f, r, c, _ in found] == [(file, int(line), m["code"])], (
        "%s (%s): expected exactly one %s at %s, flake8 reported:\n%s" % (
            analyzed_mutant, m["note"], m["code"], m["raises_at"], shown(found)))


# ---------------------------------------------------------------------------------------------
# One answer: flake8 with two jobs and the CLI, and the cache's second run


def _tool(args, cwd):
    """Run ``python -m <args>`` in ``cwd``: (``{(path, row, code)}``, seconds, the process)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=FLAKE8_TIMEOUT_S,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    seconds = time.perf_counter() - t0
    found = set()
    for line in proc.stdout.splitlines():
        m = re.match(r"^(?:\./)?([^:]+):(\d+):\d+: (SHP\d+)", line)
        if m:
            found.add((m[1], int(m[2]), m[3]))
    return found, seconds, proc


# seconds of `shape-lint check` per project copy, for the summary: the whole command cold and
# warm, and the analysis of the project's files in this process cold and warm
CACHE_TIMES: dict[str, tuple[float, float, float, float]] = {}


@pytest.mark.parametrize("analyzed_project", sorted(PROJECTS))
def test_flake8_with_two_jobs_and_the_cli_agree_and_the_cache_answers_the_second_run(analyzed_project, copies):
    """On the clean project and on its first mutant: ``flake8 --jobs 2`` and ``shape-lint
    check`` (both without the cache) report the same findings; then ``shape-lint check`` with
    the cache, twice: the second run gives the same findings from the cache."""
    pytest.importorskip("shape_lint._core")
    pytest.importorskip("flake8")
    from shape_lint import cache, solver

    first = next(mid for mid in sorted(MUTANTS) if MUTANTS[mid]["project"] == analyzed_project)
    for label, (project_dir, drifted) in ((analyzed_project + "/clean", copies("clean", analyzed_project)), (first, copies("mutant", first))):
        if drifted:
            pytest.fail(drifted)
        flake, _, fp = _tool(["flake8", "--select=SHP", "--jobs", "2", "--shp-no-cache", "."], project_dir)
        cli, _, cp = _tool(["shape_lint.cli", "check", "--no-cache", "--output-format", "concise", "."], project_dir)
        assert fp.returncode in (0, 1) and cp.returncode in (0, 1), fp.stderr[-2000:] + cp.stderr[-2000:]
        assert flake == cli, "%s: flake8 --jobs 2 %s, shape-lint check %s" % (label, sorted(flake), sorted(cli))
        assert label.endswith("/clean") == (not flake), "%s: %s" % (label, sorted(flake))
        shutil.rmtree(project_dir / ".shape_lint_cache", ignore_errors=True)
        cold, t_cold, _ = _tool(["shape_lint.cli", "check", "--output-format", "concise", "."], project_dir)
        warm, t_warm, _ = _tool(["shape_lint.cli", "check", "--output-format", "concise", "."], project_dir)
        assert cold == warm == cli, "%s: cold %s, warm %s" % (label, sorted(cold), sorted(warm))
        assert (project_dir / ".shape_lint_cache").is_dir()
        # the analysis alone (in this process, without the interpreter's start-up), cold and
        # then answered from the cache, as a second run sees it
        shutil.rmtree(project_dir / ".shape_lint_cache", ignore_errors=True)
        times = []
        for _ in range(2):
            cache.forget_stamps()
            t0 = time.perf_counter()
            for path in sorted(project_dir.glob("*.py")):
                solver.check_source(path.read_text(encoding="utf-8"), str(path), {"solver": False})
            times.append(time.perf_counter() - t0)
        CACHE_TIMES[label] = (t_cold, t_warm, times[0], times[1])


def test_the_real_input_of_each_clean_project_model_meets_its_contract(reports, copies):
    """The input contract (``summary --model``, issue 30 item 3) of each model class a clean
    project defines and calls, against the sizes of its first call in the oracle's run: the
    real input meets it (``test_contracts.py`` does the same for the fixtures)."""
    from shape_lint import summary
    from test_contracts import bind, holds

    checked, broken, unchecked = [], [], []
    for (kind, name), report in reports.items():
        if kind != "clean" or not report.get("ok"):
            continue
        root = copies("clean", name)[0]
        seen = set()
        for call in report.get("calls") or []:
            model, sizes = call.get("model"), call.get("input_shapes")
            if model in seen or call.get("broken") or not sizes or None in sizes:
                continue
            seen.add(model)
            defining = [p for p in sorted(root.rglob("*.py")) if re.search(rf"^class {re.escape(model)}\b", p.read_text(encoding="utf-8"), re.M)]
            if len(defining) != 1:
                continue
            path = defining[0]
            ranks = [len(s) for s in sizes]
            readings = [c for c in summary.summarise(path.read_text(encoding="utf-8"), str(path), model) if c.get("input_ranks") == ranks]
            verdicts = []
            for k in [k for c in readings[:1] for k in c.get("accepts", [])]:
                env = bind(k, sizes)
                verdicts.append(None if env is None else False if env is False else holds(k, env))
            if True in verdicts:
                checked.append((name, model))
            elif verdicts and all(v is False for v in verdicts):
                broken.append((name, model, sizes, readings[0]["accepts"]))
            else:
                unchecked.append((name, model, [k["inputs"] for c in readings[:1] for k in c.get("accepts", [])]))
    print(f"\ninput contracts of project models met by the real input: {checked}; not comparable: {unchecked}")
    assert broken == [], broken
    if len([k for k in reports if k[0] == "clean"]) >= len(PROJECTS) - 2:  # (two need torchvision)
        assert len(checked) >= 3, checked
