"""Which rules still match in a module-level helper that nothing in its file names.

A module-level function of a file that defines `nn.Module` classes, named nowhere in that file (and, where the
package can be read, imported by none of its other files), is not part of any forward there
(`Forward.referenced`): a softmax in such a helper (transformers 4.35 GPT-BigCode's `masked_softmax`, which
nothing calls) is not a site, and only rules about functions themselves (an optimizer built in a training
script's function) match in it.

A rotary helper is the exception. Rotary code is written as a table module beside a function that applies it
(`class RotaryEmbedding(nn.Module)` and `def apply_rotary_pos_emb(q, k, sinu_pos)` in one `rotary.py`), and the
attention that applies the function lives in another file or package: timesformer-pytorch 0.4.1
`timesformer_pytorch/rotary.py:13` (applied from `timesformer_pytorch.py:125`), local-attention 1.11.2
`local_attention/rotary.py:56`, diffusers 0.31.0 `models/embeddings.py:697` `apply_rotary_emb`, sam2 1.1.0
`sam2/modeling/position_encoding.py:212` `apply_rotary_enc`. Family 15 is counted in the helper's own file, once,
wherever it is called from (`bench/data/dev2/LABELLING.md`, timesformer-pytorch: the helper is labelled at 17, its
call a not-site; imported rotary helpers are not sites of the files that call them), so whether the helper's
file names it does not decide the site. When the file is read alone (a file analysed from its text, outside its
package: the benchmark harness, a file copied out of its package) the call is out of sight; the rotation written
in the helper is still the site. The family's rules guard what they match (`rotary_tables`: the factors must be
cosine/sine tables), so what they find in a helper is a rotation by position wherever it is called from.
"""

from __future__ import annotations

from adopter.dsl.types import Rule
from adopter.engine.applications import ROTARY_FAMILY


def matches_unnamed_helpers(rule: Rule) -> bool:
    """Whether `rule` (in canonical form) matches in a module-level helper its file never names."""
    return rule.scope == "function" or rule.family == ROTARY_FAMILY
