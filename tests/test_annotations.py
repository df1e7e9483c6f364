"""Input specs from annotations (rust/engine/annotations.rs): a ``forward`` checked on its own
takes the shapes its parameters' jaxtyping- or torchtyping-style annotations give; and a
function under a runtime checker (``@jaxtyped(typechecker=beartype)``) is checked at each call
against its annotations (SHP113), proven against jaxtyping itself at the end.

Each bug case is also run under torch with an input of the annotated shape (batch 2) and must
raise at the reported line; each clean case must run. jaxtyping is not needed: the annotations
are imported under ``TYPE_CHECKING`` and never evaluated (``from __future__ import annotations``).
"""
import textwrap
import traceback

import pytest

from shape_lint import _core

HEAD = """\
from __future__ import annotations
from typing import TYPE_CHECKING

import torch
import torch.nn as nn
from torch import Tensor

if TYPE_CHECKING:
    from jaxtyping import Float, Int64
    from torchtyping import TensorType
"""

CASES = {
    # (annotation of x, body of forward, torch input for x or None, expected (code, line) or None)
    "jaxtyping_conv_head": (
        'Float[Tensor, "batch 3 32 32"]',
        ["h = self.conv(x).relu()", "return self.fc(h.flatten(1))"],
        "torch.randn(2, 3, 32, 32)", ("SHP101", 2),
    ),
    "jaxtyping_conv_head_ok": (
        'Float[Tensor, "batch 3 34 34"]',
        ["h = self.conv(x).relu()", "return self.fc(h.flatten(1))"],
        "torch.randn(2, 3, 34, 34)", None,
    ),
    "torchtyping": (
        'TensorType["batch", 3, 32, 32, float]',
        ["h = self.conv(x).relu()", "return self.fc(h.flatten(1))"],
        "torch.randn(2, 3, 32, 32)", ("SHP101", 2),
    ),
    "variadic_prefix": (
        'Float[Tensor, "*batch 3 32 32"]',
        ["h = self.conv(x).relu()", "return self.fc(h.flatten(-3))"],
        "torch.randn(2, 3, 32, 32)", ("SHP101", 2),
    ),
    "int64_tokens": (
        'Int64[Tensor, "batch seq"]',
        ["return self.fc(self.emb(x))"],
        "torch.randint(0, 100, (2, 7))", ("SHP101", 1),
    ),
    # not read: broadcastable, arithmetic, a string annotation, a variadic in the middle
    "broadcast_dim_not_read": (
        'Float[Tensor, "#batch 3 32 32"]',
        ["h = self.conv(x).relu()", "return self.fc(h.flatten(1))"],
        None, None,
    ),
    "arithmetic_not_read": (
        'Float[Tensor, "batch 3 h+2 32"]',
        ["h = self.conv(x).relu()", "return self.fc(h.flatten(1))"],
        None, None,
    ),
    "middle_variadic_not_read": (
        'Float[Tensor, "batch ... 32"]',
        ["h = self.conv(x).relu()", "return self.fc(h.flatten(1))"],
        None, None,
    ),
}

MODEL = """

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.fc = nn.Linear(16 * 32 * 32, 10)
        self.emb = nn.Embedding(100, 8)

    def forward(self, x: {ann}):
{body}
"""


def program(name):
    ann, body, _, _ = CASES[name]
    return HEAD + MODEL.format(ann=ann, body="\n".join("        " + line for line in body))


