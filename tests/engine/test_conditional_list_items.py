"""A loop over a list of per-layer lists whose item is chosen by a condition (`FeedForward(dim) if not
use_pkm else PKM(dim)`, product-key-memory 0.3.0 `transformer.py` `Transformer`): `for attn, ff in
self.layers` reads `ff` as each make; when exactly one is a Sequential with its items (a same-file
helper's), its layers run at the forward's call on the paths that build it
(`canonical.normalise._item_ctor`, `engine.bindings.BindingIndex.resolve_ctor`), and the site is reported
there. Counter-examples: two different Sequentials to choose from, and a plain loop over a list of
different layers, stay unread as before."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nfrom torch import nn\n\n\n"

CODE = '''
def FeedForward(dim, mult = 4):
    return nn.Sequential(
        nn.LayerNorm(dim),
        nn.Linear(dim, dim * mult),
        nn.GELU(),
        nn.Linear(dim * mult, dim)
    )


class PKM(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.values = nn.EmbeddingBag(16, dim, mode = 'sum')

    def forward(self, x):
        return x


class Transformer(nn.Module):
    def __init__(self, *, dim, depth, pkm_layers = (2,)):
        super().__init__()
        self.layers = nn.ModuleList([])
        for ind in range(depth):
            use_pkm = ind + 1 in pkm_layers
            self.layers.append(nn.ModuleList([
                nn.Identity(),
                FeedForward(dim) if not use_pkm else PKM(dim)
            ]))

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return x
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def sites(code: str, family: int = 6) -> list[tuple[str, int]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings
    return sorted((f.scope_name, f.span.start_line) for f in found if f.family == family)


def test_the_one_sequential_among_the_choices_runs_at_the_call() -> None:
    assert sites(CODE) == [("Transformer", line(CODE, "x = ff(x) + x"))]


def test_two_sequentials_to_choose_from_are_not_read_at_the_call() -> None:
    code = CODE.replace("PKM(dim)\n            ]))", "nn.Sequential(nn.Linear(dim, dim), nn.ReLU())\n            ]))")
    assert ("Transformer", line(code, "x = ff(x) + x")) not in sites(code)


def test_a_loop_over_a_list_of_different_layers_is_not_one_constructor() -> None:
    code = CODE.replace(
        "            self.layers.append(nn.ModuleList([\n                nn.Identity(),\n"
        "                FeedForward(dim) if not use_pkm else PKM(dim)\n            ]))\n",
        "            self.layers.append(nn.Linear(dim, dim) if not use_pkm else nn.GELU())\n",
    ).replace("        for attn, ff in self.layers:\n            x = attn(x) + x\n            x = ff(x) + x\n",
              "        for layer in self.layers:\n            x = layer(x)\n")
    assert [s for s in sites(code) if s[0] == "Transformer"] == []  # the unused helper's chain is its own
