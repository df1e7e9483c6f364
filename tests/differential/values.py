"""Index tensors with known values (issue 9, item 3): cases for the APIs that check index values.

The core knows the values of `torch.arange`, `torch.full`, `torch.zeros`/`ones` of an integer
dtype, integer literals, `torch.randint(low, high, ...)` and `torch.randperm`, through views,
`long()`, `clone()`, indexing and `x + k`. These cases build such index tensors right at the
bound of the API (`num_embeddings`, `num_classes`, the size of the indexed dim), valid and
invalid ones, and are appended to the API's fixed cases (`Spec.provoke`: the generated stream
stays as it was).
"""
from __future__ import annotations

import random

from .harness import Case, T


def index_source(r: random.Random, n: int) -> str:
    """An integer index tensor whose values are near `[0, n)`: some inside, some outside."""
    k = r.choice([n - 1, n, n + 1, n + 2, 1]) if n > 1 else r.choice([1, 2])
    v = r.choice([-1, 0, n - 1, n, n + 1])
    # randint: a range wholly inside `[0, n)`, wholly above it or wholly negative (else torch's
    # outcome would depend on the draw)
    lo, hi = r.choice([(0, n), (max(n - 1, 0), n), (n, n + r.randint(1, 3)), (-r.randint(1, 3), 0)])
    hi = max(hi, lo + 1)
    s = r.randint(1, 3)
    shape = r.choice(["(2, 3)", "(4,)", "(1,)", "(0,)", "(2, 0)"])
    return r.choice([
        f"torch.arange({k})",
        f"torch.arange({v}, {v + k})",
        f"torch.arange(0, {k * s}, {s})",
        f"torch.arange({k}).view(1, -1)",
        f"torch.arange({k}).unsqueeze(0).clone()",
        f"(torch.arange({k}) + {r.choice([-1, 1, 2])})",
        f"(torch.arange({k}) - 1)",
        # indexing keeps the bounds, not which values are present: only decidable sources
        f"torch.full({shape}, {v})[1:]",
        f"torch.full((3, 2), {v})[0]",
        f"torch.randint({lo}, {hi}, (3, 2))[:, 1]",
        f"torch.full({shape}, {v})",
        f"torch.full({shape}, {v}).long()",
        f"torch.full({shape}, {v}, dtype=torch.int32)",
        f"torch.zeros({r.randint(1, 3)}, dtype=torch.long)",
        f"(torch.ones(2, dtype=torch.long) + {v - 1})",
        f"(torch.ones(2, 2, dtype=torch.long) + {v - 1})",
        f"torch.tensor([{r.randint(0, max(n - 1, 0))}, {v}])",
        f"torch.tensor([[{v}], [0]])",
        f"torch.tensor([{v}]).to(torch.long)",
        f"torch.randint({lo}, {hi}, (3,))",
        f"torch.randint({max(n, 1)}, (2, 2))",
        f"torch.randint({lo}, {hi}, {shape})",
        f"torch.randperm({k})",
        f"torch.randperm({k}).reshape(-1, 1)",
        f"torch.arange({k}).expand(2, {k})",
    ])


def _cases(seed: str, make, count: int = 40) -> tuple[Case, ...]:
    r = random.Random(seed)
    return tuple(make(r) for _ in range(count))


def _embedding(r):
    n, d = r.randint(2, 10), r.randint(1, 4)
    return f"nn.Embedding({n}, {d})({index_source(r, n)})", {}


def _f_embedding(r):
    n, d = r.randint(2, 10), r.randint(1, 4)
    return f"F.embedding({index_source(r, n)}, w)", {"w": T(n, d)}


def _one_hot(r):
    k = r.randint(1, 6)
    if r.random() < 0.25:
        return f"F.one_hot({index_source(r, k)})", {}
    return f"F.one_hot({index_source(r, k)}, {k})", {}


def _index_select(method):
    def gen(r):
        x = (r.randint(1, 5), r.randint(1, 5))
        d = r.choice([0, 1, -1])
        n = x[d]
        idx = index_source(r, n)
        if method:
            return f"x.index_select({d}, {idx})", {"x": T(*x)}
        return f"torch.index_select(x, {d}, {idx})", {"x": T(*x)}
    return gen


