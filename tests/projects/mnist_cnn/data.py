"""MNIST loaders: the usual normalisation, a shuffled training set and an ordered test set."""
import torch
from torchvision import datasets, transforms

MNIST_MEAN, MNIST_STD = (0.1307,), (0.3081,)


def build_transform():
    return transforms.Compose([transforms.ToTensor(), transforms.Normalize(MNIST_MEAN, MNIST_STD)])


def get_loaders(root, batch_size, test_batch_size, num_workers=0):
    transform = build_transform()
    train_set = datasets.MNIST(root, train=True, download=True, transform=transform)
    test_set = datasets.MNIST(root, train=False, transform=transform)
    train_loader = torch.utils.data.DataLoader(
        train_set, batch_size=batch_size, shuffle=True, num_workers=num_workers)
    test_loader = torch.utils.data.DataLoader(
        test_set, batch_size=test_batch_size, shuffle=False, num_workers=num_workers)
    return train_loader, test_loader
