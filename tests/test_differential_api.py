"""The core's torch API models against real torch, API by API (issue 4's differential suite).

Specs live in tests/differential/specs_*.py (one `SPECS` list each); the harness is
tests/differential/harness.py. Every API must have zero disagreements and must agree with torch
on at least `MIN_AGREE` of its cases: an API the core is silent about is not modelled, and it
does not belong in the table. The coverage table is printed at the end of the pytest run
(tests/conftest.py). Skipped when torch is absent.
"""
from __future__ import annotations

import importlib
import pkgutil

import pytest

from differential import harness, unread
from shape_lint import _core

MIN_AGREE = 0.5  # of the cases of an API


def all_specs() -> list[harness.Spec]:
    import differential

    specs = []
    for mod in sorted(m.name for m in pkgutil.iter_modules(differential.__path__) if m.name.startswith("specs_")):
        specs += importlib.import_module(f"differential.{mod}").SPECS
    return specs


SPECS = all_specs()
TALLIES: dict[str, tuple[str, harness.Tally]] = {}


def test_api_names_are_unique():
    names = [s.api for s in SPECS]
    dup = sorted({n for n in names if names.count(n) > 1})
    assert not dup, f"specs listed twice: {dup}"


@pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])
def test_api_agrees_with_torch(spec):
    torch = pytest.importorskip("torch")
    tally = harness.run_spec(torch, _core, spec)
    TALLIES[spec.api] = (spec.kind, tally)
    assert not tally.failures, f"{spec.api}: {tally.disagree} disagreements, first:\n{tally.failures[0]}"
    assert tally.agree >= MIN_AGREE * tally.cases, f"{spec.api}: only {tally.agree}/{tally.cases} cases agree ({tally.silent} silent)"


# At most this many agreeing cases of each API are re-run with an unread argument, half of
# them cases where torch raises when there are any (runtime: every variant is one core run).
UNREAD_CASES = 6
UNREAD: dict[str, str] = {}  # api -> "ok" or why it was skipped, for the summary (conftest.py)


def _agreeing_cases(spec):
    torch = pytest.importorskip("torch")
    tally = TALLIES[spec.api][1] if spec.api in TALLIES else harness.run_spec(torch, _core, spec)
    agree = [(e, i) for e, i, o in tally.records if o.verdict == "agree"]
    raised = [(e, i) for e, i, o in tally.records if o.verdict == "agree" and o.raised]
    ran = [c for c in agree if c not in raised]
    half = UNREAD_CASES // 2
    return raised[:max(half, UNREAD_CASES - len(ran))] + ran[:max(half, UNREAD_CASES - len(raised))]


@pytest.mark.parametrize("spec", SPECS, ids=[s.api for s in SPECS])
def test_unread_argument_makes_the_result_unknown(spec):
    """The registry's gate, API by API (differential/unread.py): the API is registered, and adding
    an argument its entry does not read to an agreeing case leaves `y` Unknown and unreported."""
    torch = pytest.importorskip("torch")
    name = unread.registry_name(_core, spec.api)
    cases = _agreeing_cases(spec)
    calls = [c for c in cases if unread.has_call(spec, c[0])]
    if cases and not calls:
        # an operator, attribute or subscript (`a + b`, `x.T`, `x[0]`): no call to add an argument to
        UNREAD[spec.api] = "skipped: not a call" + ("" if name else " (not in the registry)")
        pytest.skip(f"{spec.api} is not called in its cases (an operator or attribute): no argument to add")
    assert name, f"{spec.api} ({unread.qualified(spec.api)}) is not in the registry"
    if not cases:
        UNREAD[spec.api] = "skipped: no case agrees"
        pytest.skip(f"{spec.api}: no case agrees with torch")
    entry = unread.registry(_core)[name]
    failures = [f for expr, inputs in calls for f in unread.check_case(torch, _core, spec, entry, expr, inputs)]
    UNREAD[spec.api] = f"{len(failures)} failures" if failures else "ok"
    assert not failures, f"{len(failures)} cases still modelled with an unread argument, e.g.\n" + "\n".join(failures[:5])


def test_registry_entries_without_a_spec():
    """Printed (not failed): registry entries no differential spec proves."""
    covered = {unread.registry_name(_core, s.api) for s in SPECS}
    missing = sorted(set(unread.registry(_core)) - covered)
    UNREAD["<registry entries without a spec>"] = ", ".join(missing) or "none"
    print(f"registry entries without a differential spec ({len(missing)}): {', '.join(missing)}")


class _FakeCore:
    """A core that infers a fixed shape text and maybe reports: to test the harness itself."""

    def __init__(self, shown, report=False):
        self.shown, self.report = shown, report

    def check_source(self, src, filename):
        return [{"code": "SHP101", "message": "fake"}] if self.report else []

    def show_shapes(self, src, filename):
        return [(src.count("\n"), self.shown)] if self.shown else []


@pytest.mark.parametrize(
    ("core", "expr", "verdict"),
    [
        (_FakeCore("y: [2, 3] float"), "a + b", "agree"),
        (_FakeCore("y: [2, 4] float"), "a + b", "disagree"),  # wrong shape
        (_FakeCore("y: [2, 3] long"), "a + b", "disagree"),  # wrong dtype
        (_FakeCore(None, report=True), "a + b", "disagree"),  # a false alarm
        (_FakeCore("y: [2, ?] float"), "a + b", "silent"),
        (_FakeCore(None, report=True), "a @ b", "agree"),  # torch raises, core reports
        (_FakeCore("y: [2, 3] float"), "a @ b", "disagree"),  # torch raises, core infers a shape
        (_FakeCore(None), "a @ b", "silent"),
    ],
)
def test_harness_verdicts(core, expr, verdict):
    torch = pytest.importorskip("torch")
    inputs = {"a": harness.T(2, 3), "b": harness.T(2, 3)}
    assert harness.compare(torch, core, expr, inputs).verdict == verdict
