# ruff: noqa
# Forms of family 7 sites written for bench/forms.py (mech58): a builder that fills a list in a loop whose
# body branches on the configuration (VGG's `if v == "M"`), then runs it as `nn.Sequential(*layers)`;
# `# site: N` marks the line a labeller would mark.
from torch import nn

CFG = [64, "M", 128, "M", 256, 256, "M"]


class VGGFeatures(nn.Module):
    def __init__(self, cfg=CFG):
        super().__init__()
        self.features = self._make_layers(cfg)

    def forward(self, x):
        return self.features(x)

    def _make_layers(self, cfg):
        layers = []
        in_channels = 3
        for v in cfg:
            if v == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [nn.Conv2d(in_channels, v, kernel_size=3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]  # site: 7
                in_channels = v
        return nn.Sequential(*layers)


def make_stages(widths, kinds):
    layers = []
    c_in = 3
    for w, kind in zip(widths, kinds):
        if kind == "pool":
            layers.append(nn.AvgPool2d(2))
        elif kind == "bottleneck":
            layers.append(nn.Conv2d(c_in, w, 1, bias=False))  # site: 7
            layers.append(nn.BatchNorm2d(w))
            layers.append(nn.ReLU(inplace=True))
            c_in = w
        else:
            layers.append(nn.Conv2d(c_in, w, 3, padding=1, bias=False))  # site: 7
            layers.append(nn.BatchNorm2d(w))
            c_in = w
    return nn.Sequential(*layers)
