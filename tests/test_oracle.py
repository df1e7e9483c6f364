"""The torch oracle: every fixture program behaves under real torch as its markers say.

A fixture with a ``# error: SHP1xx`` marker must fail, and the innermost traceback frame inside
the fixture file must be the marked line; a fixture without a marker must run to completion.
Each fixture runs in its own interpreter (through ``oracle_runner.py``, which reports the
traceback as JSON), in a temporary working directory, with a 60 s timeout. The selected
fixtures run concurrently, one per core and single-threaded, the first time a test needs a
report (``oracle_reports.py``, which keeps them for ``test_summary.py``); most of the time is
torch's import (a few seconds per fixture).

Also checks the fixture conventions (see ``fixtures/README.md``) and that every marker code is
registered in ``shape_lint._core.rules()``.
"""
import re
from pathlib import Path

import oracle_reports
import pytest

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
FIXTURES_DIR = oracle_reports.FIXTURES_DIR
GROUPS = ("linear", "conv", "seq", "shapeops", "constructs", "zoo", "device", "training", "may_fail")
MARKER = re.compile(r"#\s*error:\s*(SHP\d{3})\b")
# a line that runs but trains the wrong thing (a training-loop rule): the fixture runs to the end
WARNING = re.compile(r"#\s*warning:\s*(SHP\d{3})\b")

FIXTURES = sorted(FIXTURES_DIR.glob("*/*.py"))


fixture_id = oracle_reports.fixture_id


def markers(path, pattern=MARKER):
    """``[(line, code)]`` of the ``# error: SHPxxx`` markers of a fixture (or of `pattern`)."""
    found = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = pattern.search(line)
        if m:
            found.append((lineno, m.group(1)))
    return found


@pytest.fixture(scope="module")
def reports(request, tmp_path_factory):
    """Reports of every fixture selected in this session, computed concurrently once
    (``oracle_reports.py``: test_summary.py reads the same runs)."""
    return oracle_reports.for_module(request, __name__, tmp_path_factory.mktemp("oracle"))


def describe(report):
    frames = "\n".join("    %s:%s" % (f, line) for f, line in report.get("frames", [])[:8])
    return "error: %s\ninnermost frames:\n%s\noutput tail:\n%s" % (
        report.get("error"), frames or "    (none)", report.get("output", "")[-1500:])


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_fixture_behaves_as_marked(path, reports):
    report = reports[path]
    if report.get("skip"):
        # zoo fixtures need torchvision; without it they prove nothing either way
        pytest.skip("%s: %s" % (fixture_id(path), report["skip"]))
    marks = markers(path)
    if not marks:
        # a clean fixture, or one whose marked line runs (a `# warning:` marker)
        assert report["ok"], "fixture %s without an error marker failed under torch\n%s" % (fixture_id(path), describe(report))
        return
    assert len(marks) == 1, "%s: a bug fixture has exactly one marker, got %s" % (fixture_id(path), marks)
    line, code = marks[0]
    assert not report["ok"], "%s ran to completion, but line %d is marked %s" % (fixture_id(path), line, code)
    in_file = [ln for f, ln in report["frames"] if Path(f).resolve() == path.resolve()]
    assert in_file, "%s failed outside the fixture file\n%s" % (fixture_id(path), describe(report))
    assert in_file[0] == line, "%s: torch raised at line %d, the marker (%s) is at line %d\n%s" % (
        fixture_id(path), in_file[0], code, line, describe(report))


def test_fixture_conventions():
    assert len(FIXTURES) > 0, "no fixtures found under %s" % FIXTURES_DIR
    problems = []
    for path in FIXTURES:
        fid = fixture_id(path)
        group = path.parent.name
        marks = markers(path) + markers(path, WARNING)
        if group not in GROUPS:
            problems.append("%s: group %r is not one of %s" % (fid, group, GROUPS))
        if path.stem.endswith("_ok"):
            if marks:
                problems.append("%s: an _ok twin must be clean, has markers %s" % (fid, marks))
        elif marks:
            if len(marks) != 1:
                problems.append("%s: exactly one marker per bug fixture, got %s" % (fid, marks))
            if not path.with_name(path.stem + "_ok.py").exists():
                problems.append("%s: bug fixture without an _ok twin" % fid)
    assert not problems, "\n".join(problems)


def test_marker_codes_are_registered():
    core = pytest.importorskip("shape_lint._core")
    registered = {r["code"] for r in core.rules()}
    used = {}
    for path in FIXTURES:
        for line, code in markers(path) + markers(path, WARNING):
            used.setdefault(code, []).append("%s:%d" % (fixture_id(path), line))
    missing = {code: where for code, where in used.items() if code not in registered}
    assert not missing, "marker codes missing from shape_lint._core.rules(): %s" % missing
