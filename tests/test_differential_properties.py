"""Property-based differential tests: hypothesis draws shapes and arguments for the core's most
used models (broadcasting, matmul, view/reshape, cat, conv, linear) and each drawn program must
not produce a disagreement with real torch (see tests/differential/harness.py for what agreement
means). Hypothesis shrinks any disagreement to a minimal program. Skipped without torch.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from differential import harness
from shape_lint import _core

torch = pytest.importorskip("torch")

dims = st.integers(min_value=1, max_value=5)
shapes = st.lists(dims, min_size=0, max_size=4).map(tuple)
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def agrees(expr: str, inputs: dict) -> None:
    outcome = harness.compare(torch, _core, expr, inputs)
    assert outcome.verdict != "disagree", outcome.detail


@SETTINGS
@given(a=shapes, b=shapes, op=st.sampled_from(["+", "*", "-", "/", "<", "=="]))
def test_broadcasting(a, b, op):
    agrees(f"a {op} b", {"a": harness.T(*a), "b": harness.T(*b)})


@SETTINGS
@given(a=st.lists(dims, min_size=1, max_size=4).map(tuple), b=st.lists(dims, min_size=1, max_size=4).map(tuple))
def test_matmul(a, b):
    agrees("a @ b", {"a": harness.T(*a), "b": harness.T(*b)})


@SETTINGS
@given(x=st.lists(dims, min_size=1, max_size=3).map(tuple), target=st.lists(st.sampled_from([-1, 1, 2, 3, 4, 6, 8, 12]), min_size=1, max_size=3))
def test_view(x, target):
    agrees(f"x.view({', '.join(map(str, target))})", {"x": harness.T(*x)})


@SETTINGS
@given(a=st.lists(dims, min_size=1, max_size=3).map(tuple), b=st.lists(dims, min_size=1, max_size=3).map(tuple), d=st.integers(-4, 3))
def test_cat(a, b, d):
    agrees(f"torch.cat([a, b], dim={d})", {"a": harness.T(*a), "b": harness.T(*b)})


@SETTINGS
@given(
    x=st.lists(st.integers(1, 12), min_size=3, max_size=4).map(tuple),
    cin=st.integers(1, 4), k=st.integers(1, 5), stride=st.integers(1, 3), pad=st.integers(0, 2),
)
def test_conv2d(x, cin, k, stride, pad):
    agrees(f"nn.Conv2d({cin}, 2, {k}, stride={stride}, padding={pad})(x)", {"x": harness.T(*x)})


@SETTINGS
@given(x=st.lists(dims, min_size=1, max_size=4).map(tuple), fin=dims, fout=dims)
def test_linear(x, fin, fout):
    agrees(f"nn.Linear({fin}, {fout})(x)", {"x": harness.T(*x)})
