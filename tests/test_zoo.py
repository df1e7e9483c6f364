"""torchvision.models constructors as analysable modules (rust/torch/zoo.rs, zoo.py).

Core-only: these need neither torch nor torchvision. What the shapes must be was checked against
real torchvision (tests/test_differential_zoo.py runs the same kind of programs under both).
"""
import time

import pytest

from shape_lint import _core

PRELUDE = "import torch\nimport torch.nn as nn\nimport torchvision\n"


def shapes(src):
    return dict(_core.show_shapes(src, "t.py"))


def findings(src):
    return [(f["row"], f["code"], f["message"]) for f in _core.check_source(src, "t.py") if f["code"].startswith("SHP")]


@pytest.mark.parametrize("name, classes", [
    ("resnet18", 1000), ("resnet34", 1000), ("resnet50", 1000), ("resnet101", 1000), ("resnet152", 1000),
    ("vgg11", 1000), ("vgg13_bn", 1000), ("vgg16", 1000), ("vgg19_bn", 1000), ("alexnet", 1000),
    ("mobilenet_v2", 1000), ("squeezenet1_0", 1000), ("squeezenet1_1", 1000), ("densenet121", 1000),
    ("mobilenet_v3_small", 1000), ("mobilenet_v3_large", 1000), ("efficientnet_b0", 1000),
])
def test_every_model_maps_images_to_logits(name, classes):
    src = PRELUDE + f"model = torchvision.models.{name}(weights=None)\ny = model(torch.randn(2, 3, 224, 224))\n"
    assert findings(src) == []
    assert shapes(src)[5] == f"y: [2, {classes}] float"


@pytest.mark.parametrize("ctor", [
    "import torchvision\nm = torchvision.models.resnet50(num_classes=7)",
    "from torchvision import models\nm = models.resnet50(num_classes=7, progress=False)",
    "from torchvision.models import resnet50\nm = resnet50(weights=None, num_classes=7)",
    "import torchvision.models as tvm\nm = tvm.resnet50(num_classes=7)",
])
def test_import_spellings_and_num_classes(ctor):
    src = "import torch\n" + ctor + "\ny = m(torch.randn(1, 3, 64, 64))\n"
    assert shapes(src)[4] == "y: [1, 7] float"


def test_weights_arguments_are_ignored():
    src = PRELUDE + (
        "a = torchvision.models.resnet18(weights=torchvision.models.ResNet18_Weights.DEFAULT)\n"
        "b = torchvision.models.resnet18(pretrained=True)\n"
        "ya = a(torch.randn(1, 3, 32, 32))\n"
        "yb = b(torch.randn(1, 3, 32, 32))\n"
    )
    got = shapes(src)
    assert got[6] == "ya: [1, 1000] float" and got[7] == "yb: [1, 1000] float"


def test_weights_with_another_head_size_is_unknown():
    # torchvision raises ValueError here: the model is not built, so nothing is claimed about it
    src = PRELUDE + "m = torchvision.models.resnet18(weights='DEFAULT', num_classes=10)\nm.fc = nn.Linear(7, 3)\ny = m(torch.randn(1, 3, 32, 32))\n"
    assert findings(src) == []
    assert 6 not in shapes(src)


def test_head_attributes_are_the_real_sizes():
    src = PRELUDE + (
        "r = torchvision.models.resnet50()\n"
        "v = torchvision.models.vgg16()\n"
        "mb = torchvision.models.mobilenet_v2()\n"
        "d = torchvision.models.densenet121()\n"
        "t = torch.zeros(r.fc.in_features, v.classifier[6].in_features, v.classifier[0].in_features, mb.classifier[1].in_features, d.classifier.in_features, r.conv1.out_channels)\n"
    )
    assert shapes(src)[8] == "t: [2048, 4096, 25088, 1280, 1024, 64] float"


def test_wrong_fc_reports_at_the_model_call_with_shapes():
    src = PRELUDE + (
        "model = torchvision.models.resnet18(weights=None)\n"
        "model.fc = nn.Linear(2048, 10)\n"
        "x = torch.randn(4, 3, 224, 224)\n"
        "out = model(x)\n"
    )
    [(row, code, message)] = findings(src)
    assert (row, code) == (7, "SHP101")
    assert "2048" in message and "[4, 512]" in message


def test_right_fc_from_in_features_runs():
    src = PRELUDE + (
        "model = torchvision.models.resnet18(weights=None)\n"
        "model.fc = nn.Sequential(nn.Dropout(0.2), nn.Linear(model.fc.in_features, 10))\n"
        "out = model(torch.randn(4, 3, 224, 224))\n"
    )
    assert findings(src) == []
    assert shapes(src)[6] == "out: [4, 10] float"


