"""The torchvision model zoo (rust/torch/zoo.py) against real torchvision.

Each case is a small fine-tuning program: build a zoo model (random weights), maybe edit it the
way fine-tuning scripts do (replace the head, the stem, cut off the head with `children()`),
and call it on one input. The same program runs under real torch + torchvision and through the
core, and they must agree:
- torch runs: the core reports no SHP1xx finding, and a fully known output shape it infers is
  torch's;
- torch raises: the core reports at the line torch raises at (the `model(x)` line), or stays
  silent without claiming a fully known shape.
Every model must agree on most of its cases (`MIN_AGREE`). Skipped, with the reason, when
torchvision is not importable (`torchvision_compat.py`; the analyzer never needs it).
"""
from __future__ import annotations

import contextlib
import random
import traceback

import pytest
import torchvision_compat

from shape_lint import _core

torch = pytest.importorskip("torch")
torchvision = torchvision_compat.load()
if torchvision is None:
    pytest.skip(torchvision_compat.REASON, allow_module_level=True)

MIN_AGREE = 0.7
FILENAME = "<zoo-case>"

# name -> (head attribute as users replace it, its in_features, the stem conv attribute)
MODELS = {
    "resnet18": ("fc", 512, "conv1"),
    "resnet34": ("fc", 512, "conv1"),
    "resnet50": ("fc", 2048, "conv1"),
    "resnet101": ("fc", 2048, "conv1"),
    "resnet152": ("fc", 2048, "conv1"),
    "vgg11": ("classifier[6]", 4096, "features[0]"),
    "vgg11_bn": ("classifier[6]", 4096, "features[0]"),
    "vgg13": ("classifier[6]", 4096, "features[0]"),
    "vgg13_bn": ("classifier[6]", 4096, "features[0]"),
    "vgg16": ("classifier[6]", 4096, "features[0]"),
    "vgg16_bn": ("classifier[6]", 4096, "features[0]"),
    "vgg19": ("classifier[6]", 4096, "features[0]"),
    "vgg19_bn": ("classifier[6]", 4096, "features[0]"),
    "alexnet": ("classifier[6]", 4096, "features[0]"),
    "mobilenet_v2": ("classifier[1]", 1280, "features[0][0]"),
    "squeezenet1_0": (None, None, "features[0]"),
    "squeezenet1_1": (None, None, "features[0]"),
    "densenet121": ("classifier", 1024, None),
    "densenet161": ("classifier", 2208, None),
    "densenet169": ("classifier", 1664, None),
    "densenet201": ("classifier", 1920, None),
    "mobilenet_v3_small": ("classifier[3]", 1024, "features[0][0]"),
    "mobilenet_v3_large": ("classifier[3]", 1280, "features[0][0]"),
    "efficientnet_b0": ("classifier[1]", 1280, "features[0][0]"),
}
HEAVY = {"resnet101", "resnet152", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn", "vgg13_bn", "densenet121", "densenet161", "densenet169", "densenet201"}


def cases(name, rng, n):
    """`n` programs for one model: (source, a short description)."""
    head, in_features, stem = MODELS[name]
    out = []
    for k in range(n):
        hi = 80 if name in HEAVY else 140
        h, w = rng.randint(1, hi), rng.randint(1, hi)
        if rng.random() < 0.5:
            h = w = rng.choice([1, 16, 31, 32, 33, 63, 64, 65])
        # never 1: BatchNorm in training mode needs more than one value per channel, which a
        # 1x1 map at batch 1 violates; the core does not know the mode and does not model it
        batch = rng.choice([2, 3])
        channels = 3
        ctor = rng.choice(["weights=None", "", "num_classes=7", "pretrained=False"])
        edit = ""
        kind = ["plain", "head", "stem", "unbatched", "cut"][k % 5]
        if kind == "head" and head:
            width = rng.choice([in_features, in_features, 2 * in_features, 512, 1000])
            edit = f"model.{head} = nn.Linear({width}, 10)\n"
        elif kind == "stem" and stem:
            conv = f"model.{stem}"
            channels = rng.choice([1, 3])
            edit = f"{conv} = nn.Conv2d({rng.choice([1, 3])}, {conv}.out_channels, {conv}.kernel_size, {conv}.stride, {conv}.padding, bias=False)\n"
        elif kind == "cut":
            edit = "model = nn.Sequential(*list(model.children())[:-1])\n"
        shape = (channels, h, w) if kind == "unbatched" else (batch, channels, h, w)
        src = (
            "import torch\nimport torch.nn as nn\nimport torchvision\n"
            f"model = torchvision.models.{name}({ctor})\n"
            f"{edit}"
            f"x = torch.randn{shape}\n"
            "y = model(x)\n"
        )
        out.append((src, f"{kind} {shape}"))
    return out


@contextlib.contextmanager
def no_weight_init():
    """Skip weight initialisation (most of the time of building VGG or AlexNet): parameters keep
    whatever `torch.empty` gave them, which changes no shape."""
    patched = [(torch.nn.init, n) for n in ("kaiming_normal_", "kaiming_uniform_", "normal_", "uniform_", "constant_", "zeros_", "ones_", "trunc_normal_")]
    patched += [(torch.nn.Linear, "reset_parameters"), (torch.nn.modules.conv._ConvNd, "reset_parameters")]
    saved = [(obj, n, getattr(obj, n)) for obj, n in patched]
    for obj, n in patched:
        setattr(obj, n, lambda *a, **k: a[0] if a else None)
    try:
        yield
    finally:
        for obj, n, f in saved:
            setattr(obj, n, f)


def run_torch(src):
    """(output shape, None) when the program runs, (None, line) when torch raises there."""
    env = {"__name__": "__zoo_case__"}
    try:
        with torch.no_grad(), no_weight_init():
            exec(compile(src, FILENAME, "exec"), env)  # noqa: S102 - generated test program
    except Exception as e:  # noqa: BLE001 - any torch error counts as "raises"
        lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == FILENAME]
        return None, lines[-1]
    return tuple(env["y"].shape), None


def core_view(src):
    findings = [f for f in _core.check_source(src, "t.py") if f["code"].startswith("SHP1") or f["code"] == "SHP202"]
    shown = dict(_core.show_shapes(src, "t.py")).get(src.count("\n"))
    known = None
    if shown and "|" not in shown and "[" in shown:
        dims = [d.strip() for d in shown[shown.index("[") + 1: shown.index("]")].split(",") if d.strip()]
        if all(d.isdigit() for d in dims):
            known = tuple(int(d) for d in dims)
    return findings, shown, known


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_model_agrees_with_torchvision(name):
    torch.manual_seed(0)
    rng = random.Random(name)
    tally = {"agree": 0, "silent": 0}
    n = 10 if name in HEAVY else 20
    for src, what in cases(name, rng, n):
        want, raised_at = run_torch(src)
        findings, shown, known = core_view(src)
        if want is not None:
            assert not findings, f"{name} {what}: torch gives {want}, core reports {findings[0]['message']}\n{src}"
            if known is not None:
                assert known == want, f"{name} {what}: torch gives {want}, core infers {shown}\n{src}"
                tally["agree"] += 1
            else:
                tally["silent"] += 1
            continue
        if findings:
            rows = {f["row"] for f in findings}
            assert rows == {raised_at}, f"{name} {what}: torch raises at line {raised_at}, core reports {findings}\n{src}"
            tally["agree"] += 1
        else:
            assert known is None, f"{name} {what}: torch raises, core infers {shown} and reports nothing\n{src}"
            tally["silent"] += 1
    assert tally["agree"] >= MIN_AGREE * n, f"{name}: {tally}"

