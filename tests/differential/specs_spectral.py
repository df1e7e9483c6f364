"""Specs for signal processing: the window functions, `torch.fft.*` and `torch.stft`.

The generators mix valid calls with the errors torch raises: a negative window length, a
non-floating dtype, an out-of-range dim, `n < 1`, an unknown `norm` string, a too-short signal.
"""
from __future__ import annotations

from .harness import Spec

WINDOWS = ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window")
_DTYPES = ("torch.float32", "torch.float64", "torch.float16", "torch.bfloat16", "torch.int64", "torch.int32", "torch.bool", "None")


def _window(name):
    def gen(r):
        n = r.choice([0, 1, 2, 5, 8, 16, -1, -3]) if r.random() < 0.9 else r.randint(0, 64)
        kw = r.random() < 0.2
        args = [f"window_length={n}" if kw else str(n)]
        if r.random() < 0.5:
            args.append(r.choice(["periodic=False", "periodic=True"] + ([] if kw else ["True", "False"])))
        if name == "hamming_window" and r.random() < 0.3:
            args.append(r.choice(["alpha=0.5", "alpha=0.5, beta=0.4"]))
        if name == "kaiser_window" and r.random() < 0.3:
            args.append("beta=8.0")
        if r.random() < 0.4:
            args.append(f"dtype={r.choice(_DTYPES)}")
        return f"torch.{name}({', '.join(args)})", {}
    return gen


SPECS = [
    *[Spec(f"torch.{w}", "function", _window(w)) for w in WINDOWS],
]
