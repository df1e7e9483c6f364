"""Provoked cases where the core MISSES a precondition torch enforces: torch raises, the core infers
a fully known shape and reports nothing. Each is a real model gap (a disagreement), listed here by
(spec api, expression) with the precondition it misses, so that it is visible rather than hidden:
the harness records it as verdict "missed" (not "agree"), the coverage table prints the count and
the programs, and an entry whose case no longer disagrees is reported as stale (remove it).

Found while provoking the precondition catalogue (issue 9, item 3): 22 cases, all since fixed in
the models (unchecked constructor arguments; literal index and label values, now tracked; the
view of a transposed tensor, now SHP112). The list is empty; a new entry is a regression to fix,
not a place to park one.
"""
from __future__ import annotations

KNOWN_MISSES: dict[tuple[str, str], str] = {
}
