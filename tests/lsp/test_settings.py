"""Settings from initializationOptions, workspace/configuration and pyproject.toml; bad ones reported."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsp_session import F05, SNIPPET, analysed, codes, forget, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

from adopter.lsp import settings as settings_module
from adopter.lsp.settings import Settings, merge_settings, resolve_settings


def test_keys_in_any_case_style() -> None:
    settings, problems = merge_settings(Settings(), {"debounceMs": 5, "rule-paths": "x.adl", "ignore": [5]}, "t")
    assert problems == []
    assert settings.debounce_ms == 5 and settings.rule_paths == ("x.adl",) and settings.ignore == ("5",)


def test_bad_values_keep_defaults_and_name_the_key() -> None:
    settings, problems = merge_settings(
        Settings(), {"target": "tpu", "debounce_ms": -1, "severity": {"x": "loud"}, "colour": 1}, "t"
    )
    assert settings == Settings()
    assert len(problems) == 4
    for key in ("target", "debounce_ms", "severity", "colour"):
        assert any(repr(key) in p for p in problems)


def test_a_list_where_a_mapping_belongs_is_a_bad_setting() -> None:
    """cattrs raises AttributeError for it: reported as a bad value, not an exception out of `initialize`."""
    settings, problems = merge_settings(Settings(), {"severity": ["error"], "target": "cpu"}, "t")
    assert settings == Settings(target="cpu")
    assert len(problems) == 1 and "'severity'" in problems[0] and "cannot read ['error']" in problems[0]


def test_editor_settings_win_and_trust_comes_only_from_start_up() -> None:
    settings, _ = resolve_settings({
        "pyproject.toml": {"target": "cuda", "ignore": ["1"]},
        "initializationOptions": {"trusted": False, "interpreter": "/usr/bin/python3"},
        "workspace/configuration": {"target": "cpu", "trusted": True},
    })
    assert settings.target == "cpu" and settings.ignore == ("1",) and settings.trusted is False


async def test_initialization_options_ignore_and_severity(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, {"severity": {F05: "error"}})
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    (finding,) = [d for d in await analysed(client, uri, 1) if d.code == F05]
    assert finding.severity == types.DiagnosticSeverity.Error


async def test_configuration_change_is_pulled_and_applied(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert F05 in codes(await analysed(client, uri, 1))
    client.set_configuration({"ignore": ["5"]}, section="adopter")
    forget(client, uri)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    assert F05 not in codes(await analysed(client, uri, 1))


async def test_pushed_settings_when_the_client_cannot_be_asked(client: LanguageClient, tmp_path: Path) -> None:
    """A client without `workspace/configuration` pushes its settings with didChangeConfiguration."""
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=False),
        text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)
        ),
    )
    await start(client, tmp_path, capabilities=capabilities)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert F05 in codes(await analysed(client, uri, 1))
    forget(client, uri)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"adopter": {"select": ["f06"], "debounceMs": 0}})
    )
    assert F05 not in codes(await analysed(client, uri, 1))


async def test_pyproject_tool_adopter(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.adopter]\nignore = ["f05"]\n', encoding="utf-8")
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert F05 not in codes(await analysed(client, uri, 1))


async def test_bad_settings_give_a_message_and_defaults(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, {"target": "tpu", "bogus": 1})
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert F05 in codes(await analysed(client, uri, 1))  # still working, with the default target
    for _ in range(500):
        if len(client.messages) >= 2:
            break
        await asyncio.sleep(0.01)
    text = " | ".join(m.message for m in client.messages)
    assert "'target'" in text and "'bogus'" in text



# Values an editor sends (already of each field's type), then values cattrs converts or rejects.
_PLAIN_VALUES = {"select": ["f05", "1"], "ignore": ("f06",), "severity": {"f05": "error"}, "target": "cuda",
                 "rule_paths": ["a.adl", "rules/"], "debounce_ms": 7, "trusted": False}
_OTHER_VALUES = [("select", [5.5]), ("ignore", [None]), ("severity", {"f05": 3}), ("target", 3), ("debounce_ms", "12"),
                 ("debounce_ms", 7.9), ("debounce_ms", "soon"), ("rule_paths", {"a": 1}), ("trusted", "yes"),
                 ("select", [{"a": 1}]), ("rule_paths", [1, "x"]), ("ignore", 3)]


def test_values_of_their_fields_type_need_no_cattrs_and_read_as_cattrs_reads_them(monkeypatch: Any) -> None:
    """Settings already of their fields' types are read without importing cattrs (~30 ms of the server's
    start), to the values cattrs gives; any other value still goes through cattrs, with its messages."""
    code = """if True:
        import json, sys
        from adopter.lsp.settings import Settings, merge_settings
        plain, plain_problems = merge_settings(Settings(), json.loads(sys.argv[1]), "t")
        loaded = "cattrs" in sys.modules
        others = [merge_settings(Settings(), {key: value}, "t") for key, value in json.loads(sys.argv[2])]
        print(json.dumps({"loaded": loaded, "plain": [repr(plain), plain_problems],
                          "others": [[repr(s), p] for s, p in others]}))
    """
    result = subprocess.run([sys.executable, "-c", code, json.dumps(_PLAIN_VALUES), json.dumps(_OTHER_VALUES)],
                            capture_output=True, text=True, check=True, timeout=120)
    report = json.loads(result.stdout)
    assert report["loaded"] is False
    assert set(_PLAIN_VALUES) == {f.name for f in dataclasses.fields(Settings)}  # every field has a plain case

    monkeypatch.setattr(settings_module, "_is_plain", lambda name, value: False)  # every value through cattrs
    plain, problems = merge_settings(Settings(), _PLAIN_VALUES, "t")
    assert report["plain"] == [repr(plain), problems] and problems == [] and plain.target == "cuda"
    for (key, value), got in zip(_OTHER_VALUES, report["others"], strict=True):
        settings, problems = merge_settings(Settings(), {key: value}, "t")
        assert got == [repr(settings), problems], (key, value)
