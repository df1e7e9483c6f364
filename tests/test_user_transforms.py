"""User callables given to a dataset as its transform (a function, an instance of a class with
``__call__``, a step of a ``Compose``) or target transform: the core runs them on the sample
and collates what they return. Each program's batches as the core shows them (one alternative
for the full batch, one for the last, smaller one) are compared with the batches real torch
gives, where torchvision can be imported (``torchvision_compat``): the same program runs, each
shown line also recording its value (``; _rec(...)`` on the same line, so the line numbers
agree)."""
import re

import pytest
import torchvision_compat

from shape_lint import _core

HEADER = '''import torch
import torch.nn.functional as F
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader

to_tensor = T.ToTensor()
'''

CASES = {
    # a plain function: one tensor per sample
    "function": (
        '''
def double(img):
    return to_tensor(img) * 2


data = torchvision.datasets.FakeData(size=10, image_size=(3, 8, 8), transform=double)
for images, labels in DataLoader(data, batch_size=4):
    x = images{rec_x}
    y = labels{rec_y}
''',
        {"x": {"[4, 3, 8, 8] float", "[2, 3, 8, 8] float"}, "y": {"[4] long", "[2] long"}},
    ),
    # a dict of tensors: a dict of batches, key by key
    "dict": (
        '''
def crops(img):
    return {{"image": to_tensor(img), "flat": to_tensor(img).flatten()}}


data = torchvision.datasets.FakeData(size=10, image_size=(3, 8, 8), transform=crops)
for views, labels in DataLoader(data, batch_size=4):
    image = views["image"]{rec_image}
    flat = views["flat"]{rec_flat}
''',
        {"image": {"[4, 3, 8, 8] float", "[2, 3, 8, 8] float"}, "flat": {"[4, 192] float", "[2, 192] float"}},
    ),
    # two views in a list, from a user class calling a Compose: a list of two batches
    "two views": (
        '''
class TwoViews:
    def __init__(self, transform):
        self.transform = transform

    def __call__(self, img):
        return [self.transform(img), self.transform(img).mean(0)]


augment = T.Compose([T.RandomResizedCrop(6), T.ToTensor()])
data = torchvision.datasets.FakeData(size=10, image_size=(3, 8, 8), transform=TwoViews(augment))
for views, labels in DataLoader(data, batch_size=4):
    first = views[0]{rec_first}
    second = views[1]{rec_second}
''',
        {"first": {"[4, 3, 6, 6] float", "[2, 3, 6, 6] float"}, "second": {"[4, 6, 6] float", "[2, 6, 6] float"}},
    ),
    # a user step inside a Compose
    "compose step": (
        '''
class Scale:
    def __call__(self, x):
        return x * 0.5


data = torchvision.datasets.FakeData(size=10, image_size=(1, 5, 7), transform=T.Compose([to_tensor, Scale()]))
for images, labels in DataLoader(data, batch_size=4):
    x = images{rec_x}
''',
        {"x": {"[4, 1, 5, 7] float", "[2, 1, 5, 7] float"}},
    ),
}


def shown_by_core(source):
    out = {}
    for _, text in _core.show_shapes(source, "tf.py"):
        for alt in text.split(" | "):
            m = re.match(r"(\w+): (.*)$", alt)
            if m:
                out.setdefault(m.group(1), set()).add(m.group(2))
    return out


def dtype_name(t):
    return {"torch.float32": "float", "torch.int64": "long"}[str(t.dtype)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_core_collates_what_a_user_transform_returns(case):
    body, expected = CASES[case]
    names = re.findall(r"\{rec_(\w+)\}", body)
    source = HEADER + body.format(**{f"rec_{n}": "" for n in names})
    shown = shown_by_core(source)
    for name, want in expected.items():
        assert shown.get(name) == want, (name, shown.get(name))
    torchvision = torchvision_compat.load()
    if torchvision is None:
        pytest.skip(torchvision_compat.REASON)
    seen = {}

    def rec(name, value):
        seen.setdefault(name, set()).add(f"{list(value.shape)} {dtype_name(value)}")

    real = HEADER + body.format(**{f"rec_{n}": f"; _rec({n!r}, {n})" for n in names})
    exec(compile(real, "tf.py", "exec"), {"_rec": rec, "__name__": "tf"})
    assert seen == expected


def test_a_user_class_as_target_transform_makes_the_labels():
    # CIFAR hands its target transform the class index (an int), as MNIST does: the
    # function form is proven under torch by zoo/one_hot_target_transform.py
    source = HEADER + '''
class OneHot:
    def __init__(self, n):
        self.n = n

    def __call__(self, y):
        return F.one_hot(torch.tensor(y), self.n).float()


data = torchvision.datasets.CIFAR10("data", transform=to_tensor, target_transform=OneHot(10))
for images, targets in DataLoader(data, batch_size=64):
    y = targets
'''
    # 50000 = 781 * 64 + 16
    assert shown_by_core(source)["y"] == {"[64, 10] float", "[16, 10] float"}


def test_a_user_transform_that_gives_no_tensors_leaves_the_batch_unknown():
    source = HEADER + '''
def size_of(img):
    return img.size


def maybe(img):
    if img.mode == "RGB":
        return to_tensor(img)
    return 0


for f in [size_of, maybe]:
    data = torchvision.datasets.FakeData(size=10, image_size=(3, 8, 8), transform=f)
    for images, labels in DataLoader(data, batch_size=4):
        x = images
'''
    assert "x" not in shown_by_core(source)
