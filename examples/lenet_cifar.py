"""A classic LeNet on CIFAR-10-sized images, with a bug in the classifier head.

`fc1` produces 120 features but `fc2` expects 80: torch raises
`mat1 and mat2 shapes cannot be multiplied (4x120 and 80x10)` where forward calls fc2.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH_SIZE = 4


class LeNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(80, num_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return x


if __name__ == "__main__":
    net = LeNet()
    images = torch.randn(BATCH_SIZE, 3, 32, 32)
    print(net(images).shape)
