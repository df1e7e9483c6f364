"""The buffers tests/test_server.py and tests/test_server_nvim.py open."""

BUGGY = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 120)
        self.fc2 = nn.Linear(80, 84)

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(h)


model = Net()
x = torch.randn(4, 16)
y = model(x)
"""
FC2 = 8  # 0-based line of `self.fc2 = nn.Linear(80, 84)`
CALL = 12  # 0-based line of `return self.fc2(h)`
