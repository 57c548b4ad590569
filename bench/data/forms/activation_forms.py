# ruff: noqa
# Forms of family 6 (Linear → GELU) and 5 (dropout → add → LayerNorm) written for bench/forms.py (mech3),
# with activations chosen through parameters, dicts and getattr; `# site: N` marks the Linear / dropout call.
import torch
import torch.nn.functional as F
from torch import nn


class Mlp(nn.Module):
    """timm Mlp: act_layer=nn.GELU default."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)  # site: 6
        x = self.act(x)
        x = self.drop1(x)
        x = self.fc2(x)
        return self.drop2(x)


ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU}


class DictActivationMLP(nn.Module):
    """Activation class from a module-level dict, keyed by a parameter whose default is "gelu"."""

    def __init__(self, dim, hidden, activation="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = ACTIVATIONS[activation]()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))  # site: 6


class GetattrActivationMLP(nn.Module):
    """Activation function looked up on torch.nn.functional by name (default "gelu")."""

    def __init__(self, dim, hidden, activation="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.activation = getattr(F, activation)

    def forward(self, x):
        x = self.activation(self.fc1(x))  # site: 6
        return self.fc2(x)


def _get_activation_fn(activation):
    """torch.nn.Transformer / DETR helper."""
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}.")


class TransformerEncoderLayer(nn.Module):
    """DETR / torch.nn.TransformerEncoderLayer post-norm: dropout → add → LayerNorm twice."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="gelu"):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.activation = _get_activation_fn(activation)

    def forward(self, src):
        src2 = self.self_attn(src, src, src)[0]
        src = src + self.dropout1(src2)  # site: 5
        src = self.norm1(src)
        src2 = self.linear2(self.dropout(self.activation(self.linear1(src))))  # site: 6
        src = src + self.dropout2(src2)  # site: 5
        src = self.norm2(src)
        return src


class PostNormBlock(nn.Module):
    """Nested: norm(x + dropout(sublayer(x))) in one statement (annotated transformer's SublayerConnection)."""

    def __init__(self, size, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(size)
        self.dropout = nn.Dropout(dropout)
        self.ff = nn.Linear(size, size)

    def forward(self, x):
        return self.norm(x + self.dropout(self.ff(x)))  # site: 5


class FunctionalDropoutBlock(nn.Module):
    """F.dropout with the module's rate, then the residual add and LayerNorm."""

    def __init__(self, dim, dropout=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.dropout = dropout
        self.layer_norm = nn.LayerNorm(dim)

    def forward(self, x):
        residual = x
        x = self.fc(x)
        x = F.dropout(x, p=self.dropout, training=self.training)  # site: 5
        x = residual + x
        x = self.layer_norm(x)
        return x


class ConfigChosenAct(nn.Module):
    """Activation picked with a conditional on a string: GELU on one path."""

    def __init__(self, dim, hidden, act="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU() if act == "gelu" else nn.ReLU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))  # site: 6


class ReluDictMLP(nn.Module):
    """Not a site: the dict default is relu."""

    def __init__(self, dim, hidden, activation="relu"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = ACTIVATIONS[activation]()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class ReluDefault(nn.Module):
    """Not a site: act_layer=nn.ReLU default."""

    def __init__(self, dim, act_layer=nn.ReLU):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.act = act_layer()

    def forward(self, x):
        return self.act(self.fc1(x))


class FairseqStyleLayer(nn.Module):
    """fairseq's post-norm layer: the residual add in a method, LayerNorm after."""

    def __init__(self, embed_dim, ffn_dim, dropout=0.1):
        super().__init__()
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)
        self.dropout_module = nn.Dropout(dropout)
        self.final_layer_norm = nn.LayerNorm(embed_dim)

    def residual_connection(self, x, residual):
        return residual + x

    def forward(self, x):
        residual = x
        x = F.gelu(self.fc1(x))  # site: 6
        x = self.fc2(x)
        x = self.dropout_module(x)  # site: 5
        x = self.residual_connection(x, residual)
        x = self.final_layer_norm(x)
        return x


class IndexedNormsLayer(nn.Module):
    """Norms and dropouts held in ModuleLists, indexed by a literal."""

    def __init__(self, dim, dropout=0.1):
        super().__init__()
        self.ff = nn.Linear(dim, dim)
        self.norms = nn.ModuleList([nn.LayerNorm(dim) for _ in range(2)])
        self.dropouts = nn.ModuleList([nn.Dropout(dropout) for _ in range(2)])

    def forward(self, x):
        x = self.norms[0](x + self.dropouts[0](self.ff(x)))  # site: 5
        return x


class NormLayerParam(nn.Module):
    """norm_layer=nn.LayerNorm default, dropout bound under the attribute `drop`."""

    def __init__(self, dim, norm_layer=nn.LayerNorm, drop=0.0):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(drop)
        self.norm = norm_layer(dim)

    def forward(self, x, residual):
        x = self.drop(self.proj(x))  # site: 5
        return self.norm(residual + x)


class InstanceActivationMLP(nn.Module):
    """An activation instance as a parameter default (torchtune style), GELU."""

    def __init__(self, dim, hidden, activation: nn.Module = nn.GELU()):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden)
        self.w2 = nn.Linear(hidden, dim)
        self.activation = activation

    def forward(self, x):
        return self.w2(self.activation(self.w1(x)))  # site: 6


class ApproxGeluSequential(nn.Module):
    """A Sequential with nn.GELU(approximate="tanh")."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden),  # site: 6
            nn.GELU(approximate="tanh"),
            nn.Linear(hidden, dim),
        )

    def forward(self, x):
        return self.net(x)


class TorchEncoderLayer(nn.Module):
    """torch.nn.TransformerEncoderLayer's structure: dropout at the end of the block methods, norm after the add."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.activation = F.gelu

    def forward(self, src):
        # (torch's `norm_first` branch is left out: its `x + self._sa_block(...)` feeds norm2 on the next
        # line, a second site on the same dropout line, which a `# site` mark cannot say.)
        x = src
        x = self.norm1(x + self._sa_block(x))
        x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x):
        x = self.self_attn(x, x, x, need_weights=False)[0]
        return self.dropout1(x)  # site: 5

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))  # site: 6
        return self.dropout2(x)  # site: 5


class LucidrainsFeedForward(nn.Module):
    """A Sequential feed-forward: Linear, GELU, Dropout, Linear."""

    def __init__(self, dim, mult=4, dropout=0.0):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, dim * mult),  # site: 6
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(dim * mult, dim),
        )

    def forward(self, x):
        return self.net(x)


class OptionalActMlp(nn.Module):
    """act_layer default nn.GELU, replaced by Identity when None."""

    def __init__(self, dim, hidden, act_layer=nn.GELU):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = act_layer() if act_layer is not None else nn.Identity()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))  # site: 6


class Fp32LayerNorm(nn.LayerNorm):
    """whisper / CLIP: LayerNorm computed in float32, cast back."""

    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class CastNormBlock(nn.Module):
    """dropout → add → a same-file LayerNorm subclass; dropout built as Identity when p is 0."""

    def __init__(self, dim, p=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.drop = nn.Dropout(p) if p > 0.0 else nn.Identity()
        self.ln = Fp32LayerNorm(dim)

    def forward(self, x):
        y = self.drop(self.fc(x))  # site: 5
        return self.ln(x + y)
