"""Provoked cases where the core MISSES a precondition torch enforces: torch raises, the core infers
a fully known shape and reports nothing. Each is a real model gap (a disagreement), listed here by
(spec api, expression) with the precondition it misses, so that it is visible rather than hidden:
the harness records it as verdict "missed" (not "agree"), the coverage table prints the count and
the programs, and an entry whose case no longer disagrees is reported as stale (remove it).

Found while provoking the precondition catalogue (issue 9, item 3). The unchecked constructor
arguments (padding_idx, an EmbeddingBag's mode, conv groups, batch_norm eps, the recurrent layers'
nonlinearity/dropout/sizes, the transformer activation, hardtanh's bounds, the triplet margin) are
now checked by the models and left this list. Value-tracking of literal index tensors (being added)
should turn the index/label ones into agreements.
"""
from __future__ import annotations

KNOWN_MISSES: dict[tuple[str, str], str] = {
}