def test_grayscale_stem_is_honoured():
    stem = "model.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)\n"
    ok = PRELUDE + "model = torchvision.models.resnet34()\n" + stem + "y = model(torch.randn(2, 1, 64, 64))\n"
    assert findings(ok) == []
    assert shapes(ok)[6] == "y: [2, 1000] float"
    bad = PRELUDE + "model = torchvision.models.resnet34()\n" + stem + "y = model(torch.randn(2, 3, 64, 64))\n"
    assert [(r, c) for r, c, _ in findings(bad)] == [(6, "SHP107")]
    unreplaced = PRELUDE + "model = torchvision.models.resnet34()\ny = model(torch.randn(2, 1, 64, 64))\n"
    assert [(r, c) for r, c, _ in findings(unreplaced)] == [(5, "SHP107")]


def test_vgg_classifier_index_replacement():
    src = PRELUDE + (
        "model = torchvision.models.vgg16()\n"
        "model.classifier[6] = nn.Linear(4096, 5)\n"
        "y = model(torch.randn(1, 3, 64, 64))\n"
        "model.classifier[6] = nn.Linear(1000, 5)\n"
        "z = model(torch.randn(1, 3, 64, 64))\n"
    )
    assert shapes(src)[6] == "y: [1, 5] float"
    assert [(r, c) for r, c, _ in findings(src)] == [(8, "SHP101")]


def test_headless_backbone_from_children():
    src = PRELUDE + (
        "resnet = torchvision.models.resnet50()\n"
        "backbone = nn.Sequential(*list(resnet.children())[:-1])\n"
        "f = backbone(torch.randn(2, 3, 96, 96))\n"
    )
    assert shapes(src)[6] == "f: [2, 2048, 1, 1] float"


def test_too_small_input_fails_inside_the_backbone():
    src = PRELUDE + "m = torchvision.models.alexnet()\ny = m(torch.randn(1, 3, 32, 32))\n"
    assert [(r, c) for r, c, _ in findings(src)] == [(5, "SHP109")]


def test_unbatched_input_fails_at_batchnorm():
    # torchvision's ResNet has BatchNorm2d, which needs a batch dim
    src = PRELUDE + "m = torchvision.models.resnet18()\ny = m(torch.randn(3, 64, 64))\n"
    assert [(r, c) for r, c, _ in findings(src)] == [(5, "SHP106")]


def test_zoo_inside_a_user_module_reports_at_the_innermost_user_line():
    src = PRELUDE + (
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.body = torchvision.models.resnet18()\n"
        "        self.body.fc = nn.Linear(100, 2)\n"
        "    def forward(self, x):\n"
        "        return self.body(x)\n"
        "net = Net()\n"
        "y = net(torch.randn(2, 3, 32, 32))\n"
    )
    assert [(r, c) for r, c, _ in findings(src)] == [(10, "SHP101")]


def test_unmodelled_models_and_options_are_silent():
    src = PRELUDE + (
        "a = torchvision.models.vit_b_16()\n"
        "b = torchvision.models.mobilenet_v2(width_mult=0.5)\n"
        "ya = a(torch.randn(1, 3, 7, 7))\n"
        "yb = b(torch.randn(1, 3, 7, 7))\n"
        "zb = nn.Linear(3, 4)(yb)\n"
    )
    assert findings(src) == []


def test_resnet152_analysis_takes_milliseconds():
    src = PRELUDE + "model = torchvision.models.resnet152()\ny = model(torch.randn(2, 3, 224, 224))\n"
    findings(src)  # warm up
    t0 = time.perf_counter()
    got = findings(src)
    elapsed = time.perf_counter() - t0
    print(f"\nresnet152 build + forward analysis: {elapsed * 1000:.1f} ms")
    assert got == []
    assert elapsed < 0.4, f"{elapsed * 1000:.0f} ms"


def test_negative_index_replacement_and_unknown_index():
    src = PRELUDE + (
        "model = torchvision.models.vgg11()\n"
        "model.classifier[-1] = nn.Linear(4096, 3)\n"
        "y = model(torch.randn(2, 3, 32, 32))\n"
        "def pick(k):\n"
        "    model.classifier[k] = nn.Linear(5, 5)\n"
        "    return model(torch.randn(2, 3, 32, 32))\n"
        "z = pick(len(str(model)))\n"
    )
    assert shapes(src)[6] == "y: [2, 3] float"
    # an index the engine does not know makes every slot unknown: no report, no shape
    assert findings(src) == []
    assert 10 not in shapes(src)


def test_zoo_backbone_with_unknown_input_in_forward_is_silent():
    src = PRELUDE + (
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.body = torchvision.models.efficientnet_b0()\n"
        "        self.body.classifier[1] = nn.Linear(self.body.classifier[1].in_features, 4)\n"
        "    def forward(self, x):\n"
        "        return self.body(x)\n"
    )
    assert findings(src) == []
