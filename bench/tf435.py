"""Where transformers 4.35.0 is installed for the benchmarks and the real-model tests, and whether this
Python can import it.

scripts/fetch-corpus.sh installs it into `.cache/tf435` with `pip install --target`, so the compiled modules
there (regex, PyYAML, charset_normalizer, tokenizers) are built for the Python that ran the script, the
project's venv; another Python (3.14, say) finds them but cannot load them. ADOPTER_TF435 names another
such folder (relative to the repository root unless absolute), one installed for that Python:

    PYTHON=/opt/python3.14/bin/python3 TF435_DIR=.cache/tf435-cp314 bash scripts/fetch-corpus.sh
    ADOPTER_TF435=.cache/tf435-cp314 /opt/venv314/bin/python -m pytest tests/rules
"""

from __future__ import annotations

import functools
import importlib.machinery
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TF435 = REPO / (os.environ.get("ADOPTER_TF435") or Path(".cache") / "tf435")  # an absolute value replaces REPO
# The ABI tag of an extension module's file name: `m.cpython-311-x86_64-linux-gnu.so`, `m.abi3.so`,
# `m.cp312-win_amd64.pyd`. Untagged `m.so` loads anywhere it was built for; shared libraries (`libx.so.1`)
# are not modules.
_TAGGED_MODULE = re.compile(r"\.(cpython-[\w-]+|abi3|cp\d+t?-win_\w+|pypy[\w-]+)\.(so|pyd)$")


@functools.cache
def foreign_modules(root: Path = TF435) -> tuple[str, ...]:
    """The extension modules under `root` that this Python cannot load (built for another one), sorted."""
    suffixes = set(importlib.machinery.EXTENSION_SUFFIXES)
    out = []
    for path in root.rglob("*"):
        match = _TAGGED_MODULE.search(path.name)
        if match and f".{match.group(1)}.{match.group(2)}" not in suffixes:
            out.append(path.relative_to(root).as_posix())
    return tuple(sorted(out))


def unusable_reason(root: Path = TF435) -> str | None:
    """Why transformers 4.35.0 at `root` cannot be imported by this Python; None when it can."""
    if not (root / "transformers").is_dir():
        return f"transformers 4.35.0 is not installed in {root} (scripts/fetch-corpus.sh)"
    foreign = foreign_modules(root)
    if foreign:
        return (f"{root} was installed for another Python: {len(foreign)} compiled modules there do not load on "
                f"{sys.implementation.cache_tag} (e.g. {foreign[0]}); install one for this Python "
                f"(PYTHON={sys.executable} TF435_DIR=DIR bash scripts/fetch-corpus.sh) and set ADOPTER_TF435=DIR")
    return None
