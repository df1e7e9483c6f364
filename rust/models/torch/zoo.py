# torchvision.models, as shape-lint runs it (embedded in the analyzer by zoo.rs).
#
# The classification architectures of torchvision 0.28 (torchvision/models/*.py), reduced to
# what shapes depend on: the same layers with the same arguments, in the same attributes and
# Sequential indices, and the same forward. Weight initialisation, weights enums and
# download code are left out. `children()` lists the direct submodules in registration order
# (the engine does not keep attribute order), reading the attributes at call time so that a
# replaced head shows up.
#
# Checks that fail in here are reported at the innermost line of the user's file (the
# `model(x)` call). tests/zoo_reference/ holds the plain-torch twin the oracle uses; keep the
# two in step.
import torch
import torch.nn as nn
import torch.nn.functional as F


def _make_divisible(v, divisor, min_value=None):
    # torchvision's, in integer arithmetic (every caller here passes an int `v`):
    # int(v + divisor / 2) is v + divisor // 2 for even divisors, new_v < 0.9 * v is 10 * new_v < 9 * v
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, (v + divisor // 2) // divisor * divisor)
    if 10 * new_v < 9 * v:
        new_v += divisor
    return new_v


def _conv_norm_act(in_channels, out_channels, kernel_size=3, stride=1, groups=1, activation_layer=nn.ReLU):
    # torchvision.ops.misc.Conv2dNormActivation (a Sequential): conv, BatchNorm2d, activation
    padding = (kernel_size - 1) // 2
    layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, groups=groups, bias=False), nn.BatchNorm2d(out_channels)]
    if activation_layer is not None:
        layers.append(activation_layer(inplace=True))
    return nn.Sequential(*layers)


# ----- resnet.py ------------------------------------------------------------------------


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        width = planes
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv3x3(width, width, stride)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = conv1x1(width, planes * 4)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv3(out)
        out = self.bn3(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride), nn.BatchNorm2d(planes * block.expansion))
        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def children(self):
        return iter([self.conv1, self.bn1, self.relu, self.maxpool, self.layer1, self.layer2, self.layer3, self.layer4, self.avgpool, self.fc])

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return x


def resnet18(num_classes=1000):
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes=num_classes)


def resnet34(num_classes=1000):
    return ResNet(BasicBlock, [3, 4, 6, 3], num_classes=num_classes)


def resnet50(num_classes=1000):
    return ResNet(Bottleneck, [3, 4, 6, 3], num_classes=num_classes)


def resnet101(num_classes=1000):
    return ResNet(Bottleneck, [3, 4, 23, 3], num_classes=num_classes)


def resnet152(num_classes=1000):
    return ResNet(Bottleneck, [3, 8, 36, 3], num_classes=num_classes)


# ----- vgg.py ---------------------------------------------------------------------------


class VGG(nn.Module):
    def __init__(self, features, num_classes=1000, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )

    def children(self):
        return iter([self.features, self.avgpool, self.classifier])

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def make_layers(cfg, batch_norm=False):
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            if batch_norm:
                layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            else:
                layers += [conv2d, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


cfgs = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def vgg11(num_classes=1000):
    return VGG(make_layers(cfgs["A"], False), num_classes=num_classes)


def vgg11_bn(num_classes=1000):
    return VGG(make_layers(cfgs["A"], True), num_classes=num_classes)


def vgg13(num_classes=1000):
    return VGG(make_layers(cfgs["B"], False), num_classes=num_classes)


def vgg13_bn(num_classes=1000):
    return VGG(make_layers(cfgs["B"], True), num_classes=num_classes)


def vgg16(num_classes=1000):
    return VGG(make_layers(cfgs["D"], False), num_classes=num_classes)


def vgg16_bn(num_classes=1000):
    return VGG(make_layers(cfgs["D"], True), num_classes=num_classes)


def vgg19(num_classes=1000):
    return VGG(make_layers(cfgs["E"], False), num_classes=num_classes)


def vgg19_bn(num_classes=1000):
    return VGG(make_layers(cfgs["E"], True), num_classes=num_classes)


# ----- alexnet.py -----------------------------------------------------------------------


class AlexNet(nn.Module):
    def __init__(self, num_classes=1000, dropout=0.5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def children(self):
        return iter([self.features, self.avgpool, self.classifier])

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def alexnet(num_classes=1000):
    return AlexNet(num_classes=num_classes)


# ----- mobilenetv2.py -------------------------------------------------------------------


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(_conv_norm_act(inp, hidden_dim, kernel_size=1, activation_layer=nn.ReLU6))
        layers.extend([_conv_norm_act(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, activation_layer=nn.ReLU6), nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, dropout=0.2):
        super().__init__()
        input_channel = 32
        self.last_channel = 1280
        inverted_residual_setting = [
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 3, 2],
            [6, 64, 4, 2],
            [6, 96, 3, 1],
            [6, 160, 3, 2],
            [6, 320, 1, 1],
        ]
        features = [_conv_norm_act(3, input_channel, stride=2, activation_layer=nn.ReLU6)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = c
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(InvertedResidual(input_channel, output_channel, stride, expand_ratio=t))
                input_channel = output_channel
        features.append(_conv_norm_act(input_channel, self.last_channel, kernel_size=1, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))

    def children(self):
        return iter([self.features, self.classifier])

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def mobilenet_v2(num_classes=1000):
    return MobileNetV2(num_classes=num_classes)


# ----- squeezenet.py --------------------------------------------------------------------


class Fire(nn.Module):
    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([self.expand1x1_activation(self.expand1x1(x)), self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, version="1_0", num_classes=1000, dropout=0.5):
        super().__init__()
        self.num_classes = num_classes
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(96, 16, 64, 64),
                Fire(128, 16, 64, 64),
                Fire(128, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 32, 128, 128),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(512, 64, 256, 256),
            )
        else:
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(64, 16, 64, 64),
                Fire(128, 16, 64, 64),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(128, 32, 128, 128),
                Fire(256, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256),
            )
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def children(self):
        return iter([self.features, self.classifier])

    def forward(self, x):
        x = self.features(x)
        x = self.classifier(x)
        return torch.flatten(x, 1)


def squeezenet1_0(num_classes=1000):
    return SqueezeNet("1_0", num_classes=num_classes)


def squeezenet1_1(num_classes=1000):
    return SqueezeNet("1_1", num_classes=num_classes)


# ----- densenet.py ----------------------------------------------------------------------


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features, growth_rate, bn_size):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)

    def forward(self, prev_features):
        concated_features = torch.cat(prev_features, 1)
        bottleneck_output = self.conv1(self.relu1(self.norm1(concated_features)))
        return self.conv2(self.relu2(self.norm2(bottleneck_output)))