def forward_line(source, k):
    """The line of the k-th statement (1-based) of forward's body."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines, 1) if line.strip().startswith("def forward"))
    return start + k


@pytest.mark.parametrize("name", sorted(CASES))
def test_annotated_forward(name):
    source = program(name)
    found = [(f["code"], f["row"]) for f in _core.check_source(source, "annotated.py", {})]
    expected = CASES[name][3]
    assert found == ([(expected[0], forward_line(source, expected[1]))] if expected else []), found


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][2]))
def test_torch_agrees_with_the_annotated_input(name):
    """The oracle: forward on an input of the annotated shape raises at the reported line, or runs."""
    pytest.importorskip("torch")
    source = program(name)
    scope = {"__name__": "annotated"}
    exec(compile(source, "annotated.py", "exec"), scope)
    torch = scope["torch"]
    torch.manual_seed(0)
    x = eval(CASES[name][2], scope)
    expected = CASES[name][3]
    try:
        scope["Net"]()(x)
    except RuntimeError as e:
        line = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == "annotated.py"][-1]
        assert expected and line == forward_line(source, expected[1]), f"raised at {line}: {e}"
    else:
        assert expected is None, "torch ran"


def test_named_dims_are_one_size_across_parameters():
    source = HEAD + textwrap.dedent("""

        class Pair(nn.Module):
            def forward(self, a: Float[Tensor, "batch dim"], b: Float[Tensor, "batch dim"], c: Float[Tensor, "other dim"]):
                s = a + b
                return torch.cat([s, c], dim=1)
    """)
    # a + b: the same sizes; cat along dim 1 needs dim 0 equal: batch vs other is not decided
    assert _core.check_source(source, "pair.py", {}) == []
    bad = source.replace('c: Float[Tensor, "other dim"]', 'c: Float[Tensor, "batch 3 dim"]')
    assert [f["code"] for f in _core.check_source(bad, "pair.py", {})] == ["SHP104"]


# ---------------------------------------------------------------------------------------------
# SHP113: under a runtime checker, every call is checked against the annotations

CHECKED_HEAD = """\
import torch
import torch.nn as nn
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor


@jaxtyped(typechecker=beartype)
def pool(x: Float[Tensor, "batch channels h w"]) -> Float[Tensor, "batch channels"]:
    return x.mean(dim=({dims}))


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "batch 64"], mask: Float[Tensor, "batch"]) -> Float[Tensor, "batch 10"]:
        return self.fc(x) * mask[:, None]


features = pool(torch.randn(8, 64, 7, 7))
logits = Head()({x}, torch.ones({mask}))
"""

CHECKED = {
    # (pool's dims, Head's x, the mask's length, the statement of the finding or None)
    "clean": ("2, 3", "features", 8, None),
    "return_value": ("1, 2", "features", 8, "features ="),  # pool returns [8, 7]
    "argument_size": ("2, 3", "torch.randn(8, 32)", 8, "logits ="),  # 32 features, not 64
    "argument_name_across_parameters": ("2, 3", "features", 4, "logits ="),  # batch 8 vs batch 4
    "argument_rank": ("2, 3", "features[None]", 8, "logits ="),  # [1, 8, 64]
}


def checked(name):
    dims, x, mask, _ = CHECKED[name]
    return CHECKED_HEAD.format(dims=dims, x=x, mask=mask)


def checked_line(name):
    where = CHECKED[name][3]
    return where and next(i for i, line in enumerate(checked(name).splitlines(), 1) if line.startswith(where))


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_a_runtime_checked_call_contradicting_its_annotations(name):
    found = [(f["code"], f["row"]) for f in _core.check_source(checked(name), "checked.py", {})]
    line = checked_line(name)
    assert found == ([("SHP113", line)] if line else []), found


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_jaxtyping_raises_where_shp113_is_reported(name):
    pytest.importorskip("torch")
    jaxtyping = pytest.importorskip("jaxtyping")
    pytest.importorskip("beartype")
    scope = {"__name__": "checked"}
    line = checked_line(name)
    try:
        exec(compile(checked(name), "checked.py", "exec"), scope)
    except jaxtyping.TypeCheckError as e:
        raised = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == "checked.py"][-1]
        assert raised == line, f"jaxtyping raised at {raised}"
    else:
        assert line is None, "jaxtyping accepted the call"


def test_without_a_runtime_checker_the_annotation_is_not_judged():
    source = checked("return_value").replace("@jaxtyped(typechecker=beartype)\n", "")
    assert _core.check_source(source, "checked.py", {}) == []
