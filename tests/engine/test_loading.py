"""Rule loading: bundled plus user files, broken files become positioned problems, select/ignore."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from adopter.dsl.types import Severity, Target
from adopter.engine import load_rules, workspace_rule_paths
from adopter.engine.environment import Environment, detect_environment, version_satisfies

GOOD = '''rule user-relu-twice {
  family 13
  title "Two relus"
  message "relu(relu(x)) is relu(x)"
  severity hint
  scope forward
  forward {
    $a = torch.relu($x)
    $b = torch.relu($a)
  }
  example match ```python
  import torch
  from torch import nn


  class M(nn.Module):
      def forward(self, x):
          return torch.relu(torch.relu(x))
  ```
}
'''

BROKEN = '''rule broken {
  family 13
  title "oops"
  forward { $a = torch.relu($x
}
'''


def test_bundled_rules_load_without_problems() -> None:
    ruleset = load_rules()
    assert not ruleset.problems, [p.render() for p in ruleset.problems]
    assert ruleset.rules and len({r.id for r in ruleset.rules}) == len(ruleset.rules)
    assert {r.family for r in ruleset.rules} >= {5}


def test_user_rules_and_broken_file_is_skipped_with_position(tmp_path: Path) -> None:
    (tmp_path / "good.adl").write_text(GOOD)
    (tmp_path / "broken.adl").write_text(BROKEN)
    ruleset = load_rules([tmp_path], bundled=False)
    assert [r.id for r in ruleset.rules] == ["user-relu-twice"]
    (problem,) = ruleset.problems
    assert problem.path == str(tmp_path / "broken.adl")
    assert problem.span is not None and problem.severity == Severity.ERROR
    assert "broken.adl:" in problem.render()


def test_missing_path_and_duplicate_ids(tmp_path: Path) -> None:
    (tmp_path / "a.adl").write_text(GOOD)
    (tmp_path / "b.adl").write_text(GOOD)
    ruleset = load_rules([tmp_path, tmp_path / "nope.adl"], bundled=False)
    assert [r.id for r in ruleset.rules] == ["user-relu-twice"]
    messages = " ".join(p.message for p in ruleset.problems)
    assert "duplicate rule id" in messages and "does not exist" in messages


def test_workspace_rule_folder(tmp_path: Path) -> None:
    assert workspace_rule_paths(tmp_path) == ()
    folder = tmp_path / ".adopter" / "rules"
    folder.mkdir(parents=True)
    (folder / "mine.adl").write_text(GOOD)
    assert [r.id for r in load_rules(workspace_rule_paths(tmp_path), bundled=False).rules] == ["user-relu-twice"]


def test_select_and_ignore() -> None:
    everything = load_rules().rules
    fam5 = load_rules(select=["5"]).rules
    assert fam5 and all(r.family == 5 for r in fam5)
    one = everything[0]
    assert [r.id for r in load_rules(select=[one.id]).rules] == [one.id]
    assert one.id not in {r.id for r in load_rules(ignore=[one.id]).rules}
    unknown = load_rules(select=["no-such-rule"])
    assert not unknown.rules and any("matches no rule" in p.message for p in unknown.problems)


@pytest.mark.parametrize(("version", "spec", "ok"), [
    ("2.13.0", ">=2.1", True), ("2.13.0", ">=2.1,<3", True), ("2.0.1", ">=2.1", False),
    ("2.13.0+cpu", "<2.13", False), ("2.13.0", "==2.13", True), ("2.5.1", "~=2.4", True),
    ("3.0", "~=2.4", False), ("2.1", "nonsense", False),
])
def test_version_specifiers(version: str, spec: str, ok: bool) -> None:
    assert version_satisfies(version, spec) is ok


def test_environment_offers() -> None:
    liger = Target("liger", "k", devices=("cuda",), packages=("liger_kernel",))
    portable = Target("portable", "k", torch=">=2.1")
    cpu = Environment("cpu", frozenset(), "2.13.0")
    assert cpu.offers(portable) and not cpu.offers(liger)
    assert Environment("cuda", frozenset({"liger_kernel"}), "2.13.0").offers(liger)
    assert not Environment("cpu", frozenset(), "2.0.0").offers(portable)
    env = detect_environment("cpu")
    assert env.device == "cpu" and env.torch_version is not None
    with pytest.raises(ValueError, match="unknown target device"):
        detect_environment("tpu")


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget what this process parsed, as a fresh server would start (the disk cache stays)."""
    from adopter.engine import loading

    monkeypatch.setattr(loading, "_cache", {})
    monkeypatch.setattr(loading, "_disk", [])
    monkeypatch.setattr(loading, "_seed", [])


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    import adopter.dsl

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed a rule file the disk cache holds")

    monkeypatch.setattr(adopter.dsl, "parse_rules", refuse)


def test_a_new_process_reads_parsed_rules_from_the_disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ADOPTER_RULE_CACHE", raising=False)
    user = tmp_path / "user"
    user.mkdir()
    (user / "good.adl").write_text(GOOD)
    (user / "broken.adl").write_text(BROKEN)
    _new_process(monkeypatch)
    first = load_rules([user])
    assert list((tmp_path / "cache" / "rules").rglob("*.pickle"))
    _new_process(monkeypatch)
    with monkeypatch.context() as m:
        _no_parsing(m)
        again = load_rules([user])
    # The same rules (compiled or pure classes alike), the broken file's positioned problem included.
    assert again == first and repr(again) == repr(first)
    assert [p.path for p in again.problems] == [str(user / "broken.adl")]
    # A changed file is parsed again: the cache is keyed on its content, not its name or time.
    (user / "good.adl").write_text(GOOD.replace("user-relu-twice", "user-relu-again"))
    _new_process(monkeypatch)
    assert "user-relu-again" in {r.id for r in load_rules([user]).rules}


