"""Read the modeling files of a downloaded `transformers` wheel (the evaluation corpus), without installing it.

`scripts/fetch-corpus.sh` puts the wheels in `.cache/corpus/`; `ADOPTER_CORPUS_DIR` overrides the folder.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[2]
_MODELING = re.compile(r"^transformers/models/([^/]+)/modeling_([^/]+)\.py$")


@dataclass(frozen=True, slots=True)
class CorpusFile:
    model: str  # the model folder, e.g. "bert"
    name: str  # the file name, e.g. "modeling_bert.py"
    member: str  # the path inside the wheel
    text: str


def corpus_dir() -> Path:
    return Path(os.environ.get("ADOPTER_CORPUS_DIR", _REPO_ROOT / ".cache" / "corpus"))


def wheel_path(version: str = "4.35.0") -> Path | None:
    matches = sorted(corpus_dir().glob(f"transformers-{version}-*.whl"))
    return matches[0] if matches else None


@cache
def modeling_files(version: str = "4.35.0", *, pytorch_only: bool = True) -> tuple[CorpusFile, ...]:
    """Every `models/<m>/modeling_<m>.py` of the wheel (PyTorch files only: no `_tf`/`_flax`).

    With `pytorch_only`, only `modeling_<m>.py` whose name equals its folder's model is kept (202 files
    in 4.35.0); otherwise every PyTorch modeling file in the folders.
    """
    path = wheel_path(version)
    if path is None:
        raise FileNotFoundError(
            f"transformers=={version} wheel not found in {corpus_dir()}; run scripts/fetch-corpus.sh"
        )
    files = []
    with zipfile.ZipFile(path) as wheel:
        for member in sorted(wheel.namelist()):
            m = _MODELING.match(member)
            if not m:
                continue
            folder, stem = m.groups()
            if stem.endswith(("_tf", "_flax")) or (pytorch_only and stem != folder):
                continue
            text = wheel.read(member).decode("utf-8")
            files.append(CorpusFile(folder, f"modeling_{stem}.py", member, text))
    return tuple(files)


def modeling_file(model: str, version: str = "4.35.0") -> CorpusFile:
    for f in modeling_files(version, pytorch_only=False):
        if f.name == f"modeling_{model}.py":
            return f
    raise KeyError(f"no modeling_{model}.py in transformers {version}")


def read_member(member: str, version: str = "4.35.0") -> str:
    """Any file of the wheel, e.g. `transformers/activations.py`."""
    path = wheel_path(version)
    if path is None:
        raise FileNotFoundError(f"transformers=={version} wheel not found in {corpus_dir()}")
    with zipfile.ZipFile(path) as wheel:
        return wheel.read(member).decode("utf-8")
