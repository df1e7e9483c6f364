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
    # values of literal index / label tensors (value tracking)
    ("nn.EmbeddingBag", "nn.EmbeddingBag(3, 2)(torch.tensor([[0, 5]]))"): "embedding_bag.index_range: index >= num_embeddings",
    ("F.cross_entropy", "F.cross_entropy(x, torch.tensor([0, 1, 7]))"): "nll.target_range: target >= number of classes",
    ("nn.NLLLoss", "nn.NLLLoss()(x, torch.tensor([0, -2, 1]))"): "nll.target_range: a negative target",
}
