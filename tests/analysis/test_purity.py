"""The analysis layer imports neither pygls, lsprotocol nor torch."""

from __future__ import annotations

import subprocess
import sys


def test_analysis_imports_no_heavy_or_server_packages() -> None:
    code = (
        "import sys\n"
        "import adopter.analysis, adopter.analysis.incremental, adopter.positions\n"
        "from adopter.analysis import analyse\n"
        "analyse('import torch.nn as nn\\nclass A(nn.Module):\\n    def forward(self, x):\\n        return x\\n')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'pygls', 'lsprotocol', 'torch'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
