"""Ints of unknown value stay ints (issue 28): `int()`, `round()`, `len()` of a value not
followed, `//`, `%`, `max`/`min` and `abs` of ints the core cannot order give an int of its own,
so that a tensor sized by one keeps its rank and dtype (its size is a symbol), rather than going
Unknown. Each case also runs under torch for a concrete argv."""
import subprocess
import sys

import pytest

from shape_lint import _core

SRC = """import sys
import torch
k = int(sys.argv[1])
a = torch.zeros(k, 3)
b = torch.zeros(k // 2, 3)
c = torch.zeros(k % 4, 3)
d = torch.zeros(max(k, len(sys.argv)), 3)
e = torch.zeros(round(float(sys.argv[2])), 3)
f = torch.zeros(len(torch.tensor([ord(ch) for ch in sys.argv[3]])), 3)
g = torch.zeros(abs(k - 5), 3)
h = torch.zeros(k >> 1, 3)
"""


def shapes():
    return {line: text for line, text in _core.show_shapes(SRC, "ints.py", {})}


@pytest.mark.parametrize("line", range(4, 12))
def test_a_tensor_sized_by_an_int_of_unknown_value_keeps_rank_and_dtype(line):
    text = shapes().get(line)
    assert text is not None, f"line {line} went Unknown"
    name, shape = text.split(": ", 1)
    assert shape.endswith(", 3] float"), text


def test_the_program_runs_under_torch(tmp_path):
    pytest.importorskip("torch")
    f = tmp_path / "ints.py"
    f.write_text(SRC)
    assert subprocess.run([sys.executable, str(f), "9", "2.6", "abc"]).returncode == 0


SLICES = """import sys
import torch
words = sys.argv[1:]
k = len(words) + 1
x = torch.randn(10, 3)
y = x[:-k]
z = x[-k:]
w = x[k:]
"""


def test_a_slice_bound_of_unknown_sign_is_not_taken_as_a_start_at_zero():
    """`x[:-k]` with a symbolic k >= 1 keeps n - k rows (or none), never 0 as if -k were an index
    from the start; a bound known non-negative (`x[k:]`) counts from the start."""
    rows = {line: text for line, text in _core.show_shapes(SLICES, "slices.py", {})}
    assert "[0, 3]" not in rows.get(6, "") and "[0, 3]" not in rows.get(7, ""), rows
    assert rows.get(8, "").endswith(", 3] float"), rows


def test_slices_of_unknown_sign_under_torch(tmp_path):
    pytest.importorskip("torch")
    f = tmp_path / "slices.py"
    f.write_text(SLICES + "assert y.shape[0] == 10 - k and z.shape[0] == k and w.shape[0] == 10 - k\n")
    assert subprocess.run([sys.executable, str(f), "a", "b"]).returncode == 0
