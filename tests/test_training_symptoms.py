"""The training-loop rules whose bug does not raise (`# warning:` markers in fixtures/training)
are shown here by their symptom under torch: the buggy fixture and its fixed twin run on the
same data, and the buggy one shows what the rule's documentation says goes wrong.

SHP308 (probabilities where a loss expects logits): a loss that applies softmax (sigmoid)
itself to probabilities cannot fall below a floor well above zero (for C classes,
log(1 + (C - 1) / e); for a sigmoid, -log(sigmoid(1)) = 0.31), so the buggy model trains to
a worse loss than its twin, which goes below that floor."""
import importlib.util
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

TRAINING = Path(__file__).resolve().parent / "fixtures" / "training"


def load(name):
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", TRAINING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (the fixtures run their main only as scripts)
    return module


def separable(n=256, classes=4, seed=0):
    """Images whose class is written into their pixels: a model can fit them exactly."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    x = torch.randn(n, 1, 16, 16, generator=g) * 0.1
    x[torch.arange(n), 0, 0, y] += 3.0
    return x, y


def test_a_softmax_before_cross_entropy_keeps_the_loss_above_its_floor():
    classes, floor = 4, math.log(1 + 3 / math.e)
    x, y = separable(classes=classes)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32)
    final = {}
    for name in ("softmax_head_cross_entropy", "softmax_head_cross_entropy_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = fixture.make_model(classes)
        criterion = torch.nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        for _ in range(15):
            final[name] = fixture.train_epoch(model, loader, criterion, optimizer)
    assert final["softmax_head_cross_entropy"] > floor, final
    assert final["softmax_head_cross_entropy_ok"] < floor / 2, final


def test_a_sigmoid_before_bce_with_logits_keeps_the_loss_above_its_floor():
    floor = -math.log(1 / (1 + math.exp(-1)))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 20, generator=g)
    tags = (x[:, :5] > 0).float()
    final = {}
    for name in ("sigmoid_head_bce_with_logits", "sigmoid_head_bce_with_logits_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = fixture.Tagger()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(300):
            loss = F.binary_cross_entropy_with_logits(model(x), tags)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        final[name] = loss.item()
    assert final["sigmoid_head_bce_with_logits"] > floor, final
    assert final["sigmoid_head_bce_with_logits_ok"] < floor / 2, final


def test_a_softmax_inside_the_distillation_loss_leaves_a_confident_student_a_large_hard_loss():
    labels = torch.arange(6).repeat(4)
    confident = F.one_hot(labels, 6).float() * 20.0  # the right class by a wide margin
    teacher = confident.clone()
    hard = {}
    for name in ("softmax_probs_in_distillation", "softmax_probs_in_distillation_ok"):
        hard[name] = load(name).distill_loss(confident, teacher, labels, alpha=0.0).item()
    assert hard["softmax_probs_in_distillation"] > math.log(1 + 5 / math.e) - 1e-3, hard
    assert hard["softmax_probs_in_distillation_ok"] < 1e-6, hard
