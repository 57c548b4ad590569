# ruff: noqa
# Family 7 sites whose norm is a BatchNorm that activates after normalising (mech72,
# analysis/crossfile/norm_act.py): in-place-ABN's `ABN` (F.batch_norm then F.leaky_relu_), timm's
# `BatchNormAct2d` (super().forward then pointwise children). `# site: N` marks the line a labeller would mark.
# The last two blocks are look-alikes: no site.
from collections import OrderedDict

import torch.nn.functional as F
from torch import nn


# A: in-place-ABN / gluoncv-torch: the class default of a block, also inside an OrderedDict Sequential
class ABN(nn.BatchNorm2d):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, slope=0.01):
        super(ABN, self).__init__(num_features, eps=eps, momentum=momentum)
        self.slope = slope

    def forward(self, x):
        y = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                         self.training or not self.track_running_stats, self.momentum, self.eps)
        return F.leaky_relu_(y, self.slope)


class BottleneckBlock(nn.Module):
    def __init__(self, c_in, c_mid, norm_act=ABN):
        super().__init__()
        self.bn1 = norm_act(c_in)
        self.convs = nn.Sequential(OrderedDict([
            ("conv1", nn.Conv2d(c_in, c_mid, 1, bias=False)),  # site: 7
            ("bn2", norm_act(c_mid)),
            ("conv2", nn.Conv2d(c_mid, c_in, 3, padding=1, bias=False)),
        ]))

    def forward(self, x):
        return x + self.convs(self.bn1(x))


# B: timm-style: BatchNorm's forward, then a dropout and an activation child
class BatchNormAct2d(nn.BatchNorm2d):
    def __init__(self, num_features, apply_act=True, act_layer=nn.ReLU, drop_layer=None):
        super().__init__(num_features)
        self.drop = drop_layer() if drop_layer is not None else nn.Identity()
        self.act = act_layer(inplace=True) if apply_act else nn.Identity()

    def forward(self, x):
        x = super().forward(x)
        x = self.drop(x)
        x = self.act(x)
        return x


class ConvNormAct(nn.Module):
    def __init__(self, c_in, c_out, norm_layer=BatchNormAct2d):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = norm_layer(c_out)

    def forward(self, x):
        x = self.conv(x)  # site: 7
        x = self.bn(x)
        return x


# look-alike: the norm adds its input back (a residual after the norm)
class ResidualBN(nn.BatchNorm2d):
    def forward(self, x):
        y = super().forward(x)
        return F.relu(y + x)


class ResidualNormBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = ResidualBN(c)

    def forward(self, x):
        return self.bn(self.conv(x))


# look-alike: a GroupNorm that activates (no BatchNorm)
class GroupNormAct(nn.GroupNorm):
    def __init__(self, c, groups=8):
        super().__init__(groups, c)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(super().forward(x))


class GroupNormBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm = GroupNormAct(c)

    def forward(self, x):
        return self.norm(self.conv(x))