class _DenseBlock(nn.Module):
    # torchvision's is a ModuleDict of "denselayerN"; the same layers, in order
    def __init__(self, num_layers, num_input_features, bn_size, growth_rate):
        super().__init__()
        self.layers = nn.ModuleList([_DenseLayer(num_input_features + i * growth_rate, growth_rate, bn_size) for i in range(num_layers)])

    def forward(self, init_features):
        features = [init_features]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


def _transition(num_input_features, num_output_features):
    return nn.Sequential(
        nn.BatchNorm2d(num_input_features),
        nn.ReLU(inplace=True),
        nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False),
        nn.AvgPool2d(kernel_size=2, stride=2),
    )


class DenseNet(nn.Module):
    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64, bn_size=4, num_classes=1000):
        super().__init__()
        layers = [
            nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(num_init_features),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
        ]
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            layers.append(_DenseBlock(num_layers, num_features, bn_size, growth_rate))
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                layers.append(_transition(num_features, num_features // 2))
                num_features = num_features // 2
        layers.append(nn.BatchNorm2d(num_features))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(num_features, num_classes)

    def children(self):
        return iter([self.features, self.classifier])

    def forward(self, x):
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        out = torch.flatten(out, 1)
        out = self.classifier(out)
        return out


def densenet121(num_classes=1000):
    return DenseNet(32, (6, 12, 24, 16), 64, num_classes=num_classes)


def densenet161(num_classes=1000):
    return DenseNet(48, (6, 12, 36, 24), 96, num_classes=num_classes)


def densenet169(num_classes=1000):
    return DenseNet(32, (6, 12, 32, 32), 64, num_classes=num_classes)


def densenet201(num_classes=1000):
    return DenseNet(32, (6, 12, 48, 32), 64, num_classes=num_classes)


# ----- torchvision.ops.misc.SqueezeExcitation ------------------------------------------------


class SqueezeExcitation(nn.Module):
    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, input):
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        scale = self.scale_activation(scale)
        return scale * input


# ----- mobilenetv3.py -------------------------------------------------------------------


class _V3Block(nn.Module):
    # InvertedResidual of mobilenetv3.py; cnf = (input, kernel, expanded, out, use_se, use_hs, stride)
    def __init__(self, cnf):
        super().__init__()
        inp, kernel, expanded, out, use_se, use_hs, stride = cnf
        self.use_res_connect = stride == 1 and inp == out
        activation_layer = nn.Hardswish if use_hs else nn.ReLU
        layers = []
        if expanded != inp:
            layers.append(_conv_norm_act(inp, expanded, kernel_size=1, activation_layer=activation_layer))
        layers.append(_conv_norm_act(expanded, expanded, kernel_size=kernel, stride=stride, groups=expanded, activation_layer=activation_layer))
        if use_se:
            layers.append(SqueezeExcitation(expanded, _make_divisible(expanded // 4, 8), scale_activation=nn.Hardsigmoid))
        layers.append(_conv_norm_act(expanded, out, kernel_size=1, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = out

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result += input
        return result


class MobileNetV3(nn.Module):
    def __init__(self, inverted_residual_setting, last_channel, num_classes=1000, dropout=0.2):
        super().__init__()
        layers = [_conv_norm_act(3, inverted_residual_setting[0][0], kernel_size=3, stride=2, activation_layer=nn.Hardswish)]
        for cnf in inverted_residual_setting:
            layers.append(_V3Block(cnf))
        lastconv_input_channels = inverted_residual_setting[-1][3]
        lastconv_output_channels = 6 * lastconv_input_channels
        layers.append(_conv_norm_act(lastconv_input_channels, lastconv_output_channels, kernel_size=1, activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(lastconv_output_channels, last_channel),
            nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True),
            nn.Linear(last_channel, num_classes),
        )

    def children(self):
        return iter([self.features, self.avgpool, self.classifier])

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def mobilenet_v3_large(num_classes=1000):
    setting = [
        (16, 3, 16, 16, False, False, 1),
        (16, 3, 64, 24, False, False, 2),
        (24, 3, 72, 24, False, False, 1),
        (24, 5, 72, 40, True, False, 2),
        (40, 5, 120, 40, True, False, 1),
        (40, 5, 120, 40, True, False, 1),
        (40, 3, 240, 80, False, True, 2),
        (80, 3, 200, 80, False, True, 1),
        (80, 3, 184, 80, False, True, 1),
        (80, 3, 184, 80, False, True, 1),
        (80, 3, 480, 112, True, True, 1),
        (112, 3, 672, 112, True, True, 1),
        (112, 5, 672, 160, True, True, 2),
        (160, 5, 960, 160, True, True, 1),
        (160, 5, 960, 160, True, True, 1),
    ]
    return MobileNetV3(setting, 1280, num_classes=num_classes)


def mobilenet_v3_small(num_classes=1000):
    setting = [
        (16, 3, 16, 16, True, False, 2),
        (16, 3, 72, 24, False, False, 2),
        (24, 3, 88, 24, False, False, 1),
        (24, 5, 96, 40, True, True, 2),
        (40, 5, 240, 40, True, True, 1),
        (40, 5, 240, 40, True, True, 1),
        (40, 5, 120, 48, True, True, 1),
        (48, 5, 144, 48, True, True, 1),
        (48, 5, 288, 96, True, True, 2),
        (96, 5, 576, 96, True, True, 1),
        (96, 5, 576, 96, True, True, 1),
    ]
    return MobileNetV3(setting, 1024, num_classes=num_classes)


# ----- efficientnet.py ------------------------------------------------------------------


class MBConv(nn.Module):
    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels):
        super().__init__()
        self.use_res_connect = stride == 1 and input_channels == out_channels
        expanded_channels = _make_divisible(input_channels * expand_ratio, 8)
        layers = []
        if expanded_channels != input_channels:
            layers.append(_conv_norm_act(input_channels, expanded_channels, kernel_size=1, activation_layer=nn.SiLU))
        layers.append(_conv_norm_act(expanded_channels, expanded_channels, kernel_size=kernel, stride=stride, groups=expanded_channels, activation_layer=nn.SiLU))
        squeeze_channels = max(1, input_channels // 4)
        layers.append(SqueezeExcitation(expanded_channels, squeeze_channels, activation=nn.SiLU))
        layers.append(_conv_norm_act(expanded_channels, out_channels, kernel_size=1, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = out_channels

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            # stochastic depth keeps the shape
            result += input
        return result


class EfficientNet(nn.Module):
    def __init__(self, inverted_residual_setting, dropout, num_classes=1000):
        super().__init__()
        layers = [_conv_norm_act(3, inverted_residual_setting[0][3], kernel_size=3, stride=2, activation_layer=nn.SiLU)]
        for expand_ratio, kernel, stride, input_channels, out_channels, num_layers in inverted_residual_setting:
            stage = []
            for i in range(num_layers):
                if i == 0:
                    stage.append(MBConv(expand_ratio, kernel, stride, input_channels, out_channels))
                else:
                    stage.append(MBConv(expand_ratio, kernel, 1, out_channels, out_channels))
            layers.append(nn.Sequential(*stage))
        lastconv_input_channels = inverted_residual_setting[-1][4]
        lastconv_output_channels = 4 * lastconv_input_channels
        layers.append(_conv_norm_act(lastconv_input_channels, lastconv_output_channels, kernel_size=1, activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(lastconv_output_channels, num_classes))

    def children(self):
        return iter([self.features, self.avgpool, self.classifier])

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def efficientnet_b0(num_classes=1000):
    setting = [
        (1, 3, 1, 32, 16, 1),
        (6, 3, 2, 16, 24, 2),
        (6, 5, 2, 24, 40, 2),
        (6, 3, 2, 40, 80, 3),
        (6, 5, 1, 80, 112, 3),
        (6, 5, 2, 112, 192, 4),
        (6, 3, 1, 192, 320, 1),
    ]
    return EfficientNet(setting, 0.2, num_classes=num_classes)
