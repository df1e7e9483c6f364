"""Contrastive pre-training on random feature vectors with noise-and-dropout augmentations."""
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

from loss import NTXentLoss
from model import SimCLR


def parse_args():
    parser = argparse.ArgumentParser(description="SimCLR on tabular features")
    parser.add_argument("--in-dim", type=int, default=24)
    parser.add_argument("--hidden-dim", type=int, default=64)
    parser.add_argument("--feature-dim", type=int, default=32)
    parser.add_argument("--proj-dim", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--num-samples", type=int, default=72, help="not a multiple of the batch size")
    parser.add_argument("--temperature", type=float, default=0.5)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    return parser.parse_args()


def augment(x, noise=0.1, drop=0.2):
    """A random view: Gaussian noise plus random feature dropout."""
    keep = (torch.rand_like(x) > drop).float()
    return (x + noise * torch.randn_like(x)) * keep


def main():
    args = parse_args()
    torch.manual_seed(0)
    features = torch.randn(args.num_samples, args.in_dim)
    loader = DataLoader(TensorDataset(features), batch_size=args.batch_size, shuffle=True, drop_last=True)
    model = SimCLR(args.in_dim, args.hidden_dim, args.feature_dim, proj_dim=args.proj_dim)
    criterion = NTXentLoss(args.batch_size, args.temperature)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        total = 0.0
        for step, (x,) in enumerate(loader):
            _, z_i = model(augment(x))
            _, z_j = model(augment(x))
            loss = criterion(z_i, z_j)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / (step + 1):.4f}")


if __name__ == "__main__":
    main()
