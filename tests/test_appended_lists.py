"""Lists a loop appends to (`rust/value/alike.rs`): per-batch outputs collected in a DataLoader
loop, per-step items of a rollout. After a loop run generalised, such a list holds an unknown
number of items that are all one value: the dims every iteration shares are kept, the others
are not known (the last, smaller batch), and what the list is concatenated or stacked into has
the item's rank and dtype. Before, the loop's appends made the list opaque."""
from shape_lint import _core

LOADER = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(100, 8), torch.randint(0, 3, (100,))), batch_size=16)
model = nn.Linear(8, 3)
preds, fixed = [], []
for xb, yb in loader:
    preds.append(model(xb))
    fixed.append(torch.zeros(16, 8))
"""


def shapes(src):
    return dict(_core.show_shapes(src, "appended.py", {}))


def findings(src):
    return [(f["code"], f["row"]) for f in _core.check_source(src, "appended.py", {})]


def test_per_batch_outputs_concatenate_to_the_items_rank_with_the_batch_dims_unknown():
    src = LOADER + "c = torch.cat(preds)\ns = torch.stack(preds)\nf = torch.stack(fixed, dim=1)\nfirst = preds[0]\n"
    got = shapes(src)
    # the full batches are 16 rows and the last 4: the rows are not one number
    assert got[10] == "c: [?, 3] float", got
    assert got[11] == "s: [?, ?, 3] float", got
    # a dim every iteration shares is kept
    assert got[12] == "f: [16, ?, 8] float", got
    assert got[13] == "first: [?, 3] float", got


def test_a_mismatch_after_the_concatenation_is_reported_and_a_fitting_product_is_not():
    assert findings(LOADER + "scores = torch.cat(preds) @ torch.randn(4, 5)\n") == [("SHP101", 10)]
    assert findings(LOADER + "scores = torch.cat(preds) @ torch.randn(3, 5)\n") == []


def test_a_reversed_rollout_is_iterated_item_by_item():
    src = """import torch
data = []
done = False
while not done:
    data.append((1.0, torch.randn(2)))
    done = torch.rand(1).item() > 0.9
for r, p in data[::-1]:
    x = p @ torch.randn(5, 5)
"""
    assert findings(src) == [("SHP101", 8)]


def test_items_that_differ_between_branches_keep_only_what_they_share():
    src = """import torch
import sys
parts = []
for w in sys.argv:
    if w.startswith("-"):
        parts.append(torch.zeros(2, 3))
    else:
        parts.append(torch.zeros(2, 4))
c = torch.cat(parts)
y = c @ torch.zeros(3, 5)
z = c @ torch.zeros(4, 5)
"""
    got = shapes(src)
    assert got[9] == "c: [?, ?] float", got
    # either width may meet either product on some run
    assert findings(src) == []


def test_a_list_whose_items_the_loop_replaces_or_that_holds_objects_stays_opaque():
    src = """import sys
import torch
kept, dicts = [torch.zeros(2, 3)], []
for w in sys.argv:
    kept[0] = torch.zeros(5)
    dicts.append({"x": torch.zeros(2, 3)})
a = torch.cat(kept)
b = dicts[0]["x"]
"""
    got = shapes(src)
    assert 7 not in got and 8 not in got, got


def test_a_list_slice_takes_any_step():
    src = """import torch
l = [1, 2, 3, 4, 5]
t = torch.zeros(len(l[::-2]), l[::-2][0], l[-2::-1][0], len(l[3:0:-1]), len(l[::3]))
"""
    assert shapes(src)[3] == "t: [3, 5, 4, 3, 2] float"


def test_an_index_of_a_value_not_known_gives_a_tensor_of_the_same_dtype():
    src = """import torch
from torch.distributions import Categorical
probs = torch.softmax(torch.randn(4), dim=0)
a = Categorical(probs).sample()
p = probs[a]
"""
    assert shapes(src)[5].endswith(" float"), shapes(src)
