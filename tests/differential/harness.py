"""The differential harness: one generated program, run through the core and through real torch.

An API is described by a `Spec`: its name as users write it (`torch.cat`, `Tensor.view`,
`nn.Linear`, `F.pad`), its kind (function, method or module) and a generator that, given a seeded
`random.Random`, returns one case: an expression and the tensors it uses. The expression must
evaluate to one tensor (index a tuple result, e.g. `lstm(x)[0]`).

For each case the harness builds the program

    import torch / torch.nn as nn / torch.nn.functional as F   (and torchvision, when used)
    x = torch.randn(2, 3)          # one line per input
    y = <expression>

and compares (`compare`):
- torch runs: the core must not report an SHP1xx or SHP202 finding (dtypes; CPU tensors have no
  device to mismatch), and when it infers a fully known shape
  for `y` that shape (and the dtype, when the core names one) must equal torch's: **agree**; when
  the core infers nothing or a partly unknown shape: **silent**.
- torch raises: an SHP1xx or SHP202 finding is **agree**; no finding and no fully known shape is **silent**;
  a fully known shape without a finding is a disagreement (the model misses a precondition).
Anything else is a **disagreement**, recorded with the program for the failure message.

When torch raises, the harness keeps the exception's type and message (`Outcome.error`) and
classifies it against the precondition catalogue (`catalogue.py`, mined from torch's sources by
`mine_catalogue.py`): `Outcome.family` is the id of the first catalogued family of the API whose
pattern matches, or None (an error the catalogue does not list). `Tally.families` counts, per
family, the verdicts of the cases that provoked it.

A case's expression may be preceded by statements, one per line (`a, b, c = x.chunk(2)\na`):
they run after the inputs and before `y = <last line>`.

The core is driven through `shape_lint._core` only; torch is imported by the tests, never by it.
"""
from __future__ import annotations

import collections
import dataclasses
import random
from typing import Callable

from . import catalogue
from .known_misses import KNOWN_MISSES

KINDS = ("function", "method", "module")

PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


@dataclasses.dataclass(frozen=True)
class Input:
    """A tensor input: its shape, and how it is made (`randn`, a long `randint`, a bool mask)."""

    shape: tuple[int, ...]
    kind: str = "float"  # float | long | bool | double
    high: int = 2  # exclusive upper bound of the values of a long tensor

    def source(self) -> str:
        dims = ", ".join(map(str, self.shape))
        tup = f"({dims},)" if len(self.shape) == 1 else f"({dims})"
        if self.kind == "long":
            return f"torch.randint(0, {self.high}, {tup})"
        if self.kind == "bool":
            return f"torch.rand({tup}) > 0.5" if self.shape else "torch.tensor(True)"
        if self.kind == "double":
            return f"torch.randn({tup}, dtype=torch.float64)"
        return f"torch.randn({tup})" if self.shape else "torch.tensor(0.5)"


def T(*shape: int) -> Input:  # noqa: N802 - reads like a type in the specs
    """A float tensor of this shape."""
    return Input(tuple(shape))


def L(*shape: int, high: int = 2) -> Input:  # noqa: N802
    """A long tensor of this shape with values in [0, high)."""
    return Input(tuple(shape), "long", high)


def B(*shape: int) -> Input:  # noqa: N802
    """A bool tensor of this shape."""
    return Input(tuple(shape), "bool")


def D(*shape: int) -> Input:  # noqa: N802
    """A float64 tensor of this shape."""
    return Input(tuple(shape), "double")


Case = tuple[str, dict[str, Input]]


@dataclasses.dataclass(frozen=True)
class Spec:
    """One API under test: `api` as users write it, its `kind`, and a case generator."""

    api: str
    kind: str
    gen: Callable[[random.Random], Case]
    cases: int = 40
    # fixed cases run after the generated ones, each provoking an error torch raises (issue 9:
    # every catalogued precondition is provoked at least once); they leave the generated stream as it was
    provoke: tuple[Case, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.api}: kind {self.kind!r} is not one of {KINDS}")


