"""CIFAR-sized residual networks."""
from .resnet import ResNet18, ResNet34

__all__ = ["ResNet18", "ResNet34"]
