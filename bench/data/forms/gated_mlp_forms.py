# ruff: noqa
# Forms of family 14 (gated MLP) written for bench/forms.py (mech3); the site mark is on the first projection call.
import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN


class GEGLU(nn.Module):
    """lucidrains / ldm GEGLU: the projection inside the activation class."""

    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)  # site: 14
        return x * F.gelu(gate)


class SwiGLUChunk(nn.Module):
    """Gate first, value second; the activation on the first half."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.w12 = nn.Linear(dim, 2 * hidden, bias=False)
        self.w3 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        x1, x2 = self.w12(x).chunk(2, dim=-1)  # site: 14
        hidden = F.silu(x1) * x2
        return self.w3(hidden)


class SwiGLUValueFirst(nn.Module):
    """The value times the activated gate, value on the left."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.proj_in = nn.Linear(dim, hidden * 2)
        self.proj_out = nn.Linear(hidden, dim)

    def forward(self, x):
        a, b = self.proj_in(x).chunk(2, dim=-1)  # site: 14
        return self.proj_out(b * F.silu(a))


class SplitGLU(nn.Module):
    """torch.chunk as a function and split with a list of sizes."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.hidden = hidden
        self.fc = nn.Linear(dim, 2 * hidden)
        self.out = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.fc(x)  # site: 14
        u, v = torch.chunk(h, 2, dim=-1)
        y = F.gelu(u) * v
        return self.out(y)


class LlamaMLP(nn.Module):
    """Separate gate and up projections (Llama / Mistral), activation a bound nn.SiLU."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))  # site: 14


class MixtralExpert(nn.Module):
    """Up projection first in source order, activation chosen by a parameter default."""

    def __init__(self, dim, hidden, act_layer=nn.SiLU):
        super().__init__()
        self.up = nn.Linear(dim, hidden, bias=False)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        self.act = act_layer()

    def forward(self, x):
        up = self.up(x)  # site: 14
        gate = self.act(self.gate(x))
        return self.down(up * gate)


class GluMlp(nn.Module):
    """timm GluMlp: one fc1, chunked along the last axis, act_layer=nn.Sigmoid default but GELU given."""

    def __init__(self, in_features, hidden_features, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features * 2)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        x = self.fc1(x)  # site: 14
        x1, x2 = x.chunk(2, dim=-1)
        x = x1 * self.act(x2)
        x = self.drop1(x)
        return self.fc2(x)


class FeedForward(nn.Module):
    """ldm FeedForward: GEGLU as the first child of a Sequential; the site is GEGLU's own (above)."""

    def __init__(self, dim, mult=4, dropout=0.0):
        super().__init__()
        inner_dim = int(dim * mult)
        self.net = nn.Sequential(GEGLU(dim, inner_dim), nn.Dropout(dropout), nn.Linear(inner_dim, dim))

    def forward(self, x):
        return self.net(x)


class GLUActivation(nn.Module):
    """A stateless GEGLU on its input (the projection in the caller): x-transformers' GLU with act."""

    def forward(self, x):
        x, gates = x.chunk(2, dim=-1)
        return F.gelu(gates) * x


class Block(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.proj = nn.Linear(dim, hidden * 2)
        self.glu = GLUActivation()
        self.out = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.out(self.glu(self.proj(x)))  # site: 14


class SiluGateModule(nn.Module):
    """nn.SiLU bound in __init__, halves by split with the hidden size."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.hidden = hidden
        self.in_proj = nn.Linear(dim, 2 * hidden)
        self.act = nn.SiLU()
        self.out_proj = nn.Linear(hidden, dim)

    def forward(self, x):
        x, z = self.in_proj(x).split([self.hidden, self.hidden], dim=-1)  # site: 14
        return self.out_proj(x * self.act(z))


class NotGated(nn.Module):
    """Not a site: the halves are added, and a ReLU gate is not SiLU/GELU."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim * 2)

    def forward(self, x):
        a, b = self.proj(x).chunk(2, dim=-1)
        return a * F.relu(b)


class TorchtuneFeedForward(nn.Module):
    """torchtune: the activation an instance passed in (default nn.SiLU()), the up projection optional."""

    def __init__(self, dim, hidden_dim, activation: nn.Module = nn.SiLU()):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)
        self.activation = activation

    def forward(self, x):
        h = self.activation(self.w1(x))  # site: 14
        if self.w3 is not None:
            h = h * self.w3(x)
        return self.w2(h)


class TimmSwiGLU(nn.Module):
    """timm SwiGLU: gate and value projections, the gate's activation from act_layer=nn.SiLU."""

    def __init__(self, in_features, hidden_features, act_layer=nn.SiLU, drop=0.0):
        super().__init__()
        self.fc1_g = nn.Linear(in_features, hidden_features)
        self.fc1_x = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        x_gate = self.fc1_g(x)  # site: 14
        x = self.fc1_x(x)
        x = self.act(x_gate) * x
        x = self.drop1(x)
        return self.fc2(x)


class Phi3StyleMLP(nn.Module):
    """One gate_up projection, gate first, the activation from a table bound in __init__."""

    def __init__(self, config):
        super().__init__()
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.activation_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        up_states = self.gate_up_proj(hidden_states)  # site: 14
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * self.activation_fn(gate)
        return self.down_proj(up_states)


class PositionalChunkDim(nn.Module):
    """chunk with a positional axis."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.proj = nn.Linear(dim, hidden * 2)
        self.out = nn.Linear(hidden, dim)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, -1)  # site: 14
        return self.out(x * F.silu(gate))
