"""Specs for the loss modules and their `torch.nn.functional` twins, in all reduction modes.

Class-index targets are made with `high=1` (all zeros), so that a target value is never out of
range: only shapes decide whether torch raises. BCE inputs go through `sigmoid()` because
torch checks that they lie in [0, 1].
"""
from __future__ import annotations

import dataclasses

from . import values
from .harness import L, Spec, T, near, shape




def _red(r):
    return r.choice(["mean", "sum", "none", "none"])


def _call(r, module, functional, args, extra=""):
    red = _red(r)
    if r.random() < 0.5:
        return f"nn.{module}(reduction={red!r}{extra})({args})" if module else None
    return f"F.{functional}({args}, reduction={red!r}{extra})"


def _classification(module, functional, probs=False):
    def gen(r, fn=None):
        n, c = r.randint(1, 4), r.randint(1, 5)
        extra = shape(r, r.choice([0, 0, 1, 2]), 1, 3)
        batched = r.random() < 0.85
        x = ([n, c] if batched else [c]) + (list(extra) if batched else [])
        if probs and r.random() < 0.35:
            y = T(*[near(r, d) for d in x])
        else:
            tgt = ([n] if batched else []) + (list(extra) if batched else [])
            tgt = [near(r, d) for d in tgt]
            if r.random() < 0.1:
                tgt = tgt + [1]
            y = L(*tgt, high=1)
        red = _red(r)
        args = "x, t"
        expr = f"F.{functional}({args}, reduction={red!r})" if fn else f"nn.{module}(reduction={red!r})({args})"
        return expr, {"x": T(*x), "t": y}
    return gen


def _weight_shape(r, x):
    """A BCE weight's shape: one that broadcasts to the input's (its last dims, with ones), or
    now and then one that does not (a dim off by one, an extra leading dim)."""
    k = r.randint(0, len(x))
    w = [r.choice([d, 1]) for d in x[len(x) - k:]]
    roll = r.random()
    if roll < 0.15 and w:
        i = r.randrange(len(w))
        w[i] = w[i] + 1
    elif roll < 0.25:
        w = [2] + list(x)
    return tuple(w)


def _same_shape(module, functional, sig=False, functional_kind=False, weights=()):
    """``weights``: the weight keywords the loss takes (BCE: ``weight``; BCEWithLogits: also
    ``pos_weight``), each passed now and then with a shape from ``_weight_shape``."""
    def gen(r):
        x = shape(r, r.randint(1, 3), 1, 4)
        if r.random() < 0.5:
            y = x
        elif r.random() < 0.5:
            y = tuple(near(r, d) for d in x)
        else:
            y = shape(r, r.randint(1, 3), 1, 4)
        red = _red(r)
        a, b = ("x.sigmoid()", "t.sigmoid()") if sig else ("x", "t")
        env = {"x": T(*x), "t": T(*y)}
        extra = ""
        for k in weights:
            if r.random() < 0.4:
                env[k] = T(*_weight_shape(r, x))
                extra += f", {k}={k}"
        if functional_kind:
            return f"F.{functional}({a}, {b}, reduction={red!r}{extra})", env
        return f"nn.{module}(reduction={red!r}{extra})({a}, {b})", env
    return gen


def _broadcasting(module, functional, functional_kind=False):
    def gen(r):
        x = shape(r, r.randint(1, 3), 1, 4)
        choice = r.random()
        if choice < 0.4:
            y = x
        elif choice < 0.7:
            y = tuple(r.choice([d, 1]) for d in x)[r.randint(0, len(x) - 1):]
        else:
            y = shape(r, r.randint(1, 3), 1, 4)
        if r.random() < 0.5:
            x, y = y, x
        red = _red(r) if module != "KLDivLoss" else r.choice(["mean", "sum", "none", "batchmean"])
        if functional_kind:
            return f"F.{functional}(x, t, reduction={red!r})", {"x": T(*x), "t": T(*y)}
        return f"nn.{module}(reduction={red!r})(x, t)", {"x": T(*x), "t": T(*y)}
    return gen


