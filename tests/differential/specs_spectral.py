"""Specs for signal processing: the window functions, `torch.fft.*` and `torch.stft`.

The generators mix valid calls with the errors torch raises: a negative window length, a
non-floating dtype, an out-of-range dim, `n < 1`, an unknown `norm` string, a too-short signal.
"""
from __future__ import annotations

from .harness import D, L, Spec, T

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


_NORMS = ("None", "'forward'", "'backward'", "'ortho'", "'bad'")


def _signal(r, max_rank=3):
    rank = r.choice([1, 1, 2, 2, 3][:max_rank + 2]) if r.random() < 0.95 else 0
    x = tuple(r.choice([1, 2, 3, 4, 5, 8, 0]) if r.random() < 0.1 else r.randint(2, 9) for _ in range(rank))
    return r.choice([T, T, T, D, L])(*x)


def _fft1(name):
    def gen(r):
        x = _signal(r)
        args = []
        if r.random() < 0.5:
            n = r.choice([1, 2, 4, 5, 8, 0, -1])
            args.append(f"n={n}" if r.random() < 0.5 else str(n))
        if r.random() < 0.5:
            d = r.randint(-3, 2)
            args.append(f"dim={d}" if (r.random() < 0.5 or not args or args[-1].startswith("n=")) else str(d))
        if r.random() < 0.3:
            args.append(f"norm={r.choice(_NORMS)}")
        inner = "torch.fft.fft(x)" if r.random() < 0.05 else "x"
        return f"torch.fft.{name}({', '.join([inner] + args)})", {"x": x}
    return gen


def _fftn(name):
    two = name.endswith("2")
    def gen(r):
        x = _signal(r)
        args = []
        k = 2 if two else r.randint(1, 3)
        if r.random() < 0.5:
            s = tuple(r.choice([2, 3, 4, 6, 8, -1, 0]) if r.random() < 0.15 else r.randint(1, 8) for _ in range(k if r.random() < 0.85 else r.randint(1, 3)))
            args.append(f"s={s}")
        if r.random() < 0.5 or (not two and r.random() < 0.3):
            dims = tuple(r.randint(-3, 2) for _ in range(k))
            args.append(f"dim={dims if r.random() < 0.85 else dims[0]}")
        if r.random() < 0.3:
            args.append(f"norm={r.choice(_NORMS)}")
        return f"torch.fft.{name}({', '.join(['x'] + args)})", {"x": x}
    return gen


def _shift(name):
    def gen(r):
        x = _signal(r)
        args = ["x"]
        if r.random() < 0.6:
            dims = tuple(r.randint(-3, 2) for _ in range(r.randint(1, 2)))
            args.append(f"dim={dims if r.random() < 0.5 else dims[0]}")
        return f"torch.fft.{name}({', '.join(args)})", {"x": x}
    return gen


def _freq(name):
    def gen(r):
        n = r.choice([0, 1, 2, 5, 8, 9, -1, -2])
        args = [str(n)]
        if r.random() < 0.4:
            args.append(r.choice(["0.5", "d=2.0", "1"]))
        if r.random() < 0.4:
            args.append(f"dtype={r.choice(_DTYPES)}")
        return f"torch.fft.{name}({', '.join(args)})", {}
    return gen


def _stft(method):
    def gen(r):
        n_fft = r.choice([4, 8, 16, 16, 32, 5, 1, 0, 64])
        rank = r.choice([1, 1, 2, 2, 3])
        length = r.choice([8, 9, 16, 20, 50, 100, 3, 33])
        x = tuple(r.randint(1, 3) for _ in range(rank - 1)) + (length,)
        make = r.choice([T, T, T, D, L]) if r.random() < 0.9 else T
        args = [str(n_fft)]
        if r.random() < 0.4:
            args.append(f"hop_length={r.choice([1, 2, 4, 5, 0, -1])}")
        win = None
        if r.random() < 0.3:
            win = r.choice([n_fft, max(n_fft // 2, 1), n_fft + 1, 0])
            args.append(f"win_length={win}")
        if r.random() < 0.3:
            wl = r.choice([win or n_fft, win or n_fft, (win or n_fft) + 1])
            args.append(f"window=torch.hann_window({max(wl, 0)}{', dtype=torch.float64' if r.random() < 0.2 else ''})")
        if r.random() < 0.3:
            args.append(f"center={r.choice([True, False])}")
        if r.random() < 0.2:
            args.append(f"pad_mode={r.choice(['constant', 'reflect'])!r}")
        if r.random() < 0.2:
            args.append(f"normalized={r.choice([True, False])}")
        if r.random() < 0.3:
            args.append(f"onesided={r.choice([True, False])}")
        if r.random() < 0.9:
            args.append(f"return_complex={r.choice([True, True, True, False])}")
        if r.random() < 0.05:
            args.append("align_to_window=True")
        if method:
            return f"x.stft({', '.join(args)})", {"x": make(*x)}
        return f"torch.stft({', '.join(['x'] + args)})", {"x": make(*x)}
    return gen


SPECS = [
    Spec("torch.stft", "function", _stft(False), cases=200),
    Spec("Tensor.stft", "method", _stft(True), cases=100),
    *[Spec(f"torch.fft.{f}", "function", _fft1(f), cases=80) for f in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")],
    *[Spec(f"torch.fft.{f}", "function", _fftn(f), cases=80) for f in ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")],
    *[Spec(f"torch.fft.{f}", "function", _shift(f)) for f in ("fftshift", "ifftshift")],
    *[Spec(f"torch.fft.{f}", "function", _freq(f)) for f in ("fftfreq", "rfftfreq")],
    *[Spec(f"torch.{w}", "function", _window(w)) for w in WINDOWS],
]
