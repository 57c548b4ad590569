# ruff: noqa
# Forms of families 14 and 6 over Linear-like projection modules (mech73): a module of the file wrapping one
# nn.Linear with elementwise work around it (clamps as in transformers' / timm's Gemma 4; an adapter's scale and
# bias as in litgpt's adapter v2). The site mark is on the first projection call.
import torch
import torch.nn.functional as F
from torch import nn


class ClampedLinear(nn.Module):
    """Optional clamps of the input and the output around one nn.Linear."""

    def __init__(self, in_features, out_features, clip=False):
        super().__init__()
        self.clip = clip
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.register_buffer("lo", torch.tensor(-float("inf")))
        self.register_buffer("hi", torch.tensor(float("inf")))

    def forward(self, x):
        if self.clip:
            x = torch.clamp(x, self.lo, self.hi)
        x = self.linear(x)
        if self.clip:
            x = x.clamp(self.lo, self.hi)
        return x


class AdapterLinear(nn.Module):
    """A frozen Linear with a learned scale and bias after it."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.adapter_bias = nn.Parameter(torch.zeros(out_features))
        self.adapter_scale = nn.Parameter(torch.ones(out_features))

    def forward(self, x):
        return self.adapter_scale * (self.linear(x) + self.adapter_bias)


class ClampedSwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = ClampedLinear(dim, hidden)
        self.up_proj = ClampedLinear(dim, hidden)
        self.down_proj = ClampedLinear(hidden, dim)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # site: 14


class AdapterSwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc_1 = AdapterLinear(dim, hidden, bias=False)
        self.fc_2 = AdapterLinear(dim, hidden, bias=False)
        self.proj = AdapterLinear(hidden, dim, bias=False)

    def forward(self, x):
        x_fc_1 = self.fc_1(x)  # site: 14
        x_fc_2 = self.fc_2(x)
        x = F.silu(x_fc_1) * x_fc_2
        return self.proj(x)


class AdapterGeluMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc = AdapterLinear(dim, hidden)
        self.proj = AdapterLinear(hidden, dim)

    def forward(self, x):
        x = self.fc(x)  # site: 6
        x = F.gelu(x)
        return self.proj(x)
