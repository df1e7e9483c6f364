"""NT-Xent (normalized temperature-scaled cross entropy), the InfoNCE loss of SimCLR."""
import torch
import torch.nn as nn


def positive_targets(batch_size):
    """Row k of the 2N x 2N similarity matrix has its positive in column (k + N) mod 2N."""
    return torch.cat([torch.arange(batch_size, 2 * batch_size), torch.arange(0, batch_size)])


class NTXentLoss(nn.Module):
    """Built for a fixed batch size: the self-similarity mask and targets are made once."""

    def __init__(self, batch_size, temperature=0.5):
        super().__init__()
        self.temperature = temperature
        self.register_buffer("self_mask", torch.eye(2 * batch_size, dtype=torch.bool))
        self.register_buffer("targets", positive_targets(batch_size))
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, z_i, z_j):
        z = torch.cat([z_i, z_j], dim=0)
        sim = torch.mm(z, z.t()) / self.temperature
        sim = sim.masked_fill(self.self_mask, float("-inf"))
        return self.criterion(sim, self.targets)