def shape(rng: random.Random, rank: int | None = None, lo: int = 1, hi: int = 5, max_rank: int = 4) -> tuple[int, ...]:
    """A random shape: `rank` dims (or a random rank in 1..max_rank), each in [lo, hi]."""
    r = rng.randint(1, max_rank) if rank is None else rank
    return tuple(rng.randint(lo, hi) for _ in range(r))


def near(r: random.Random, v: int, lo: int = 1) -> int:
    """`v`, or a nearby different value >= lo, about half of the time each (valid and invalid sizes)."""
    if r.random() < 0.55:
        return v
    w = v + r.choice([-2, -1, 1, 2])
    return w if w >= lo and w != v else v + 1


def split_case(expr: str) -> tuple[str, str]:
    """(the statements before the expression, the expression): `"a, b = x.chunk(2)\na"`."""
    stmts, _, last = expr.rpartition("\n")
    return (stmts + "\n" if stmts else ""), last


def program(expr: str, inputs: dict[str, Input]) -> str:
    body = "".join(f"{name} = {inp.source()}\n" for name, inp in inputs.items())
    prelude = PRELUDE + ("import torchvision\n" if "torchvision" in expr else "") + ("import numpy as np\n" if "np." in expr else "")
    stmts, last = split_case(expr)
    return prelude + body + stmts + f"y = {last}\n"


_DTYPES = {"float32": "float", "float64": "double", "float16": "half", "bfloat16": "bfloat16",
           "int64": "long", "int32": "int", "int16": "short", "int8": "char", "uint8": "byte", "bool": "bool"}


_CORE_DTYPES = {"float", "double", "half", "bfloat16", "long", "int", "bool", "byte"}


@dataclasses.dataclass
class Outcome:
    verdict: str  # agree | silent | disagree | missed (a disagreement listed in known_misses.py)
    raised: bool  # torch raised on this case
    detail: str = ""
    error: str | None = None  # torch's exception when it raised: "ValueError: message"
    family: str | None = None  # the catalogue family of that error (classify), None if not catalogued


