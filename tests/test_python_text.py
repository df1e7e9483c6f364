"""Text preparation in plain Python keeps what a tensor built from it needs (issue 28): a
comprehension over a string or a list whose length is not known is a list of alike items of
unknown number (`<repeat>`), so `torch.tensor` of it has rank 1 and the dtype of its items;
a vocabulary built by a dict comprehension maps tokens to ints; `list.index`, `dict.get` with
an int default, `ord`, `len` of a word are ints. The program also runs under torch."""
import subprocess
import sys

import pytest

from shape_lint import _core

SRC = """import sys
import torch
text = sys.argv[1]
words = text.split()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
t1 = torch.tensor([stoi[c] for c in text])
t2 = torch.tensor([len(w) for w in words])
t3 = torch.tensor([chars.index(c) for c in text])
t4 = torch.tensor([stoi.get(c, 0) for c in text])
t5 = torch.tensor([float(ord(c)) for c in text])
t6 = torch.FloatTensor([len(w) for w in words])
t7 = torch.LongTensor([stoi[c] for c in text])
from collections import Counter
counts = Counter(words)
t8 = torch.tensor([len(words) / (2 * counts.get(w, 1)) for w in ["to", "be"]])
ids = torch.randint(0, 5, (64,))
t9 = torch.tensor([64 / (5 * Counter(ids.tolist()).get(c, 1)) for c in range(5)], dtype=torch.float32)
t10 = torch.tensor(ids.tolist())
"""

EXPECTED = {7: "t1: [?] long", 8: "t2: [?] long", 9: "t3: [?] long", 10: "t4: [?] long", 11: "t5: [?] float", 12: "t6: [?] float", 13: "t7: [?] long", 16: "t8: [2] float",
            18: "t9: [5] float", 19: "t10: [64] long"}


@pytest.mark.parametrize("line", sorted(EXPECTED))
def test_a_tensor_of_text_data_has_rank_one_and_its_dtype(line):
    shapes = dict(_core.show_shapes(SRC, "text.py", {}))
    assert shapes.get(line) == EXPECTED[line]


def test_the_program_runs_under_torch(tmp_path):
    pytest.importorskip("torch")
    f = tmp_path / "text.py"
    f.write_text(SRC + "assert t1.dtype == t2.dtype == t3.dtype == t4.dtype == torch.long and t5.dtype == torch.float\n"
                 "assert t1.dim() == t2.dim() == t3.dim() == t4.dim() == t5.dim() == 1\n"
                 "assert t6.dtype == torch.float and t7.dtype == torch.long and t6.dim() == t7.dim() == 1\n"
                 "assert t8.shape == (2,) and t9.shape == (5,) and t10.dtype == torch.long and t10.dim() == 1\n")
    assert subprocess.run([sys.executable, str(f), "to be or not to be"]).returncode == 0
    assert subprocess.run([sys.executable, str(f), "abc abd"]).returncode == 0


def test_a_set_of_known_strings_keeps_one_of_each_and_sorted_sorts_them():
    src = "import torch\nchars = sorted(set('banana'))\nt = torch.zeros(len(chars), 2)\n"
    assert dict(_core.show_shapes(src, "s.py", {})).get(3) == "t: [3, 2] float"
