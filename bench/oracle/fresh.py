"""The fresh slice of the recall oracle: distributions nobody has opened, measured once per stop, aggregates only.

Chosen on 2026-12-05 (helper `fresh1`, issue 20) by domain and by popularity (the best-known PyPI distribution of
PyTorch model code in each domain that the author remembered), before any of their code was opened: never by a
form the checker is known to handle or miss. Constraints of the choice: the name's first letter is n-z or a digit
(a labeller picks a-m at the same time); none is in `bench/oracle/packages.py`, the MANIFEST of
`bench/realworld_corpus.py`, `bench/dev2_corpus.py` or `bench/heldout_corpus.py` (names only), nor `transformers`;
pure-Python wheels that install beside the project's torch (CPU), so none that needs a CUDA or C++ build
(`ptlflow`, `torchdrug`, `pufferlib`, `selene-sdk` were passed over for that). Versions are the ones pip resolved
beside the project's torch on the day of the first run (`bench/oracle_fresh.py run`), pinned here so later stops
measure the same code. A 30th choice, `torchts` (time series), is not on PyPI under that name ("No matching
distribution"): dropped, not replaced (a replacement picked after the run had begun could be picked by its results).
"""

from __future__ import annotations

FRESH: dict[str, tuple[str, ...]] = {
    "vision": ("pytorch-toolbelt==0.8.0", "super-image==0.2.0", "self-attention-cv==1.2.3", "torchdistill==1.1.5"),
    "audio_speech": ("resemblyzer==0.1.4", "voicefixer==0.1.3", "pesto-pitch==2.0.1"),
    "nlp_llm": ("pytorch-pretrained-bert==0.6.2", "supar==1.1.4", "sru==2.6.0", "pytorch-nlp==0.5.0"),
    "generative": ("pythae==0.1.2", "smalldiffusion==0.5.0", "zuko==1.6.0"),
    "time_series": ("pytorchts==0.6.0", "nbeats-pytorch==1.8.0"),
    "tabular": ("pytabkit==1.8.0", "tabicl==2.2.0"),
    "graph": ("pygod==1.1.0",),
    "chemistry_materials": ("torchani==2.9.0", "sevenn==0.13.0"),
    "protein_bio": ("sequence-models==1.8.0",),
    "rl": ("openrl==0.2.0", "rlcard==1.2.0", "xuance==1.4.4"),
    "recommendation": ("torchfm==0.2", "rectools==0.19.0"),
    "research": ("zorro-pytorch==0.1.1", "pi-zero-pytorch==0.5.17"),
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