def _cosine_embedding(fn):
    def gen(r):
        n, d = r.randint(1, 4), r.randint(1, 4)
        batched = r.random() < 0.75
        a = [n, d] if batched else [d]
        b = [near(r, v) for v in a] if r.random() < 0.6 else list(a)
        y = [near(r, n)] if batched else []
        if r.random() < 0.1:
            y = y + [1]
        red = _red(r)
        call = f"F.cosine_embedding_loss(a, b, t, reduction={red!r})" if fn else f"nn.CosineEmbeddingLoss(reduction={red!r})(a, b, t)"
        return call, {"a": T(*a), "b": T(*b), "t": T(*y)}
    return gen


def _margin_ranking(fn):
    def gen(r):
        a = shape(r, r.randint(1, 2), 1, 4)
        b = a if r.random() < 0.5 else tuple(r.choice([d, 1, d + 1]) for d in a)
        y = a if r.random() < 0.6 else shape(r, r.randint(1, 2), 1, 4)
        red = _red(r)
        call = f"F.margin_ranking_loss(a, b, t, reduction={red!r})" if fn else f"nn.MarginRankingLoss(reduction={red!r})(a, b, t)"
        return call, {"a": T(*a), "b": T(*b), "t": T(*y)}
    return gen


def _triplet(fn):
    def gen(r):
        n, d = r.randint(1, 4), r.randint(1, 4)
        base = [n, d] if r.random() < 0.75 else [d]
        shapes = [list(base) for _ in range(3)]
        if r.random() < 0.5:
            k = r.randint(0, 2)
            shapes[k] = [near(r, v) for v in shapes[k]] if r.random() < 0.7 else shapes[k][1:] or [1, 1]
        red = _red(r)
        call = (f"F.triplet_margin_loss(a, p, q, reduction={red!r})" if fn
                else f"nn.TripletMarginLoss(reduction={red!r})(a, p, q)")
        return call, {"a": T(*shapes[0]), "p": T(*shapes[1]), "q": T(*shapes[2])}
    return gen


def _ctc(fn):
    def gen(r):
        t, n, c, s = r.randint(3, 6), r.randint(1, 3), r.randint(2, 4), r.randint(1, 2)
        lp = [t, n, c] if r.random() < 0.9 else [t, c]
        ins = {"lp": T(*lp), "tg": L(near(r, n), s, high=1) if len(lp) == 3 else L(s, high=1)}
        ins["tg"] = L(*ins["tg"].shape, high=c - 1)
        il = f"torch.full(({near(r, n)},), {t}, dtype=torch.long)" if len(lp) == 3 else f"torch.tensor({t})"
        tl = f"torch.full(({n},), {s}, dtype=torch.long)" if len(lp) == 3 else f"torch.tensor({s})"
        red = _red(r)
        if fn:
            return f"F.ctc_loss(lp.log_softmax(-1), tg + 1, {il}, {tl}, reduction={red!r})", ins
        return f"nn.CTCLoss(reduction={red!r})(lp.log_softmax(-1), tg + 1, {il}, {tl})", ins
    return gen


def _fn(gen):
    return lambda r: gen(r, fn=True)


