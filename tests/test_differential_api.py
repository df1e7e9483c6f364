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

from differential import harness
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
