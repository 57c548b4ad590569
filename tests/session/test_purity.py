"""`adopter.session` imports and analyses without pygls, lsprotocol or torch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bert_encoder.py"
SCRIPT = textwrap.dedent(
    """
    import json, sys

    BLOCKED = {"pygls", "lsprotocol", "torch"}

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked in this test: {name}")
            return None

    sys.meta_path.insert(0, Block())
    from adopter.session import Session, load_context

    session = Session(load_context(target="cpu"))
    analysed = session.analysed(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1])
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(json.dumps({"findings": len(analysed.findings), "leaked": leaked}))
    """
)


def test_session_analyses_without_heavy_dependencies() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["findings"] > 0 and report["leaked"] == []
