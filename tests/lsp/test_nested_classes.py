"""A module class nested in a class body in the editor: its diagnostic, its verified quick fix, its hover."""

from __future__ import annotations

from pathlib import Path

from lsp_session import F05, analysed, apply_edit, codes, open_doc, start
from pytest_lsp import LanguageClient
from test_code_actions import actions_for, expected_rewrite, only_edit
from test_hover import hover, markdown

NESTED = '''import torch
import torch.nn as nn


class Block:
    """A builder that holds the module class it builds."""

    def build(self):
        return self._Block()

    class _Block(nn.Module):
        def __init__(self, d_model=16):
            super().__init__()
            self.proj = nn.Linear(d_model, d_model)
            self.dropout = nn.Dropout(0.1)
            self.norm = nn.LayerNorm(d_model)

        def forward(self, x):
            x = x + self.dropout(self.proj(x))
            x = self.norm(x)
            return x
'''


async def test_a_nested_class_gets_its_diagnostic_quick_fix_and_hover(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    path = tmp_path / "nested.py"
    uri = open_doc(client, path, NESTED)
    diagnostics = await analysed(client, uri, 1)
    assert F05 in codes(diagnostics)
    actions = [a for a in await actions_for(client, uri, diagnostics) if a.kind == "quickfix"]
    assert actions
    resolved = await client.code_action_resolve_async(actions[0])
    assert apply_edit(NESTED, only_edit(resolved, uri, 1)) == expected_rewrite(NESTED, path)
    header = NESTED.split("\n").index("    class _Block(nn.Module):")
    text = markdown(await hover(client, uri, header, 12))
    assert "**Block._Block**" in text and F05 in text
    assert await hover(client, uri, 4, 7) is None  # `class Block:` is no module
