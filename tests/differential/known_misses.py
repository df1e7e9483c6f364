"""Provoked cases where the core MISSES a precondition torch enforces: torch raises, the core infers
a fully known shape and reports nothing. Each is a real model gap (a disagreement), listed here by
(spec api, expression) with the precondition it misses, so that it is visible rather than hidden:
the harness records it as verdict "missed" (not "agree"), the coverage table prints the count and
the programs, and an entry whose case no longer disagrees is reported as stale (remove it).

Found while provoking the precondition catalogue (issue 9, item 3); none is fixed here (the Rust
models are out of this change's scope). Value-tracking of literal index tensors (being added) should
turn the index/label ones into agreements.
"""
from __future__ import annotations

KNOWN_MISSES: dict[tuple[str, str], str] = {
    # constructor arguments the models do not check
    ("nn.Embedding", "nn.Embedding(3, 2, padding_idx=5)(i)"): "embedding.padding_idx: padding_idx >= num_embeddings",
    ("F.embedding", "F.embedding(i, w, padding_idx=4)"): "embedding.padding_idx: padding_idx >= num_embeddings",
    ("F.embedding_bag", "F.embedding_bag(i, w, mode='median')"): "embedding_bag.mode: mode not in sum/mean/max",
    ("nn.EmbeddingBag", "nn.EmbeddingBag(3, 2, mode='median')(i)"): "embedding_bag.mode: mode not in sum/mean/max",
    ("nn.Conv2d", "nn.Conv2d(4, 4, 3, groups=0)(x)"): "conv.groups_positive: groups=0",
    ("F.batch_norm", "F.batch_norm(x, m, v, training=True, eps=-1.0)"): "batch_norm.eps: a negative eps in training",
    ("nn.RNN", "nn.RNN(4, 3, nonlinearity='gelu')(x)[0]"): "rnn.nonlinearity: not tanh/relu",
    ("nn.LSTM", "nn.LSTM(4, 3, dropout=1.5)(x)[0]"): "rnn.dropout_range: dropout outside [0, 1]",
    ("nn.GRU", "nn.GRU(4, 0)(x)[0]"): "rnn.positive_sizes: hidden_size=0",
    ("nn.TransformerEncoderLayer", "nn.TransformerEncoderLayer(4, 2, 8, 0.0, activation='tanh')(x)"): "transformer.activation: a string other than relu/gelu",
    ("nn.Hardtanh", "nn.Hardtanh(2.0, 1.0)(x)"): "hardtanh.module_min_max: max_val <= min_val",
    ("F.hardtanh", "F.hardtanh(x, 2.0, 1.0)"): "hardtanh.min_max: min_val > max_val",
    ("nn.TripletMarginLoss", "nn.TripletMarginLoss(margin=0.0)(a, p, q)"): "triplet.module_margin: margin <= 0",
    ("F.triplet_margin_loss", "F.triplet_margin_loss(a, p, q, margin=-1.0)"): "triplet.margin: margin <= 0",
}