@dataclasses.dataclass(frozen=True)
class Raised:
    """What torch raised on a case: the exception's type name and message."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


def run_torch(torch, expr: str, inputs: dict[str, Input]):
    """(shape, dtype name) of the expression under real torch, or the `Raised` error when torch raises."""
    env = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional}
    if "torchvision" in expr:
        # specs_zoo.py lists torchvision specs only where it imports (see torchvision_compat.py)
        import torchvision_compat

        env["torchvision"] = torchvision_compat.load()
    if "np." in expr:
        import numpy

        env["np"] = numpy
    try:
        for name, inp in inputs.items():
            env[name] = eval(inp.source(), env)  # noqa: S307 - generated test input
        stmts, last = split_case(expr)
        if stmts:
            exec(stmts, env)  # noqa: S102
        out = eval(last, env)  # noqa: S307
    except Exception as e:  # noqa: BLE001 - any torch error counts as "raises"
        return Raised(type(e).__name__, str(e))
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{expr!r} must evaluate to a tensor, got {type(out).__name__}")
    return tuple(out.shape), _DTYPES.get(str(out.dtype).removeprefix("torch."), "?")


def run_core(core, src: str):
    """(SHP1xx and SHP202 findings, the core's shape text for `y` or None)."""
    line = src.count("\n")
    findings = [f for f in core.check_source(src, "t.py") if f["code"].startswith("SHP1") or f["code"] == "SHP202"]
    shown = dict(core.show_shapes(src, "t.py")).get(line)
    return findings, shown


def parse_shown(shown: str):
    """'y: [2, 3] float' -> ((2, 3), 'float'); None when any part of the shape is unknown."""
    if shown is None or "|" in shown or "[" not in shown:
        return None
    body = shown[shown.index("[") + 1: shown.index("]")]
    rest = shown[shown.index("]") + 1:].strip() or None
    dims = [d.strip() for d in body.split(",") if d.strip()]
    if not all(d.isdigit() for d in dims):
        return None
    return tuple(int(d) for d in dims), rest


def compare(torch, core, expr: str, inputs: dict[str, Input], api: str | None = None) -> Outcome:
    """The verdict of one case; when torch raises, its error is classified against the catalogue
    families of `api` (all families when None)."""
    src = program(expr, inputs)
    want = run_torch(torch, expr, inputs)
    findings, shown = run_core(core, src)
    got = parse_shown(shown)
    if isinstance(want, Raised):
        out = _compare_raised(findings, got, shown, src)
        out.error, out.family = str(want), catalogue.classify(api, want.message)
        return out
    if want is not None:
        if findings:
            return Outcome("disagree", False, f"torch gives {want[0]}, core reports {findings[0]['message']}\n{src}")
        if got is None:
            return Outcome("silent", False)
        if got[0] != want[0]:
            return Outcome("disagree", False, f"torch gives {want[0]}, core infers {shown}\n{src}")
        # the core names some dtypes, and "other" for every dtype it does not name (uint8, ...)
        if got[1] not in (None, "?") and got[1] != want[1] and not (got[1] == "other" and want[1] not in _CORE_DTYPES):
            return Outcome("disagree", False, f"torch gives dtype {want[1]}, core infers {shown}\n{src}")
        return Outcome("agree", False)
    raise TypeError("run_torch returns a shape or a Raised error")


def _compare_raised(findings, got, shown, src) -> Outcome:
    if findings:
        return Outcome("agree", True)
    if got is not None:
        return Outcome("disagree", True, f"torch raises, core infers {shown} and reports nothing\n{src}")
    return Outcome("silent", True)


@dataclasses.dataclass
class Tally:
    cases: int = 0
    agree: int = 0
    silent: int = 0
    disagree: int = 0
    missed: int = 0  # disagreements listed in known_misses.py (real model gaps, marked, not failed)
    raises: int = 0  # cases where torch raised (valid and invalid inputs both get generated)
    failures: list[str] = dataclasses.field(default_factory=list)
    misses: list[str] = dataclasses.field(default_factory=list)  # the known misses' programs
    stale: list[str] = dataclasses.field(default_factory=list)  # known misses that no longer disagree
    # catalogue family id -> Counter of the verdicts of the cases that provoked it
    families: dict[str, collections.Counter] = dataclasses.field(default_factory=dict)
    unclassified: collections.Counter = dataclasses.field(default_factory=collections.Counter)  # uncatalogued errors
    # every case with its outcome, for the tests that re-run agreeing cases (unread.py)
    records: list[tuple[str, dict[str, Input], Outcome]] = dataclasses.field(default_factory=list)


def run_spec(torch, core, spec: Spec) -> Tally:
    rng = random.Random(spec.api)
    tally = Tally()
    generated = [spec.gen(rng) for _ in range(spec.cases)]
    for expr, inputs in generated + list(spec.provoke):
        outcome = compare(torch, core, expr, inputs, spec.api)
        known = KNOWN_MISSES.get((spec.api, expr))
        if known is not None:
            if outcome.verdict == "disagree":
                outcome.verdict = "missed"
                tally.misses.append(f"{known}\n{outcome.detail}")
                outcome.detail = ""
            else:
                tally.stale.append(f"{spec.api}: {expr} ({outcome.verdict})")
        if outcome.family:
            tally.families.setdefault(outcome.family, collections.Counter())[outcome.verdict] += 1
        elif outcome.error:
            tally.unclassified[outcome.error.split("\n")[0][:200]] += 1
        tally.cases += 1
        setattr(tally, outcome.verdict, getattr(tally, outcome.verdict) + 1)
        tally.raises += outcome.raised
        tally.records.append((expr, inputs, outcome))
        if outcome.detail:
            tally.failures.append(outcome.detail)
    return tally
