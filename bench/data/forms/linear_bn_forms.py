# ruff: noqa
# Forms of family 8 sites written for bench/forms.py (mech2); `# site: N` marks the line a labeller would mark.
from torch import nn


class MLP(nn.Module):
    def __init__(self, dims, dropout=0.1):
        super().__init__()
        layers = []
        for d_in, d_out in zip(dims[:-1], dims[1:]):
            layers.append(nn.Linear(d_in, d_out))  # site: 8
            layers.append(nn.BatchNorm1d(d_out))
            layers.append(nn.ReLU())
            layers.append(nn.Dropout(dropout))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class MLP2(nn.Module):
    def __init__(self, dims):
        super().__init__()
        layers = []
        for d_in, d_out in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(d_in, d_out), nn.BatchNorm1d(d_out), nn.ReLU()]  # site: 8
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class Proj(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.bn1 = nn.BatchNorm1d(h)
        self.fc2 = nn.Linear(h, d)

    def forward(self, x):
        x = self.fc1(x)  # site: 8
        x = self.bn1(x)
        x = nn.functional.relu(x)
        return self.fc2(x)


class Blocks(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.BatchNorm1d(d), nn.ReLU()) for _ in range(n)])  # site: 8

    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        return x


def mlp_block(d_in, d_out):
    return nn.Sequential(nn.Linear(d_in, d_out), nn.BatchNorm1d(d_out), nn.ReLU())  # site: 8
