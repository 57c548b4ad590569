# ruff: noqa
# Forms of family 7 sites written for bench/forms.py (mech2); `# site: N` marks the line a labeller would mark.
from torch import nn
import torch.nn.functional as F


class StdConv2d(nn.Conv2d):
    def __init__(self, *args, eps=1e-6, **kwargs):
        super().__init__(*args, **kwargs)
        self.eps = eps


class Conv2dSame(nn.Conv2d):
    def forward(self, x):
        x = F.pad(x, [1, 1, 1, 1])
        return self._conv_forward(x, self.weight, self.bias)


class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = StdConv2d(3, c, 3, 2, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.conv2 = Conv2dSame(c, c, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        x = self.bn(self.conv(x))  # site: 7
        return self.bn2(self.conv2(x))  # site: 7
