"""Where the package's data lives: the bundled rules and the DSL grammar.

An installed wheel carries them under `adopter/_data/`; a checkout (editable install) has them at the
repository's top level.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    bundled = _PACKAGE / "_data" / name
    if bundled.is_dir():
        return bundled
    checkout = _PACKAGE.parents[1] / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"adopter data folder {name!r} not found (looked in {bundled} and {checkout})")


def rules_dir() -> Path:
    return _data_dir("rules")


def grammar_dir() -> Path:
    return _data_dir("dsl-grammar")
