"""A float compared with an int decides a branch as Python does (`self.drop > 0` with
`drop=0.`, timm's residual blocks): the comparison was left undecided, so both sides of the
`if` ran, and a bug on one side only was never reported. The truth of every comparison is
Python's own (`eval` here), the bug a matmul torch rejects on the side the test selects."""
import itertools
import operator

import pytest

from shape_lint import _core

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
FLOATS = ["0.", "0.5", "2.0", "2.5", "-1.5", "1e20", "-9007199254740993.0"]
INTS = ["0", "2", "3", "-2", "True", "10**20", "-9007199254740992"]
CASES = [(a, op, b) for a, b in itertools.chain(itertools.product(FLOATS, INTS), itertools.product(INTS, FLOATS), [("2.5", "2.0")]) for op in OPS]

TEMPLATE = """import torch
a = {a}
b = {b}
if a {op} b:
    w = torch.randn({taken}, {taken})
else:
    w = torch.randn({other}, {other})
y = torch.randn(2, 4) @ w
"""


def reported(src):
    return [(f["row"], f["code"]) for f in _core.check_source(src, "cmp.py") if f["code"] != "SHP002"]


@pytest.mark.parametrize("a,op,b", CASES)
def test_a_comparison_of_a_float_and_an_int_takes_pythons_side(a, op, b):
    truth = OPS[op](eval(a), eval(b))
    bug_if_true = TEMPLATE.format(a=a, b=b, op=op, taken=3, other=4)
    bug_if_false = TEMPLATE.format(a=a, b=b, op=op, taken=4, other=3)
    assert reported(bug_if_true) == ([(8, "SHP101")] if truth else [])
    assert reported(bug_if_false) == ([] if truth else [(8, "SHP101")])


SYMBOLIC = """import sys
import torch
n = len(sys.argv)
if {test}:
    w = torch.randn(3, 3)
else:
    w = torch.randn(4, 4)
y = torch.randn(2, 4) @ w
"""


def findings(src):
    return [(f["row"], f["code"], f["message"]) for f in _core.check_source(src, "cmp.py")]


@pytest.mark.parametrize(
    "test,same_as",
    [
        ("n > 0.5", "n > 0"),
        ("n >= 0.5", "n >= 1"),
        ("n < 0.5", "n < 1"),
        ("n <= 0.99", "n <= 0"),
        ("n == 2.0", "n == 2"),
        ("n != 2.0", "n != 2"),
        ("n > 1.5", "n > 1"),
        ("n < 2.5", "n < 3"),
        ("0.5 < n", "n > 0"),
        ("2.5 >= n", "n <= 2"),
        ("n == 1.5", "False"),
        ("n != 1.5", "True"),
    ],
)
def test_a_symbolic_int_against_a_float_is_the_int_comparison_python_makes_of_it(test, same_as):
    """`n > 2.5` holds for exactly the ints `n > 2` holds for: the findings, with the path
    conditions in their messages, are those of the int comparison; `n == 1.5` never holds."""
    got = findings(SYMBOLIC.format(test=test))
    assert got == findings(SYMBOLIC.format(test=same_as)), got


def test_a_float_past_what_an_int_of_the_core_holds_stays_undecided():
    """1e300 is an integer no i128 holds: neither side of the test is taken for certain."""
    for taken, other in [(3, 4), (4, 3)]:
        assert reported(TEMPLATE.format(a="1e300", b="0", op="<", taken=taken, other=other)) == []
