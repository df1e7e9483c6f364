"""A small convolutional network for 28x28 grayscale digits."""
import torch.nn as nn
import torch.nn.functional as F


def conv_block(in_channels, out_channels):
    """3x3 convolution that keeps the size, batch norm, ReLU, then halve the map."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
    )


class Net(nn.Module):
    def __init__(self, channels=(16, 32), hidden=64, num_classes=10, dropout=0.25):
        super().__init__()
        c1, c2 = channels
        self.features = nn.Sequential(conv_block(1, c1), conv_block(c1, c2))  # 28 -> 14 -> 7
        self.dropout = nn.Dropout(dropout)
        self.fc1 = nn.Linear(c2 * 7 * 7, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = x.view(x.size(0), -1)
        x = self.dropout(F.relu(self.fc1(x)))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)
