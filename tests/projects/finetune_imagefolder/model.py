"""ResNet-18 with a new classification head, for fine-tuning on a folder of labelled images."""
import torch.nn as nn
from torchvision import models


def set_requires_grad(model, requires_grad):
    for param in model.parameters():
        param.requires_grad = requires_grad


def build_model(num_classes, hidden=0, dropout=0.2, feature_extract=False):
    """resnet18 (no pretrained weights are loaded here) whose fc is replaced for num_classes.

    feature_extract freezes the backbone so that only the new head trains; hidden > 0 puts a
    small MLP in place of the single linear layer.
    """
    model = models.resnet18(weights=None)
    if feature_extract:
        set_requires_grad(model, False)
    num_ftrs = model.fc.in_features
    if hidden:
        model.fc = nn.Sequential(
            nn.Linear(num_ftrs, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(hidden, num_classes),
        )
    else:
        model.fc = nn.Linear(num_ftrs, num_classes)
    return model


def trainable_parameters(model):
    return [p for p in model.parameters() if p.requires_grad]
