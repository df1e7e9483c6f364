"""Differential tests for tensor ops and layers: the core against real torch on many shapes.

For each generated program, torch either runs (the core must infer the same shape, or stay
silent, and never report) or raises (the core may report an SHP1xx finding or stay silent,
but must not claim a fully known result shape; `?` and `*` in a shape claim nothing). Skipped when torch is absent.
"""
import random

import pytest

from shape_lint import _core

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def _check(expr, env_src, env):
    src = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + env_src + f"y = {expr}\n"
    line = src.count("\n")
    try:
        out = eval(expr, {"torch": torch, "nn": nn, "F": F}, env)  # noqa: S307 - test input we generate
        if isinstance(out, tuple):
            out = out[0]
        want = tuple(out.shape)
    except Exception:  # noqa: BLE001 - any torch error counts as "raises"
        want = None
    findings = [f for f in _core.check_source(src, "t.py") if f["code"].startswith("SHP1") or f["code"] == "SHP202"]
    got = dict(_core.show_shapes(src, "t.py")).get(line)
    if want is not None:
        assert not findings, f"{expr} with {env_src!r}: torch gives {want}, core reports {findings}"
        # (a dim `?` or dims `*` of unknown number: not a claim about the shape)
        if got is not None and "?" not in got and "*" not in got and "|" not in got:
            inferred = got[got.index("["): got.index("]") + 1]
            assert inferred == "[" + ", ".join(map(str, want)) + "]", (expr, env_src, want, got)
        return "agree" if got is not None else "silent"
    assert got is None or "?" in got or "*" in got or findings, f"{expr} with {env_src!r}: torch raises, core infers {got}"
    return "agree" if findings else "silent"


def _tensor(rng, rank, lo=1, hi=5):
    return [rng.randint(lo, hi) for _ in range(rank)]