def _bag(functional):
    def gen(r):
        n, d = r.randint(2, 6), r.randint(1, 3)
        v = r.choice([-1, 0, n - 1, n, n + 1])
        idx = r.choice([
            f"torch.tensor([[0, {v}]])",
            f"torch.full((2, 3), {v})",
            f"torch.arange({r.choice([n - 1, n, n + 1])}).view(1, -1)",
            f"(torch.arange(4).view(2, 2) + {r.choice([-1, 0, n - 4, n - 3])})",
            "torch.randint({}, {}, (2, 2))".format(*r.choice([(0, n), (n, n + 2), (-2, 0)])),
            f"torch.full((2, 0), {v})",
            f"torch.full((2, 2), {v}, dtype=torch.int32)",
        ])
        mode = r.choice(["mean", "sum", "max"])
        if functional:
            return f"F.embedding_bag({idx}, w, mode={mode!r})", {"w": T(n, d)}
        return f"nn.EmbeddingBag({n}, {d}, mode={mode!r})({idx})", {}
    return gen


def _targets(module, fn, probs=False):
    """Class-index targets at the classes' bound: `[0, C)`, `ignore_index` (default -100, or
    given) exempt, whatever the reduction, weight or label smoothing."""
    def gen(r):
        c = r.randint(2, 5)
        ignore = r.choice([None, None, -1, c, 0])
        exempt = -100 if ignore is None else ignore
        v = r.choice([-100, -1, 0, c - 1, c, c + 1, exempt])
        kind = r.choice(["batch", "batch", "batch", "spatial", "unbatched", "empty"])
        if kind == "batch":
            x = (3, c)
            t = r.choice([
                f"torch.tensor([0, {v}, {c - 1}])",
                f"torch.full((3,), {v})",
                f"torch.arange({v}, {v} + 3)",
                f"(torch.arange(3) + {r.choice([-1, 0, c - 3, c - 2])})",
                # wholly inside `[0, C)`, above it or negative, clear of the exempt values (else
                # the draw would decide)
                "torch.randint({}, {}, (3,))".format(*r.choice([(0, c), (c + 1, c + 3), (-3, -1)])),
            ])
        elif kind == "spatial":
            x, t = (2, c, 3), r.choice([f"torch.full((2, 3), {v})", f"torch.tensor([[0, 1, {v}], [0, 0, 0]])"])
        elif kind == "unbatched":
            x, t = (c,), f"torch.tensor({v})"
        else:
            x, t = (0, c), f"torch.full((0,), {v})"
        kw = []
        if ignore is not None:
            kw.append(f"ignore_index={ignore}")
        if r.random() < 0.3:
            kw.append(f"reduction={r.choice(['none', 'sum', 'mean'])!r}")
        if r.random() < 0.2:
            kw.append(f"weight=torch.ones({c})")
        if probs and r.random() < 0.3:
            kw.append("label_smoothing=0.1")
        args = ", ".join(kw)
        if r.random() < 0.1 and probs:
            # probability targets: no range check
            return (f"F.{fn}(x, torch.full({x}, {v}.0))" if not module else f"nn.{module}()(x, torch.full({x}, {v}.0))"), {"x": T(*x)}
        if module:
            return f"nn.{module}({args})(x, {t})", {"x": T(*x)}
        return f"F.{fn}(x, {t}{', ' + args if args else ''})", {"x": T(*x)}
    return gen


CASES: dict[str, tuple[Case, ...]] = {
    "nn.Embedding": _cases("values nn.Embedding", _embedding),
    "F.embedding": _cases("values F.embedding", _f_embedding),
    "F.one_hot": _cases("values F.one_hot", _one_hot),
    "Tensor.index_select": _cases("values Tensor.index_select", _index_select(True)),
    "torch.index_select": _cases("values torch.index_select", _index_select(False)),
    "nn.EmbeddingBag": _cases("values nn.EmbeddingBag", _bag(False)),
    "F.embedding_bag": _cases("values F.embedding_bag", _bag(True)),
    "nn.CrossEntropyLoss": _cases("values nn.CrossEntropyLoss", _targets("CrossEntropyLoss", "cross_entropy", probs=True)),
    "F.cross_entropy": _cases("values F.cross_entropy", _targets(None, "cross_entropy", probs=True)),
    "nn.NLLLoss": _cases("values nn.NLLLoss", _targets("NLLLoss", "nll_loss")),
    "F.nll_loss": _cases("values F.nll_loss", _targets(None, "nll_loss")),
}