SPECS = [
    Spec("nn.CrossEntropyLoss", "module", _classification("CrossEntropyLoss", "cross_entropy", probs=True)),
    Spec("F.cross_entropy", "function", _fn(_classification("CrossEntropyLoss", "cross_entropy", probs=True))),
    Spec("nn.NLLLoss", "module", _classification("NLLLoss", "nll_loss")),
    Spec("F.nll_loss", "function", _fn(_classification("NLLLoss", "nll_loss"))),
    Spec("nn.BCELoss", "module", _same_shape("BCELoss", "binary_cross_entropy", sig=True, weights=("weight",))),
    Spec("F.binary_cross_entropy", "function", _same_shape("BCELoss", "binary_cross_entropy", sig=True, functional_kind=True, weights=("weight",))),
    Spec("nn.BCEWithLogitsLoss", "module", _same_shape("BCEWithLogitsLoss", "binary_cross_entropy_with_logits", weights=("weight", "pos_weight"))),
    Spec("F.binary_cross_entropy_with_logits", "function",
         _same_shape("BCEWithLogitsLoss", "binary_cross_entropy_with_logits", functional_kind=True, weights=("weight", "pos_weight"))),
    Spec("nn.SoftMarginLoss", "module", _same_shape("SoftMarginLoss", "soft_margin_loss")),
    Spec("F.soft_margin_loss", "function", _same_shape("SoftMarginLoss", "soft_margin_loss", functional_kind=True)),
    *[Spec(f"nn.{m}", "module", _broadcasting(m, f)) for m, f in [
        ("MSELoss", "mse_loss"), ("L1Loss", "l1_loss"), ("SmoothL1Loss", "smooth_l1_loss"), ("HuberLoss", "huber_loss"),
        ("KLDivLoss", "kl_div")]],
    *[Spec(f"F.{f}", "function", _broadcasting(m, f, functional_kind=True)) for m, f in [
        ("MSELoss", "mse_loss"), ("L1Loss", "l1_loss"), ("SmoothL1Loss", "smooth_l1_loss"), ("HuberLoss", "huber_loss"),
        ("KLDivLoss", "kl_div")]],
    Spec("nn.CosineEmbeddingLoss", "module", _cosine_embedding(False)),
    Spec("F.cosine_embedding_loss", "function", _cosine_embedding(True)),
    Spec("nn.MarginRankingLoss", "module", _margin_ranking(False)),
    Spec("F.margin_ranking_loss", "function", _margin_ranking(True)),
    Spec("nn.TripletMarginLoss", "module", _triplet(False)),
    Spec("F.triplet_margin_loss", "function", _triplet(True)),
    Spec("nn.CTCLoss", "module", _ctc(False)),
    Spec("F.ctc_loss", "function", _ctc(True)),
]


# ---- provoked errors (issue 9, item 3) --------------------------------------------------------
# Fixed cases per API, each making torch raise one error of its catalogue (with valid cases
# beside them); the generated cases above stay as they were.

# reduction strings: valid ones, the deprecated alias, kl_div's 'batchmean' (valid only there)
# and unknown ones ("... is not a valid value for reduction")
_REDUCTIONS = ("mean", "sum", "none", "elementwise_mean", "batchmean", "avg", "Mean", "")
_LOSS_INPUTS = {
    "CrossEntropyLoss": ("cross_entropy", "x, t", {"x": T(3, 4), "t": L(3, high=1)}),
    "NLLLoss": ("nll_loss", "x, t", {"x": T(3, 4), "t": L(3, high=1)}),
    "BCELoss": ("binary_cross_entropy", "x.sigmoid(), t.sigmoid()", {"x": T(3, 4), "t": T(3, 4)}),
    "BCEWithLogitsLoss": ("binary_cross_entropy_with_logits", "x, t", {"x": T(3, 4), "t": T(3, 4)}),
    "SoftMarginLoss": ("soft_margin_loss", "x, t", {"x": T(3, 4), "t": T(3, 4)}),
    "MSELoss": ("mse_loss", "x, t", {"x": T(3, 4), "t": T(3, 4)}),
    "L1Loss": ("l1_loss", "x, t", {"x": T(3, 4), "t": T(3, 4)}),
    "SmoothL1Loss": ("smooth_l1_loss", "x, t", {"x": T(3, 4), "t": T(3, 4)}),
    "HuberLoss": ("huber_loss", "x, t", {"x": T(3, 4), "t": T(3, 4)}),
    "KLDivLoss": ("kl_div", "x, t", {"x": T(3, 4), "t": T(3, 4)}),
    "CosineEmbeddingLoss": ("cosine_embedding_loss", "a, b, t", {"a": T(3, 4), "b": T(3, 4), "t": T(3)}),
    "MarginRankingLoss": ("margin_ranking_loss", "a, b, t", {"a": T(3), "b": T(3), "t": T(3)}),
    "TripletMarginLoss": ("triplet_margin_loss", "a, p, q", {"a": T(3, 4), "p": T(3, 4), "q": T(3, 4)}),
    "CTCLoss": ("ctc_loss", "lp.log_softmax(-1), tg + 1, torch.full((2,), 5, dtype=torch.long), torch.full((2,), 2, dtype=torch.long)",
                {"lp": T(5, 2, 3), "tg": L(2, 2, high=2)}),
}
PROVOKE: dict[str, tuple] = {}
for _m, (_f, _args, _ins) in _LOSS_INPUTS.items():
    PROVOKE[f"nn.{_m}"] = tuple((f"nn.{_m}(reduction={red!r})({_args})", _ins) for red in _REDUCTIONS)
    PROVOKE[f"F.{_f}"] = tuple((f"F.{_f}({_args}, reduction={red!r})", _ins) for red in _REDUCTIONS)

