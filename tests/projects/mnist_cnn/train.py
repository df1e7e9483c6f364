"""Train the digit classifier: python train.py [--epochs N] [--max-batches 0 for full epochs]."""
import argparse

import torch
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR

from data import get_loaders
from model import Net


def parse_args():
    parser = argparse.ArgumentParser(description="MNIST convnet")
    parser.add_argument("--data", default="../data", help="where MNIST is (downloaded if missing)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--width", type=int, default=16, help="channels of the first block")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--max-batches", type=int, default=0,
                        help="stop each training epoch after this many batches (0: full epoch)")
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


def train(args, model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"epoch {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}] loss {loss.item():.4f}")
        if args.max_batches and batch_idx + 1 >= args.max_batches:
            break


def evaluate(model, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    n = len(loader.dataset)
    print(f"test: average loss {test_loss / n:.4f}, accuracy {correct}/{n}")
    return correct / n


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    train_loader, test_loader = get_loaders(args.data, args.batch_size, args.test_batch_size)
    model = Net(channels=(args.width, 2 * args.width), hidden=args.hidden)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_loader, optimizer, epoch)
        evaluate(model, test_loader)
        scheduler.step()


if __name__ == "__main__":
    main()
