# ruff: noqa
# Forms of family 7 sites written for bench/forms.py (mech2); `# site: N` marks the line a labeller would mark.
from torch import nn


def conv1x1(i, o, stride=1):
    return nn.Conv2d(i, o, 1, stride, bias=False)


class ResNet(nn.Module):
    def __init__(self, block, layers, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.layer1 = self._make_layer(block, 64, layers[0])

    def _make_layer(self, block, planes, blocks, stride=1):
        norm_layer = self._norm_layer
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes, stride),  # site: 7
                norm_layer(planes),
            )
        layers = [block(self.inplanes, planes, stride, downsample, norm_layer=norm_layer)]
        return nn.Sequential(*layers)


class Stages(nn.Module):
    def __init__(self, chans):
        super().__init__()
        self.stages = nn.ModuleList()
        for c_in, c_out in zip(chans[:-1], chans[1:]):
            self.stages.append(nn.Sequential(
                nn.Conv2d(c_in, c_out, 3, 2, 1, bias=False),  # site: 7
                nn.BatchNorm2d(c_out),
                nn.ReLU(inplace=True),
            ))

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


class Head(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)) for _ in range(n)])  # site: 7

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x
