"""Convolution helpers shared by the residual blocks."""
import torch.nn as nn


def conv3x3(in_planes, out_planes, stride=1):
    """3x3 convolution with padding: keeps the map size at stride 1."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    """1x1 convolution, for projection shortcuts."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


def conv_bn(in_planes, out_planes, stride=1):
    """A 1x1 projection followed by batch norm (the shortcut of a downsampling block)."""
    return nn.Sequential(conv1x1(in_planes, out_planes, stride), nn.BatchNorm2d(out_planes))
