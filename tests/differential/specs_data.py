"""Specs for torch.utils.data and torchvision's datasets and transforms: the first batch of a DataLoader.

Every case is `next(iter(DataLoader(...)))[i]`: the core's first batch against the one torch
loads. The torchvision cases use `FakeData` (random PIL images, nothing to download) through a
transform pipeline; each transform's spec puts it in a pipeline, before or after `ToTensor`, with
arguments torch sometimes refuses (a crop larger than the image, a Normalize with the wrong number
of means, a tensor-only transform on a PIL image). Listed only where torchvision imports
(`torchvision_compat.py`); the torch.utils.data specs always.
"""
from __future__ import annotations

import torchvision_compat

from .harness import L, Spec, T, near

TV = "torchvision.transforms."


def _loader(dataset: str, r, n: int, simple: bool = False) -> str:
    """A DataLoader over `dataset` of `n` samples (`simple`: one that yields a batch)."""
    if simple:
        return f"torch.utils.data.DataLoader({dataset}, batch_size={r.randint(1, n)}{r.choice(['', ', shuffle=True'])})"
    bs = r.choice([1, 2, 3, 4, n, n + 1])
    kw = r.choice(["", ", shuffle=True", ", drop_last=True", ", num_workers=0", ", drop_last=False"])
    return f"torch.utils.data.DataLoader({dataset}, batch_size={bs}{kw})"


def _tensor_dataset(r):
    n = r.randint(1, 6)
    feats = tuple(r.randint(1, 4) for _ in range(r.randint(0, 2)))
    ins = {"a": T(n, *feats), "b": L(near(r, n), high=3)}
    if r.random() < 0.3:
        return f"torch.utils.data.TensorDataset(a)", {"a": ins["a"]}, n, 1
    return "torch.utils.data.TensorDataset(a, b)", ins, n, 2


def _data(api):
    def gen(r):
        ds, ins, n, k = _tensor_dataset(r)
        return f"next(iter({_loader(ds, r, n)}))[{r.randrange(k)}]", ins
    return gen


# ---------------------------------------------------------------- torchvision pipelines

def _size(r, h, w):
    """An int or an (h, w) size near the image's."""
    if r.random() < 0.5:
        return str(near(r, min(h, w)))
    return f"({near(r, h)}, {near(r, w)})"


PIL_STEPS = {
    "Resize": lambda r, h, w: f"Resize({_size(r, h, w)})",
    "CenterCrop": lambda r, h, w: f"CenterCrop({_size(r, h, w)})",
    "RandomCrop": lambda r, h, w: f"RandomCrop({_size(r, h, w)}" + r.choice(["", ", padding=1", ", padding=(1, 2)", ", pad_if_needed=True", ", padding=2, padding_mode='edge'"]) + ")",
    "RandomResizedCrop": lambda r, h, w: f"RandomResizedCrop({_size(r, h, w)}, scale=(0.5, 1.0))",
    "Grayscale": lambda r, h, w: "Grayscale()",
    "RandomHorizontalFlip": lambda r, h, w: "RandomHorizontalFlip()",
    "RandomVerticalFlip": lambda r, h, w: "RandomVerticalFlip(p=0.3)",
    "ColorJitter": lambda r, h, w: "ColorJitter(brightness=0.2, contrast=0.1)",
    "RandomRotation": lambda r, h, w: f"RandomRotation({r.choice([10, 30])}" + r.choice(["", ", expand=False", ", fill=0"]) + ")",
    "RandomAffine": lambda r, h, w: "RandomAffine(15, translate=(0.1, 0.1))",
    "AutoAugment": lambda r, h, w: "AutoAugment()",
    "RandAugment": lambda r, h, w: "RandAugment()",
    "TrivialAugmentWide": lambda r, h, w: "TrivialAugmentWide()",
}
TENSOR_STEPS = {
    "Normalize": lambda r, c: "Normalize(" + ", ".join([r.choice([f"({', '.join(['0.5'] * k)},)" for k in (1, c, c, 3, 2)])] * 2) + ")",
    "RandomErasing": lambda r, c: "RandomErasing(p=1.0)",
    "ConvertImageDtype": lambda r, c: f"ConvertImageDtype({r.choice(['torch.float64', 'torch.float32', 'torch.float16'])})",
    "RandomHorizontalFlip": lambda r, c: "RandomHorizontalFlip()",
}


def _pipeline(focus: str | None):
    def gen(r):
        c = r.choice([1, 3, 3])
        h, w = r.randint(4, 12), r.randint(4, 12)
        if r.random() < 0.4:
            w = h
        steps = []
        names = list(PIL_STEPS)
        pil = [focus] if focus in PIL_STEPS else []
        if focus is None or r.random() < 0.3:
            pil += r.sample(names, r.randint(0, 2))
        steps += [TV + PIL_STEPS[s](r, h, w) for s in pil]
        to_tensor = "PILToTensor()" if focus == "PILToTensor" or (focus == "ConvertImageDtype" and r.random() < 0.3) else "ToTensor()"
        tensor = [focus] if focus in TENSOR_STEPS else []
        if focus is None and r.random() < 0.5:
            tensor += [r.choice(list(TENSOR_STEPS))]
        post = [TV + TENSOR_STEPS[s](r, c) for s in tensor]
        if post and r.random() < 0.1:
            # a tensor transform on the PIL image: torch raises
            steps = post + steps + [TV + to_tensor]
        else:
            steps = steps + [TV + to_tensor] + post
        if focus == "ToTensor" and r.random() < 0.15:
            steps = steps + [TV + "ToTensor()"]  # ToTensor of a tensor: TypeError
        transform = steps[0] if len(steps) == 1 and focus != "Compose" else f"{TV}Compose([{', '.join(steps)}])"
        n = r.randint(1, 5)
        ds = f"torchvision.datasets.FakeData(size={n}, image_size=({c}, {h}, {w}), transform={transform})"
        return f"next(iter({_loader(ds, r, n, simple=focus is not None)}))[{0 if r.random() < 0.85 else 1}]", {}
    return gen


TRANSFORMS = ["Compose", "ToTensor", "PILToTensor", *PIL_STEPS, *[t for t in TENSOR_STEPS if t not in PIL_STEPS]]

SPECS = [
    Spec("torch.utils.data.TensorDataset", "function", _data("TensorDataset"), cases=30),
    Spec("torch.utils.data.DataLoader", "function", _data("DataLoader"), cases=30),
]
if torchvision_compat.load():
    SPECS.append(Spec("torchvision.datasets.FakeData", "function", _pipeline(None), cases=30))
    SPECS += [Spec(TV + t, "module", _pipeline(t), cases=16) for t in TRANSFORMS]