# a class weight of CrossEntropyLoss/NLLLoss has one value per class ("weight tensor should be
# defined either for all 4 classes or no classes"), batched [N, C] or [N, C, d], or unbatched [C]
_WEIGHTED = [({"x": T(3, 4), "t": L(3, high=1)}, 4), ({"x": T(2, 4, 5), "t": L(2, 5, high=1)}, 4), ({"x": T(4), "t": L(high=1)}, 4)]
for _m, _f in (("CrossEntropyLoss", "cross_entropy"), ("NLLLoss", "nll_loss")):
    cases = []
    for ins, c in _WEIGHTED:
        for n in (c, c - 1, c + 1):
            cases.append((f"nn.{_m}(weight=w)(x, t)", {**ins, "w": T(n)}))
            cases.append((f"F.{_f}(x, t, weight=w)", {**ins, "w": T(n)}))
    cases.append((f"nn.{_m}(weight=w, reduction='none')(x, t)", {"x": T(3, 4), "t": L(3, high=1), "w": T(5)}))
    cases.append((f"nn.{_m}(weight=w, reduction='sum')(x, t)", {"x": T(3, 4), "t": L(3, high=1), "w": T(4)}))
    PROVOKE[f"nn.{_m}"] += tuple(c for c in cases if c[0].startswith("nn."))
    PROVOKE[f"F.{_f}"] += tuple(c for c in cases if c[0].startswith("F."))


# ---- the catalogue's families not provoked above (catalogue.py; tests/test_catalogue.py).
# Target values are literal tensors (the core may not track them: "silent" is allowed).
def _more(api: str, *cases: tuple) -> None:
    PROVOKE[api] = PROVOKE.get(api, ()) + tuple(cases)


_a3 = {"a": T(3, 4), "p": T(3, 4), "q": T(3, 4)}
_more("F.triplet_margin_loss", ("F.triplet_margin_loss(a, p, q, margin=-1.0)", _a3))
_more("nn.TripletMarginLoss", ("nn.TripletMarginLoss(margin=0.0)(a, p, q)", _a3))
_more("nn.TripletMarginLoss", ("nn.TripletMarginLoss(margin=-1)(a, p, q)", _a3))
_more("F.triplet_margin_loss", ("F.triplet_margin_loss(a, p, q, margin=0)", _a3))
_xt = {"x": T(3, 4), "t": T(3, 4), "w": T(3, 4)}
_more("F.mse_loss", ("F.mse_loss(x, t, reduction='avg', weight=w)", _xt), ("F.mse_loss(x, t, weight=v)", {**_xt, "v": T(3)}))
_more("F.l1_loss", ("F.l1_loss(x, t, weight=v)", {**_xt, "v": T(4, 3)}))
_more("F.cross_entropy", ("F.cross_entropy(x, torch.tensor([0, 1, 7]))", {"x": T(3, 4)}), ("F.cross_entropy(x, torch.tensor([0, 1, 3]))", {"x": T(3, 4)}))
_more("nn.NLLLoss", ("nn.NLLLoss()(x, torch.tensor([0, -2, 1]))", {"x": T(3, 4)}))

SPECS = [dataclasses.replace(s, provoke=s.provoke + PROVOKE.get(s.api, ())) for s in SPECS]

# class-index targets with known values at the classes' bound (differential/values.py)
SPECS = [dataclasses.replace(s, provoke=s.provoke + values.CASES.get(s.api, ())) for s in SPECS]
