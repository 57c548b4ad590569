"""The server takes long-lived objects (modules, grammars, rules) out of the cyclic GC's scans when
it loads rules, so a full collection does not land on a keystroke (40 ms -> ~1 ms; see
docs/benchmarks.md), and does it again when a settings change reloads the rules."""

from __future__ import annotations

import gc

from adopter.lsp.server import AdopterServer
from adopter.lsp.settings import Settings


def test_loading_rules_freezes_long_lived_objects_again_on_reload() -> None:
    server = AdopterServer()
    try:
        gc.unfreeze()
        first = server.rule_context()
        assert first.rules and gc.get_freeze_count() > 1000
        gc.unfreeze()
        server.settings = Settings(select=("f01",))  # a settings change: the rules load again
        second = server.rule_context()
        assert second is not first and gc.get_freeze_count() > 1000
        assert len(gc.get_objects()) < gc.get_freeze_count() / 2  # what is left to scan is small
    finally:
        gc.unfreeze()
