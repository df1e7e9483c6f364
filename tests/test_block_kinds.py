"""The path-explosion models of ``bench/block_kinds.rs`` (used by ``bench/paths.rs`` and
``tests/paths.rs``) are real bugs: under torch each kind's model raises at its planted head
line, and the analyser reports exactly that line."""

from __future__ import annotations

import re
import traceback
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
core = pytest.importorskip("shape_lint._core")

SRC = (Path(__file__).resolve().parent.parent / "bench" / "block_kinds.rs").read_text()
KINDS = re.findall(r'\(\s*"(\w+)",\s*"(.*?)",\s*\)', SRC, re.S)
TEMPLATE = SRC[SRC.index('r#"') + 3 : SRC.index('"#')]


def model(body: str, blocks: int) -> str:
    return TEMPLATE.replace("{body}", body).replace("{blocks}", str(blocks))


def bug_line(src: str) -> int:
    return next(i + 1 for i, line in enumerate(src.splitlines()) if line.strip() == "return self.head(x)")


def test_all_four_kinds_are_found():
    assert [k for k, _ in KINDS] == ["identity", "fresh", "scale", "proj"]


@pytest.mark.parametrize("kind,body", KINDS, ids=[k for k, _ in KINDS])
@pytest.mark.parametrize("blocks", [1, 24])
def test_raises_at_the_head_and_is_reported_there(kind, body, blocks):
    src = model(body, blocks)
    line = bug_line(src)
    code = compile(src, f"<{kind}>", "exec")
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied") as info:
        exec(code, {"__name__": "__main__"})
    frames = [f for f in traceback.extract_tb(info.value.__traceback__) if f.filename == f"<{kind}>"]
    assert frames[-1].lineno == line
    found = [(f["row"], f["code"]) for f in core.check_source(src, f"{kind}.py")]
    assert found == [(line, "SHP101")]
