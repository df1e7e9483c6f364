"""SimCLR-style model for feature vectors: an MLP encoder and a projection head."""
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, in_dim, hidden_dim, feature_dim):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden_dim),
            nn.BatchNorm1d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Linear(hidden_dim, feature_dim),
        )

    def forward(self, x):
        return self.net(x)


class ProjectionHead(nn.Module):
    def __init__(self, feature_dim, proj_hidden, proj_dim):
        super().__init__()
        self.fc1 = nn.Linear(feature_dim, proj_hidden)
        self.fc2 = nn.Linear(proj_hidden, proj_dim)

    def forward(self, h):
        return self.fc2(F.relu(self.fc1(h)))


class SimCLR(nn.Module):
    def __init__(self, in_dim, hidden_dim=64, feature_dim=32, proj_hidden=64, proj_dim=16):
        super().__init__()
        self.encoder = Encoder(in_dim, hidden_dim, feature_dim)
        self.projector = ProjectionHead(feature_dim, proj_hidden, proj_dim)

    def forward(self, x):
        h = self.encoder(x)
        z = self.projector(h)
        return h, F.normalize(z, dim=1)
