"""Specs for torch.nn.utils.rnn: padding variable-length sequences, packing a padded batch, a
recurrent layer on the packed batch, and unpacking it.

The sequences' trailing dims sometimes differ (torch raises), the lengths sometimes count
another batch than the input's (torch raises), and a recurrent layer's `input_size` sometimes
is not the data's feature size (torch raises). A PackedSequence is compared through its `.data`
or through `pad_packed_sequence`.
"""
from __future__ import annotations

from .harness import Spec, T, near

RNN = "torch.nn.utils.rnn."


def _sequences(r, ins: dict, trailing: tuple[int, ...]) -> list[str]:
    """Two to four sequences named s0.. of random lengths; their dims after the length agree
    with `trailing` most of the time."""
    names = []
    for k in range(r.randint(1, 4)):
        tail = trailing
        if k and r.random() < 0.15:
            tail = tuple(near(r, d) for d in trailing) if trailing and r.random() < 0.7 else trailing + (2,)
        ins[f"s{k}"] = T(r.randint(1, 5), *tail)
        names.append(f"s{k}")
    return names


def _pad_sequence(r):
    ins: dict = {}
    trailing = tuple(r.randint(1, 4) for _ in range(r.randint(0, 2)))
    names = _sequences(r, ins, trailing)
    seqs = f"[{', '.join(names)}]" if r.random() < 0.8 else f"({', '.join(names)},)"
    kw = r.choice(["", ", batch_first=True", ", batch_first=False", ", padding_side='left'", ", True, 0.0, 'right'"])
    return f"{RNN}pad_sequence({seqs}{kw})", ins


def _pack_sequence(r):
    ins: dict = {}
    trailing = tuple(r.randint(1, 4) for _ in range(r.randint(0, 2)))
    names = _sequences(r, ins, trailing)
    return f"{RNN}pack_sequence([{', '.join(names)}], enforce_sorted=False).data", ins


def _lengths(r, steps: int, batch: int) -> tuple[str, bool]:
    """A lengths list (or tensor) for `batch` sequences of at most `steps`, sometimes one too
    many or too few; sorted in decreasing order unless the case passes enforce_sorted=False."""
    n = batch if r.random() < 0.75 else max(1, batch + r.choice([-1, 1]))
    values = [r.randint(1, steps) for _ in range(n)]
    unsorted = r.random() < 0.3
    if not unsorted:
        values.sort(reverse=True)
    text = f"[{', '.join(map(str, values))}]"
    if r.random() < 0.3:
        text = f"torch.tensor({text})"
    return text, unsorted


def _packed(r, ins: dict, features: int) -> tuple[str, bool]:
    """A pack_padded_sequence call on an input x: (the call, batch_first)."""
    steps, batch = r.randint(1, 5), r.randint(1, 4)
    batch_first = r.random() < 0.5
    ins["x"] = T(batch, steps, features) if batch_first else T(steps, batch, features)
    lengths, unsorted = _lengths(r, steps, batch)
    kw = (", batch_first=True" if batch_first else r.choice(["", ", batch_first=False"])) + (", enforce_sorted=False" if unsorted else "")
    return f"{RNN}pack_padded_sequence(x, {lengths}{kw})", batch_first


def _pack_padded_sequence(r):
    ins: dict = {}
    call, _ = _packed(r, ins, r.randint(1, 4))
    return f"{call}.data", ins


def _pad_packed_sequence(r):
    ins: dict = {}
    call, batch_first = _packed(r, ins, r.randint(1, 4))
    bf = r.choice(["", ", batch_first=True"]) if r.random() < 0.2 else (", batch_first=True" if batch_first else "")
    total = r.choice(["", "", ", total_length=6"])
    return f"{RNN}pad_packed_sequence({call}{bf}{total})[{r.choice([0, 0, 1])}]", ins


def _rnn_packed(r):
    """A recurrent layer on a packed batch: the padded output, the output's data, or the final
    state."""
    ins: dict = {}
    kind = r.choice(["LSTM", "GRU", "RNN"])
    features = r.randint(1, 4)
    call, batch_first = _packed(r, ins, features)
    hidden, layers = r.randint(1, 5), r.choice([1, 1, 2])
    bidir = r.random() < 0.3
    layer = f"nn.{kind}({near(r, features)}, {hidden}, num_layers={layers}, bidirectional={bidir}, batch_first={batch_first})"
    which = r.random()
    if which < 0.4:
        return f"out, _ = {layer}({call})\n{RNN}pad_packed_sequence(out, batch_first={batch_first})[0]", ins
    if which < 0.6:
        return f"{layer}({call})[0].data", ins
    state = "[1][0]" if kind == "LSTM" else "[1]"
    return f"{layer}({call}){state}", ins


def _either(a, b):
    return lambda r: a(r) if r.random() < 0.5 else b(r)


# the recurrent layers' call on a PackedSequence is in the pack_padded_sequence and
# pad_packed_sequence specs (the layers' own specs are in specs_layers.py)
SPECS = [
    Spec(RNN + "pad_sequence", "function", _pad_sequence, cases=50),
    Spec(RNN + "pack_sequence", "function", _pack_sequence, cases=30),
    Spec(RNN + "pack_padded_sequence", "function", _either(_pack_padded_sequence, _rnn_packed), cases=60),
    Spec(RNN + "pad_packed_sequence", "function", _either(_pad_packed_sequence, _rnn_packed), cases=60),
]
