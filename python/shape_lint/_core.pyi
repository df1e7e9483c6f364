"""Type stubs for the Rust extension ``shape_lint._core`` (built by maturin from ``rust/python.rs``)."""

from typing import Any, Literal, TypedDict, type_check_only

__all__ = ["check_source", "rules", "__version__"]

__version__: str

# The TypedDicts exist for type checkers only (the runtime returns plain dicts).

@type_check_only
class CheckOptions(TypedDict, total=False):
    """Analysis settings accepted by :func:`check_source`; every key is optional."""

    may_fail: bool
    max_paths: int
    max_steps: int
    timeout_ms: int

@type_check_only
class Finding(TypedDict):
    """One diagnostic. Positions are 1-based; columns count code points."""

    code: str
    """The rule code, e.g. ``"SHP101"``."""
    name: str
    """The kebab-case rule name, e.g. ``"matmul-shape-mismatch"``."""
    message: str
    """One line, without the code."""
    row: int
    col: int
    end_row: int
    end_col: int
    trace: list[str]
    """Provenance lines (where each dimension came from), shown by the ``full`` format."""
    condition: str | None
    """The path condition under which the line fails, or ``None`` when it always fails."""

@type_check_only
class RuleInfo(TypedDict):
    """One entry of the rule registry."""

    code: str
    name: str
    summary: str
    doc: str
    """Markdown in ruff's section order (What it does, Why is this bad?, Example, ...)."""
    default_enabled: bool
    """``False`` for the opt-in SHP9xx rules."""
    status: Literal["stable", "preview", "removed"]

def check_source(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> list[Finding]:
    """Analyse one file's text. Syntax errors give ``[]``; analyser bugs give an SHP001 finding."""

def show_shapes(
    source: str,
    filename: str,
    options: CheckOptions | dict[str, Any] | None = None,
) -> list[tuple[int, str]]:
    """The ``--show-shapes`` view: ``(line, "name: [shape] dtype")`` for lines assigning tensors."""

def rules() -> list[RuleInfo]:
    """Every rule of the registry."""
