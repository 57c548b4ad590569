"""`adopter check`'s text output for two sites on one forward line (two Conv -> BN pairs of one Sequential
called once): one line each, told apart by their __init__ lines; a site alone on its line is printed as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from adopter.cli import main

VGG = """import torch
from torch import nn


class Enc(nn.Module):
    def __init__(self, c, w):
        super().__init__()
        self.block1 = nn.Sequential(
            nn.Conv2d(c, w, kernel_size=3, padding=1),
            nn.BatchNorm2d(w),
            nn.ReLU(inplace=True),
            nn.Conv2d(w, w, kernel_size=3, padding=1),
            nn.BatchNorm2d(w),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.block1(x)
"""


def test_sites_sharing_a_line_name_their_init_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADOPTER_RESULT_CACHE", "0")
    (tmp_path / "model.py").write_text(VGG + "\n\nclass One(nn.Module):\n    def __init__(self):\n"
                                       "        super().__init__()\n        self.c = nn.Conv2d(3, 3, 3)\n"
                                       "        self.b = nn.BatchNorm2d(3)\n\n    def forward(self, x):\n"
                                       "        return self.b(self.c(x))\n", encoding="utf-8")
    assert main(["check", str(tmp_path / "model.py"), "--select", "f07-conv-bn"]) == 1
    lines = [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines() if "f07-conv-bn" in line]
    assert [line.split(" Conv2d ->")[0] for line in lines] == [
        "f07-conv-bn (family 7) (__init__ lines 9, 10)",
        "f07-conv-bn (family 7) (__init__ lines 12, 13)",
        "f07-conv-bn (family 7)",
    ]
