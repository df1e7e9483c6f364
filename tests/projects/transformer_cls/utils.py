"""Helpers for padded token batches."""
import random

import torch


def set_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)


def padding_mask(lengths, max_len):
    """[batch, max_len] bool mask, True at the padding positions (what attention must ignore)."""
    positions = torch.arange(max_len, device=lengths.device)
    return positions.unsqueeze(0) >= lengths.unsqueeze(1)


def masked_mean(x, pad_mask):
    """Mean of x [batch, seq, dim] over the positions that are not padding."""
    keep = (~pad_mask).float()
    summed = (x * keep.unsqueeze(-1)).sum(dim=1)
    return summed / keep.sum(dim=1, keepdim=True).clamp(min=1.0)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
