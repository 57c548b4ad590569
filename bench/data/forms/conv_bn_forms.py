# ruff: noqa
# Forms of family 7 sites written for bench/forms.py (mech2); `# site: N` marks the line a labeller would mark.
import torch
from torch import nn
import torch.nn.functional as F


# A: Sequential subclass assembled with super().__init__(conv, bn, act)
class ConvBNAct(nn.Sequential):
    def __init__(self, c_in, c_out, k=3, s=1):
        super().__init__(
            nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False),  # site: 7
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=True),
        )


# B: Sequential subclass with named-step variables
class ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1, norm_layer=None):
        padding = (kernel_size - 1) // 2
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias=False),  # site: 7
            norm_layer(out_planes),
            nn.ReLU6(inplace=True),
        )


# C: builder helper returning nn.Sequential(conv, bn) assigned in __init__
def conv_bn(inp, oup, stride):
    return nn.Sequential(
        nn.Conv2d(inp, oup, 3, stride, 1, bias=False),  # site: 7
        nn.BatchNorm2d(oup),
        nn.ReLU6(inplace=True),
    )


# D: norm_layer ctor parameter defaulting to nn.BatchNorm2d
class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = norm_layer(planes)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))  # site: 7
        out = self.bn2(self.conv2(out))  # site: 7
        return self.relu(out + x)


# E: conv subclass adding padding only
class Conv2dSame(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, bias=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, 0, bias=bias)

    def forward(self, x):
        ih, iw = x.shape[-2:]
        pad_h = max((-(ih // -self.stride[0]) - 1) * self.stride[0] + self.kernel_size[0] - ih, 0)
        pad_w = max((-(iw // -self.stride[1]) - 1) * self.stride[1] + self.kernel_size[1] - iw, 0)
        x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = Conv2dSame(3, c, 3, 2, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return self.bn(self.conv(x))  # site: 7


# F: ModuleList of layers
class Stack(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(c, c, 3, padding=1) for _ in range(n)])
        self.bns = nn.ModuleList([nn.BatchNorm2d(c) for _ in range(n)])

    def forward(self, x):
        for conv, bn in zip(self.convs, self.bns):
            x = F.relu(bn(conv(x)))  # site: 7
        return x


# G: ModuleDict
class Branches(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.ModuleDict({"conv": nn.Conv2d(c, c, 1), "bn": nn.BatchNorm2d(c)})

    def forward(self, x):
        return self.layers["bn"](self.layers["conv"](x))  # site: 7


# H: ConvBN module subclass of nn.Module with conv/bn attributes, built by a helper
class ConvBN(nn.Module):
    def __init__(self, c_in, c_out, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x):
        return self.bn(self.conv(x))  # site: 7


# I: Sequential built in __init__ with layers appended to a list
class Downsample(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        layers = [nn.Conv2d(c_in, c_out, 1, 2, bias=False), nn.BatchNorm2d(c_out)]  # site: 7
        self.down = nn.Sequential(*layers)

    def forward(self, x):
        return self.down(x)


# J: nn.Sequential in __init__ with OrderedDict
from collections import OrderedDict


class Transition(nn.Sequential):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.add_module("conv", nn.Conv2d(c_in, c_out, 1, bias=False))  # site: 7
        self.add_module("norm", nn.BatchNorm2d(c_out))
        self.add_module("relu", nn.ReLU(inplace=True))


class Block2(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(
            OrderedDict(
                [
                    ("conv", nn.Conv2d(c, c, 3, padding=1, bias=False)),  # site: 7
                    ("bn", nn.BatchNorm2d(c)),
                    ("act", nn.SiLU()),
                ]
            )
        )

    def forward(self, x):
        return self.body(x)


# L: conv1d and conv3d with BN
class TCNBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm1d(c)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


# M: builder helper used in __init__ assignment: self.stem = conv_bn(...)
class MobileNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 32, 2)
        self.block = ConvBNAct(32, 64)

    def forward(self, x):
        return self.block(self.stem(x))