def test_a_damaged_or_disabled_disk_cache_only_means_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(cache))
    _new_process(monkeypatch)
    expected = load_rules()
    damaged = list((cache / "rules").rglob("*.pickle"))
    assert damaged
    for pickle_file in damaged:
        pickle_file.write_bytes(b"not a pickle")
    _new_process(monkeypatch)
    assert load_rules() == expected
    monkeypatch.setenv("ADOPTER_RULE_CACHE", "0")
    other = tmp_path / "other"
    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(other))
    _new_process(monkeypatch)
    assert load_rules() == expected and not other.exists()


def test_the_wheels_seed_spares_parsing_the_bundled_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel ships the bundled rules parsed: the first start (an empty user cache) parses nothing,
    and the rules equal those parsed from the files, each naming its installed file."""
    from adopter import resources
    from adopter.dsl.cache import SEED_NAME, write_seed

    installed = tmp_path / "_data" / "rules"
    shutil.copytree(resources.rules_dir(), installed)
    monkeypatch.setattr(resources, "rules_dir", lambda: installed)
    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ADOPTER_RULE_CACHE", raising=False)
    _new_process(monkeypatch)
    expected = load_rules()
    assert write_seed(installed, tmp_path / "_data" / SEED_NAME) == len(list(installed.glob("*.adl")))
    shutil.rmtree(tmp_path / "cache")
    _new_process(monkeypatch)
    with monkeypatch.context() as m:
        _no_parsing(m)
        seeded = load_rules()
    assert seeded == expected and {r.path for r in seeded.rules} <= {str(p) for p in installed.glob("*.adl")}
    # A bundled file that differs from the one the seed was written from is parsed, and only that one.
    import adopter.dsl

    edited = installed / "f04-softmax.adl"
    edited.write_text(edited.read_text() + "\n")
    _new_process(monkeypatch)
    parsed: list[str] = []
    parse = adopter.dsl.parse_rules

    def counting(text: str, path: str | None = None) -> object:
        parsed.append(Path(path or "").name)
        return parse(text, path)

    monkeypatch.setattr(adopter.dsl, "parse_rules", counting)
    assert load_rules() == expected and parsed == ["f04-softmax.adl"]


def _rule_folders(tmp_path: Path, names: tuple[str, ...]) -> list[Path]:
    folders = []
    for name in names:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "good.adl").write_text(GOOD.replace("user-relu-twice", f"user-relu-{name}"))
        folders.append(folder)
    return folders


def test_a_process_reads_only_the_rule_folders_it_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk cache holds every folder of rules ever parsed (each checkout's bundled rules, test folders):
    a new process must unpickle only those it loads, or each start pays for all of them in memory and
    CPU (with 20 copies of the bundled rules: +13 MB of server RSS)."""
    from adopter.dsl import cache
    from adopter.dsl.types import Rule

    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ADOPTER_RULE_CACHE", raising=False)
    mine, *others = _rule_folders(tmp_path, ("mine", "other1", "other2"))
    _new_process(monkeypatch)
    load_rules([mine, *others], bundled=False)
    rebuilt: list[object] = []
    rebuild = cache._rebuild

    def recording(cls: type, values: tuple[object, ...]) -> object:
        obj = rebuild(cls, values)
        rebuilt.append(obj)
        return obj

    monkeypatch.setattr(cache, "_rebuild", recording)
    _new_process(monkeypatch)
    with monkeypatch.context() as m:
        _no_parsing(m)
        assert [r.id for r in load_rules([mine], bundled=False).rules] == ["user-relu-mine"]
    paths = {r.path for r in rebuilt if isinstance(r, Rule)}
    assert paths == {str(mine / "good.adl")}
    # The others are still there for the processes that load them.
    _new_process(monkeypatch)
    with monkeypatch.context() as m:
        _no_parsing(m)
        assert len(load_rules(others, bundled=False).rules) == 2


def test_the_cache_drops_vanished_rule_folders_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder that no longer exists (a removed checkout, a test's temporary folder) loses its cache
    file at the next write; a removed file in a folder that remains loses only its entry."""
    from adopter.dsl.cache import DiskCache, cache_folder

    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ADOPTER_RULE_CACHE", raising=False)
    kept, gone = _rule_folders(tmp_path, ("kept", "gone"))
    (kept / "second.adl").write_text(GOOD.replace("user-relu-twice", "user-relu-second"))
    _new_process(monkeypatch)
    load_rules([kept, gone], bundled=False)
    directory = DiskCache(cache_folder()).directory
    assert directory is not None and len(list(directory.glob("*.pickle"))) == 2
    shutil.rmtree(gone)
    (kept / "second.adl").unlink()
    (kept / "good.adl").write_text(GOOD.replace("user-relu-twice", "user-relu-edited"))  # parsed: a write
    _new_process(monkeypatch)
    load_rules([kept], bundled=False)
    (left,) = directory.glob("*.pickle")
    disk = DiskCache(cache_folder())
    assert left == disk.file(str(kept))
    assert list(disk._read(str(kept))) == [str(kept / "good.adl")]
    _new_process(monkeypatch)
    with monkeypatch.context() as m:
        _no_parsing(m)
        assert [r.id for r in load_rules([kept], bundled=False).rules] == ["user-relu-edited"]
