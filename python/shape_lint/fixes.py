"""Suggested fixes (``shape-lint check --fix --unsafe-fixes``, ``--diff``), ruff's conventions.

The core attaches a fix to a finding where one literal number decides the failing check and
replacing it makes the file analyse without that finding and without any new one (the core
re-runs the analysis on the fixed text before it offers the fix). Such a fix changes what the
program does, so it is *unsafe* in ruff's terms: ``--fix`` alone applies none and says that
they exist, ``--fix --unsafe-fixes`` applies them, ``--diff`` shows them without writing.
"""

from __future__ import annotations

from collections import abc

TYPE_CHECKING = False  # (typing costs 5 ms at start-up: for the checker only)
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

__all__ = ["apply_edits", "fix_edits", "unified_diff", "valid_fix"]


def valid_fix(fix: Any) -> dict[str, Any] | None:
    """A core ``fix`` dict checked and copied (``None`` when absent or malformed)."""
    if not isinstance(fix, abc.Mapping):
        return None
    try:
        edits = [
            {
                "content": str(e["content"]),
                "row": int(e["row"]),
                "col": int(e["col"]),
                "end_row": int(e["end_row"]),
                "end_col": int(e["end_col"]),
            }
            for e in fix["edits"]
        ]
        return {"message": str(fix["message"]), "applicability": str(fix.get("applicability", "unsafe")),
                "edits": edits}
    except (KeyError, TypeError, ValueError):
        return None


def _offset(line_starts: Sequence[int], lines: Sequence[str], row: int, col: int) -> int | None:
    """The string index of (1-based row, 1-based code-point column), or ``None`` if outside."""
    if not 1 <= row <= len(lines):
        return None
    if not 1 <= col <= len(lines[row - 1]) + 1:
        return None
    return line_starts[row - 1] + col - 1


def fix_edits(fixes: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The edits of ``fixes``, one fix at a time, dropping a fix whose edits overlap an earlier
    one's (as ruff does: the rest is fixed on a later run)."""
    taken: list[Mapping[str, Any]] = []
    spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for fix in fixes:
        mine = [((e["row"], e["col"]), (e["end_row"], e["end_col"])) for e in fix["edits"]]
        if any(a < d and c < b for a, b in mine for c, d in spans):
            continue
        spans += mine
        taken += list(fix["edits"])
    return taken


def apply_edits(source: str, edits: Sequence[Mapping[str, Any]]) -> str:
    """``source`` with the non-overlapping ``edits`` applied (rows and code-point columns)."""
    lines = source.split("\n")
    starts, pos = [], 0
    for ln in lines:
        starts.append(pos)
        pos += len(ln) + 1
    located = []
    for e in edits:
        a = _offset(starts, lines, e["row"], e["col"])
        b = _offset(starts, lines, e["end_row"], e["end_col"])
        if a is None or b is None or b < a:
            continue
        located.append((a, b, e["content"]))
    out = source
    for a, b, content in sorted(located, reverse=True):
        out = out[:a] + content + out[b:]
    return out


def unified_diff(before: str, after: str, name: str) -> str:
    """The ``--diff`` view of one file (ruff prints a unified diff per file)."""
    import difflib

    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=name, tofile=name,
    ))