CASES = {
    "masked_fill": lambda rng: (
        "x.masked_fill(m, 0.0)",
        {"x": _tensor(rng, rng.randint(1, 3), 1, 3), "m": _tensor(rng, rng.randint(1, 3), 1, 3)},
    ),
    "expand": lambda rng: (
        "x.expand(" + ", ".join(str(rng.choice([-1, 1, 2, 3])) for _ in range(rng.randint(1, 4))) + ")",
        {"x": _tensor(rng, rng.randint(1, 3), 1, 3)},
    ),
    "repeat": lambda rng: (
        "x.repeat(" + ", ".join(str(rng.randint(1, 3)) for _ in range(rng.randint(1, 4))) + ")",
        {"x": _tensor(rng, rng.randint(1, 3), 1, 3)},
    ),
    "interpolate": lambda rng: (
        rng.choice(["F.interpolate(x, scale_factor=2)", "F.interpolate(x, scale_factor=1.5)", "F.interpolate(x, size=(3, 4))", "nn.Upsample(scale_factor=3)(x)"]),
        {"x": _tensor(rng, rng.choice([3, 4]), 1, 7)},
    ),
    "pad": lambda rng: (
        "F.pad(x, (" + ", ".join(str(rng.randint(-1, 2)) for _ in range(2 * rng.randint(1, 2))) + "))",
        {"x": _tensor(rng, rng.randint(2, 4), 2, 5)},
    ),
    "index_select": lambda rng: (
        f"x.index_select({rng.randint(-2, 2)}, i)",
        {"x": _tensor(rng, rng.randint(1, 3), 2, 4), "i": ("long", _tensor(rng, rng.randint(1, 2), 1, 3))},
    ),
    "index_tensor": lambda rng: (
        rng.choice(["x[i]", "x[:, i]", "x[i, 0]", "x[..., i]", "x[None, i]"]),
        {"x": _tensor(rng, rng.randint(1, 3), 2, 4), "i": ("long", _tensor(rng, rng.randint(1, 2), 1, 3))},
    ),
    "einsum": lambda rng: (
        rng.choice(["torch.einsum('ij,jk->ik', x, w)", "torch.einsum('bij,bjk->bik', x, w)", "torch.einsum('ij,ij->i', x, w)", "torch.einsum('ij,kj', x, w)"]),
        {"x": _tensor(rng, rng.choice([2, 3]), 1, 4), "w": _tensor(rng, rng.choice([2, 3]), 1, 4)},
    ),
    "triu": lambda rng: ("torch.triu(x, diagonal=1)", {"x": _tensor(rng, rng.randint(1, 3), 1, 4)}),
    "topk_sort": lambda rng: (
        rng.choice([f"x.topk({rng.randint(1, 4)}, dim={rng.randint(-2, 1)})[0]", f"torch.sort(x, dim={rng.randint(-2, 1)})[1]", f"torch.topk(x, {rng.randint(1, 5)})[0]"]),
        {"x": _tensor(rng, rng.randint(1, 3), 1, 4)},
    ),
    "flip_roll": lambda rng: (
        rng.choice([f"x.flip({rng.randint(-3, 2)})", f"torch.roll(x, 1, {rng.randint(-3, 2)})", "x.flip((0, 1))"]),
        {"x": _tensor(rng, rng.randint(1, 3), 1, 4)},
    ),
    "gather": lambda rng: (
        f"x.gather({rng.randint(-2, 1)}, i)",
        {"x": _tensor(rng, rng.randint(1, 3), 2, 4), "i": ("long", _tensor(rng, rng.randint(1, 3), 1, 2))},
    ),
    "where": lambda rng: (
        rng.choice(["torch.where(c, x, w)", "torch.where(c, x, 0.0)", "torch.where(x > 0, x, w)"]),
        {"x": _tensor(rng, rng.randint(1, 3), 1, 3), "w": _tensor(rng, rng.randint(1, 3), 1, 3), "c": _tensor(rng, rng.randint(1, 2), 1, 3)},
    ),
    "split_chunk": lambda rng: (
        rng.choice([
            f"x.split({rng.randint(1, 4)}, dim={rng.randint(-2, 1)})[-1]",
            f"x.split([{rng.randint(0, 3)}, {rng.randint(1, 3)}], dim=-1)[1]",
            f"x.chunk({rng.randint(1, 4)}, dim={rng.randint(-2, 1)})[-1]",
            f"x.tensor_split({rng.randint(1, 4)}, dim={rng.randint(-2, 1)})[-1]",
            f"x.tensor_split([{rng.randint(0, 5)}, {rng.randint(0, 5)}], dim=-1)[-1]",
            f"torch.tensor_split(x, [{rng.randint(0, 5)}])[0]",
        ]),
        {"x": _tensor(rng, rng.randint(1, 3), 1, 6)},
    ),
    "RMSNorm": lambda rng: (
        rng.choice([f"nn.RMSNorm({rng.randint(2, 4)})(x)", f"nn.RMSNorm([{rng.randint(2, 3)}, {rng.randint(2, 4)}])(x)"]),
        {"x": _tensor(rng, rng.randint(1, 3), 2, 4)},
    ),
    "GroupNorm": lambda rng: (
        f"nn.GroupNorm({rng.choice([1, 2, 4])}, {rng.choice([4, 8])})(x)",
        {"x": _tensor(rng, rng.randint(2, 4), 2, 8)},
    ),
    "TransformerEncoderLayer": lambda rng: (
        f"nn.TransformerEncoderLayer({rng.choice([8, 16])}, 2, 16, batch_first=True)(x)",
        {"x": [2, 3, rng.choice([8, 16])]},
    ),
    "MultiheadAttention": lambda rng: (
        f"nn.MultiheadAttention({rng.choice([8, 16])}, 2)(x, x, x)",
        {"x": [3, 2, rng.choice([8, 16])]},
    ),
}


@pytest.mark.parametrize("api", sorted(CASES))
def test_api_matches_torch(api):
    rng = random.Random(api)
    counts = {"agree": 0, "silent": 0}
    for _ in range(60):
        expr, shapes = CASES[api](rng)
        env, lines = {}, []
        for name, spec in shapes.items():
            if isinstance(spec, tuple):
                env[name] = torch.zeros(*spec[1], dtype=torch.long)
                lines.append(f"{name} = torch.zeros({', '.join(map(str, spec[1]))}, dtype=torch.long)\n")
            else:
                is_mask = (expr.startswith("x.masked_fill") and name == "m") or (expr.startswith("torch.where(c") and name == "c")
                env[name] = torch.zeros(*spec, dtype=torch.bool) if is_mask else torch.randn(*spec)
                if is_mask:
                    lines.append(f"{name} = torch.zeros({', '.join(map(str, spec))}, dtype=torch.bool)\n")
                else:
                    lines.append(f"{name} = torch.randn({', '.join(map(str, spec))})\n")
        counts[_check(expr, "".join(lines), env)] += 1
    assert counts["agree"] >= 30, counts
