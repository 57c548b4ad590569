"""The pure layers (dsl, analysis, engine) import and work without pygls, lsprotocol or torch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

BLOCKED = ("pygls", "lsprotocol", "torch")

SCRIPT = textwrap.dedent(
    """
    import importlib, importlib.util, json, sys

    BLOCKED = {blocked!r}

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked in this test: {{name}}")
            return None

    sys.meta_path.insert(0, Block())
    imported = []
    for name in ("adopter.dsl", "adopter.analysis", "adopter.engine"):
        if importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name)
        imported.append(name)

    from adopter.dsl import format_rule, parse_rules
    rules = parse_rules('rule r {{ family 4 title "t" message "m" forward {{ $o = f($x) }} }}')
    assert parse_rules(format_rule(rules[0]))
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(json.dumps({{"imported": imported, "leaked": leaked}}))
    """
).format(blocked=BLOCKED)


def test_pure_layers_import_without_heavy_dependencies() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "adopter.dsl" in report["imported"]
    assert report["leaked"] == []


def test_the_blocker_really_blocks() -> None:
    probe = SCRIPT.split("imported = []")[0] + "import lsprotocol\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "blocked in this test: lsprotocol" in result.stderr
