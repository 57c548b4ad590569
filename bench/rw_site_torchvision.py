"""Install torchvision's Python parts for the verify corpus run on a CPU-only torch (issue 25).

PyPI has no CPU build of torchvision for torch 2.13.0: its only matching wheel, torchvision 0.28.0
(`Requires-Dist: torch==2.13.0`), ships a `_C.so` that needs `libtorch_cuda.so` and `libcudart.so.13`, which a
CPU torch does not have, so `import torchvision` fails (its fake-kernel registrations need the compiled ops
`torchvision::nms`, ...). timm, open_clip and torchvision's own model files import torchvision.

This script installs that wheel with `pip install --no-deps --target SITE` and declares the schemas of
torchvision's compiled ops (no kernel: calling `nms`, `roi_align`, `deform_conv2d`... raises) at the top of
`torchvision/_meta_registrations.py` in SITE, when the compiled ops are missing. Everything else of torchvision
(models, transforms on tensors, `ops` built from torch functions) then imports and runs. It changes only the
copy in SITE, which is the corpus run's `--site` folder, never the project's environment.

    python bench/rw_site_torchvision.py [--site bench/out/rw_site] [--version 0.28.0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle.worker import TORCHVISION_SCHEMAS as SCHEMAS  # the oracle declares the same ops

ROOT = Path(__file__).resolve().parents[1]
MARK = "# adopter-bench: torchvision op schemas"


def declare_schemas(site: Path) -> bool:
    """Put the schema block after the imports of SITE's `_meta_registrations.py`; False when it is there."""
    path = site / "torchvision" / "_meta_registrations.py"
    text = path.read_text(encoding="utf-8")
    if MARK in text:
        return False
    block = [MARK, "import torch as _torch", "", "try:", "    _torch.ops.torchvision.nms.default",
             "except (AttributeError, RuntimeError):",
             '    _SCHEMAS = _torch.library.Library("torchvision", "DEF")',
             *(f"    _SCHEMAS.define({s!r})" for s in SCHEMAS), ""]
    lines = text.split("\n")
    last_import = max(i for i, line in enumerate(lines[:30]) if line.startswith(("import ", "from ")))
    lines[last_import + 1 : last_import + 1] = ["", *block]
    path.write_text("\n".join(lines), encoding="utf-8")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", type=Path, default=ROOT / "bench" / "out" / "rw_site")
    ap.add_argument("--version", default="0.28.0", help="the torchvision that requires this torch")
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(args.site),
                    f"torchvision=={args.version}"], check=True)
    print("schemas declared" if declare_schemas(args.site) else "schemas already declared", "in", args.site)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
