# ruff: noqa
# Family 7 sites whose norm class a caller in the same file supplies (mech64, analysis/chains/caller_layers.py);
# `# site: N` marks the line a labeller would mark. The last two blocks are look-alikes: no site.
from functools import partial

from torch import nn


# A: ResNet port: the block's `norm_layer=None` has no fallback; ResNet passes its default through
# `_make_layer`, the block reaching it as the class-valued `block` from a factory's splat call
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample

    def forward(self, x):
        residual = x
        out = self.conv1(x)  # site: 7
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)  # site: 7
        out = self.bn2(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        return self.relu(out + residual)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, norm_layer=nn.BatchNorm2d):
        super(ResNet, self).__init__()
        self.inplanes = 64
        self.layer1 = self._make_layer(block, 64, layers[0], norm_layer=norm_layer)
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, norm_layer=norm_layer)
        self.fc = nn.Linear(128, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1, norm_layer=None):
        layers = [block(self.inplanes, planes, stride, norm_layer=norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        return self.fc(self.layer2(self.layer1(x)).mean((2, 3)))


def resnet18(**kwargs):
    return ResNet(BasicBlock, [2, 2], **kwargs)


# B: segmentation head whose required norm_layer the model passes from its own default
class FCNHead(nn.Module):
    def __init__(self, in_channels, out_channels, norm_layer):
        super(FCNHead, self).__init__()
        inter = in_channels // 4
        self.conv5 = nn.Sequential(
            nn.Conv2d(in_channels, inter, 3, padding=1, bias=False),  # site: 7
            norm_layer(inter),
            nn.ReLU(),
            nn.Conv2d(inter, out_channels, 1),
        )

    def forward(self, x):
        return self.conv5(x)


class Segmenter(nn.Module):
    def __init__(self, nclass, norm_layer=partial(nn.BatchNorm2d, momentum=0.01)):
        super().__init__()
        self.head = FCNHead(2048, nclass, norm_layer)

    def forward(self, x):
        return self.head(x)


# not a site: one construction passes nn.Identity, the other a BatchNorm
class ConvNormA(nn.Module):
    def __init__(self, c, norm_layer):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm = norm_layer(c)

    def forward(self, x):
        return self.norm(self.conv(x))


class TwoKinds(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ConvNormA(8, nn.BatchNorm2d)
        self.b = ConvNormA(8, nn.Identity)

    def forward(self, x):
        return self.b(self.a(x))


# not a site: the norm is another file's choice (nothing here constructs the block)
class ConvNormB(nn.Module):
    def __init__(self, c, norm_layer=None):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm = norm_layer(c)

    def forward(self, x):
        return self.norm(self.conv(x))
