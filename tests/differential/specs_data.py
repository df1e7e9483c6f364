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


def _subsets(api):
    """A Subset, a split of random_split (counts or fractions) or a ConcatDataset of tensor
    datasets, through a DataLoader; splits may be empty (the loader yields nothing) and
    indices may be out of range (torch raises when the sample is loaded)."""
    def gen(r):
        ds, ins, n, k = _tensor_dataset(r)
        if api == "Subset":
            m = r.randint(0, n + 1)
            idx = r.choice([f"range({m})", f"list(range({m}))", f"[{', '.join(str(r.randrange(-n, n + 1)) for _ in range(m))}]"])
            sub, size = f"torch.utils.data.Subset({ds}, {idx})", m
        elif api == "random_split":
            if r.random() < 0.5:
                a = r.randint(1, n - 1) if n > 2 and r.random() < 0.8 else r.randint(0, n)
                lengths = f"[{a}, {n - a}]" if r.random() < 0.85 else f"[{a}, {n - a + 1}]"
            else:
                lengths = r.choice(["[0.5, 0.5]", "[0.7, 0.3]", "[0.2, 0.3, 0.5]", "[1.0]"])
            sub, size = f"torch.utils.data.random_split({ds}, {lengths})[{r.choice([0, 0, -1])}]", n
        else:
            other = "torch.utils.data.TensorDataset(a[:1], b[:1])" if k == 2 else "torch.utils.data.TensorDataset(a[:1])"
            sub, size = f"torch.utils.data.ConcatDataset([{ds}, {other}])", n + 1
        return f"next(iter({_loader(sub, r, max(size, 1))}))[{r.randrange(k)}]", ins
    return gen


COLLATES = [
    "lambda batch: torch.stack([s[0] for s in batch])",
    "lambda batch: torch.stack([s[0] for s in batch]).flatten(1)",
    "lambda batch: torch.cat([s[0] for s in batch])",
    "lambda batch: torch.stack([s[0] for s in batch]).sum(0)",
    "lambda batch: torch.stack([s[0] * 2 for s in batch]).unsqueeze(1)",
]


def _collate(r):
    """A DataLoader with a user `collate_fn` over a tensor dataset: the function's result on
    the list of samples (the full batch, or the last one)."""
    ds, ins, n, _ = _tensor_dataset(r)
    bs = r.choice([1, 2, 3, n, n + 1])
    kw = r.choice(["", ", drop_last=True"])
    return f"next(iter(torch.utils.data.DataLoader({ds}, batch_size={bs}{kw}, collate_fn={r.choice(COLLATES)})))", ins


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
    "Lambda": lambda r, c: "Lambda(" + r.choice(["lambda x: x.view(-1)", "lambda x: x * 2", "lambda x: x[0]", "lambda x: x.flatten(1)", "lambda x: x.unsqueeze(0)", "lambda x: x.view(3, -1)", "lambda x: x.repeat(3, 1, 1)"]) + ")",
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
    Spec("torch.utils.data.DataLoader", "function", lambda r: _collate(r) if r.random() < 0.5 else _data("DataLoader")(r), cases=70),
    Spec("torch.utils.data.Subset", "function", _subsets("Subset"), cases=40),
    Spec("torch.utils.data.random_split", "function", _subsets("random_split"), cases=40),
    Spec("torch.utils.data.ConcatDataset", "function", _subsets("ConcatDataset"), cases=30),
]
if torchvision_compat.load():
    SPECS.append(Spec("torchvision.datasets.FakeData", "function", _pipeline(None), cases=30))
    SPECS += [Spec(TV + t, "module", _pipeline(t), cases=16) for t in TRANSFORMS]
