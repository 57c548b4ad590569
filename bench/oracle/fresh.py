"""The fresh slice of the recall oracle: distributions nobody has opened, measured once per stop, aggregates only.

Chosen on 2026-12-05 (helper `fresh1`, issue 20) by domain and by popularity (the best-known PyPI distribution of
PyTorch model code in each domain that the author remembered), before any of their code was opened: never by a
form the checker is known to handle or miss. Constraints of the choice: the name's first letter is n-z or a digit
(a labeller picks a-m at the same time); none is in `bench/oracle/packages.py`, the MANIFEST of
`bench/realworld_corpus.py`, `bench/dev2_corpus.py` or `bench/heldout_corpus.py` (names only), nor `transformers`;
pure-Python wheels that install beside the project's torch (CPU), so none that needs a CUDA or C++ build
(`ptlflow`, `torchdrug`, `pufferlib`, `selene-sdk` were passed over for that). Versions are the ones pip resolved
beside the project's torch on the day of the first run (`bench/oracle_fresh.py run`), pinned here so later stops
measure the same code.
"""

from __future__ import annotations

FRESH: dict[str, tuple[str, ...]] = {
    "vision": ("pytorch-toolbelt", "super-image", "self-attention-cv", "torchdistill"),
    "audio_speech": ("resemblyzer", "voicefixer", "pesto-pitch"),
    "nlp_llm": ("pytorch-pretrained-bert", "supar", "sru", "pytorch-nlp"),
    "generative": ("pythae", "smalldiffusion", "zuko"),
    "time_series": ("pytorchts", "nbeats-pytorch", "torchts"),
    "tabular": ("pytabkit", "tabicl"),
    "graph": ("pygod",),
    "chemistry_materials": ("torchani", "sevenn"),
    "protein_bio": ("sequence-models",),
    "rl": ("openrl", "rlcard", "xuance"),
    "recommendation": ("torchfm", "rectools"),
    "research": ("zorro-pytorch", "pi-zero-pytorch"),
}


def specs() -> tuple[str, ...]:
    """Every spec, the domains interleaved (one of each in turn), so a run cut short still covers every domain."""
    groups = [list(g) for g in FRESH.values()]
    order: list[str] = []
    while any(groups):
        for g in groups:
            if g:
                order.append(g.pop(0))
    return tuple(order)
