"""The analyzer against the fixture programs: exactly the marked findings, no more, no less.

Every ``tests/fixtures/<group>/<name>.py`` is checked with ``shape_lint.solver.check_source``
(the core plus the Z3 bridge for the checks it leaves undecided, as flake8 and the CLI run it);
the set of ``(row, code)`` it returns must equal the set of ``# error: SHPxxx`` markers of the
file (none for a clean fixture). ``test_oracle.py`` proves the markers against real torch.
"""
import re
from pathlib import Path

import pytest

from shape_lint import _core, solver

FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"
# `# error: SHPxxx` where torch raises, `# warning: SHPxxx` where a training-loop rule reports a
# line that runs (its symptom is shown by tests/test_training_symptoms.py)
MARKER = re.compile(r"#\s*(?:error|warning):\s*(SHP\d{3})\b")

FIXTURES = sorted(FIXTURES_DIR.glob("*/*.py"))


def fixture_id(path):
    return path.relative_to(FIXTURES_DIR).as_posix()


def expected_findings(text):
    return {
        (lineno, m.group(1))
        for lineno, line in enumerate(text.splitlines(), 1)
        for m in [MARKER.search(line)]
        if m
    }


def test_fixtures_exist():
    assert FIXTURES, "no fixtures found under %s" % FIXTURES_DIR


# Bugs the engine does not find yet (issue 3 / 4 work). Strict: a fixture listed here that
# starts passing fails the run until it is removed from the list; a false alarm on any
# fixture is never covered by this list (see `test_findings_match_markers`).
KNOWN_MISSES: dict[str, str] = {}


# Bugs that only the Z3 bridge proves: the core alone leaves the marked check undecided.
NEEDS_SOLVER = {
    "conv/strided_frames_view.py",
    "shapeops/pairwise_triu_reshape.py",
}


def check(text, path):
    return solver.check_source(text, str(path), {})


def _param(path):
    reason = KNOWN_MISSES.get(fixture_id(path))
    if reason is None:
        return path
    return pytest.param(path, marks=pytest.mark.xfail(reason="known miss: " + reason, strict=True))


def test_known_misses_exist():
    names = {fixture_id(p) for p in FIXTURES}
    assert set(KNOWN_MISSES) <= names


@pytest.mark.parametrize("path", [_param(p) for p in FIXTURES], ids=fixture_id)
def test_findings_match_markers(path):
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    expected = expected_findings(text)
    findings = check(text, path)
    got = {(f["row"], f["code"]) for f in findings}
    if got == expected:
        return

    def show(row, code, message=None):
        src = lines[row - 1].strip() if 0 < row <= len(lines) else "?"
        return "  %d %s%s\n      %s" % (row, code, ": " + message if message else "", src)

    messages = {(f["row"], f["code"]): f["message"] for f in findings}
    report = ["%s: findings differ from the markers" % fixture_id(path)]
    report.append("expected:")
    report += [show(r, c) for r, c in sorted(expected)] or ["  (nothing: clean fixture)"]
    report.append("got:")
    report += [show(r, c, messages.get((r, c))) for r, c in sorted(got)] or ["  (nothing)"]
    missing, extra = sorted(expected - got), sorted(got - expected)
    if missing:
        report.append("missed: %s" % ", ".join("%d %s" % m for m in missing))
    if extra:
        report.append("unexpected: %s" % ", ".join("%d %s" % e for e in extra))
    pytest.fail("\n".join(report), pytrace=False)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_no_false_alarms(path):
    """Never covered by KNOWN_MISSES: every reported finding must be a marked one."""
    text = path.read_text(encoding="utf-8")
    got = {(f["row"], f["code"]) for f in check(text, path)}
    extra = sorted(got - expected_findings(text))
    assert not extra, "%s: unexpected findings %s" % (fixture_id(path), extra)


@pytest.mark.parametrize("name", sorted(NEEDS_SOLVER))
def test_solver_fixtures_need_the_solver(name):
    """The core alone exports the marked check as undecided and reports nothing there."""
    pytest.importorskip("z3")
    text = (FIXTURES_DIR / name).read_text(encoding="utf-8")
    (marker,) = expected_findings(text)
    findings, undecided = _core.check_source_undecided(text, name)
    assert marker not in {(f["row"], f["code"]) for f in findings}
    assert marker in {(u["row"], u["code"]) for u in undecided}
    assert _core.check_source(text, name) == findings
    assert {(f["row"], f["code"]) for f in solver.confirm(undecided)} == {marker}
