"""Specs for tensor creation, elementwise, shape and reduction ops (functions and Tensor methods)."""
from __future__ import annotations

from .harness import L, Spec, T, shape  # noqa: F401 - L is for specs below

SPECS = [
    Spec("torch.cat", "function", lambda r: (f"torch.cat([a, b], dim={r.randint(-3, 2)})", {"a": T(*shape(r, r.randint(1, 3), 1, 3)), "b": T(*shape(r, r.randint(1, 3), 1, 3))})),
    Spec("Tensor.view", "method", lambda r: ("x.view(" + ", ".join(str(r.choice([-1, 1, 2, 3, 4, 6])) for _ in range(r.randint(1, 3))) + ")", {"x": T(*shape(r, r.randint(1, 3), 1, 4))})),
]
