"""Access to the transformers corpus for the analysis tests: the files and a resolver over the wheel."""

from __future__ import annotations

from functools import cache

import pytest

from adopter.analysis import ModuleResolver
from adopter.corpus import wheel_path


@cache
def wheel_resolver() -> ModuleResolver:
    """Resolves `from ...modeling_utils import PreTrainedModel` inside the wheel, like a workspace."""
    path = wheel_path()
    if path is None:
        pytest.skip("transformers 4.35.0 wheel not cached; run scripts/fetch-corpus.sh")
    return ModuleResolver.for_archive(str(path))
