"""Specs for the torchvision model zoo constructors (rust/torch/zoo.py), called on one image batch.

Listed only where real torchvision imports (`torchvision_compat.py`); elsewhere this registry is
empty and the zoo is covered by tests/test_zoo.py alone. The batch is never 1: BatchNorm in
training mode rejects a 1x1 map of one sample, a precondition the core does not model (it does
not know the mode). The heavy classifiers (VGG, AlexNet) are in tests/test_differential_zoo.py,
which skips their weight initialisation.
"""
from __future__ import annotations

import torchvision_compat

from .harness import Spec, T

# constructor -> largest image side generated (keeps densenet and resnet50 quick on CPU)
MODELS = {"resnet18": 96, "resnet34": 64, "resnet50": 64, "mobilenet_v2": 64, "squeezenet1_0": 96, "squeezenet1_1": 96, "densenet121": 48}


def _case(name, side):
    def gen(r):
        n = r.choice([2, 3])
        c = r.choice([3, 3, 3, 1, 4])
        h = r.choice([r.randint(1, side), r.randint(1, 16), 32])
        w = h if r.random() < 0.5 else r.randint(1, side)
        ctor = r.choice(["", "num_classes=5", "weights=None"])
        x = T(n, c, h, w) if r.random() < 0.85 else T(c, h, w)
        return f"torchvision.models.{name}({ctor})(x)", {"x": x}

    return gen


SPECS = [Spec(f"torchvision.models.{name}", "module", _case(name, side), cases=12) for name, side in MODELS.items()] if torchvision_compat.load() else []
