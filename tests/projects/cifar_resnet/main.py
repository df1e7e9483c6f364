"""Train a narrow ResNet-18 on CIFAR-shaped data (random tensors stand in for the images)."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from models import ResNet18

CIFAR_SHAPE = (3, 32, 32)


def get_args():
    parser = argparse.ArgumentParser(description="CIFAR-10 ResNet training")
    parser.add_argument("--lr", default=0.1, type=float, help="learning rate")
    parser.add_argument("--batch-size", default=16, type=int)
    parser.add_argument("--epochs", default=1, type=int)
    parser.add_argument("--width", default=8, type=int, help="channels of the first stage")
    parser.add_argument("--num-classes", default=10, type=int)
    parser.add_argument("--train-samples", default=40, type=int)
    parser.add_argument("--test-samples", default=24, type=int)
    return parser.parse_args()


def make_loader(num_samples, num_classes, batch_size, shuffle):
    images = torch.randn(num_samples, *CIFAR_SHAPE)
    labels = torch.randint(0, num_classes, (num_samples,))
    return DataLoader(TensorDataset(images, labels), batch_size=batch_size, shuffle=shuffle)


def train_one_epoch(net, loader, criterion, optimizer):
    net.train()
    total_loss, correct, seen = 0.0, 0, 0
    for inputs, targets in loader:
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * targets.size(0)
        _, predicted = outputs.max(1)
        correct += predicted.eq(targets).sum().item()
        seen += targets.size(0)
    return total_loss / seen, correct / seen


def test(net, loader, criterion):
    net.eval()
    correct, seen = 0, 0
    with torch.no_grad():
        for inputs, targets in loader:
            outputs = net(inputs)
            _, predicted = outputs.max(1)
            correct += predicted.eq(targets).sum().item()
            seen += targets.size(0)
    return correct / seen


def main():
    args = get_args()
    torch.manual_seed(0)
    trainloader = make_loader(args.train_samples, args.num_classes, args.batch_size, shuffle=True)
    testloader = make_loader(args.test_samples, args.num_classes, args.batch_size, shuffle=False)
    net = ResNet18(num_classes=args.num_classes, width=args.width)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    for epoch in range(args.epochs):
        loss, acc = train_one_epoch(net, trainloader, criterion, optimizer)
        scheduler.step()
        print(f"epoch {epoch}: loss {loss:.3f} train acc {acc:.3f} test acc {test(net, testloader, criterion):.3f}")


if __name__ == "__main__":
    main()
