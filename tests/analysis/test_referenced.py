"""Module-level functions nothing in their file names (`Forward.referenced`), and the layer chains of
`nn.Sequential` subclasses: both follow edits of other parts of the file."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis

from .helpers import HEADER

SOURCE = HEADER + '''
def used(x):
    return torch.softmax(x, dim=-1)


def unused(x):
    return torch.softmax(x, dim=-1)


class A(nn.Module):
    def forward(self, x):
        return used(x)
'''


def _referenced(functions: object) -> dict[str, bool]:
    return {f.name: f.referenced for f in functions}  # type: ignore[attr-defined]


def test_a_helper_nothing_names_is_not_referenced() -> None:
    flags = _referenced(analyse(SOURCE, "m.py").functions)
    assert flags["used"] is True and flags["unused"] is False


def test_in_a_file_without_module_classes_every_helper_counts() -> None:
    helpers_only = SOURCE[: SOURCE.index("class A")]
    assert all(_referenced(analyse(helpers_only, "m.py").functions).values())


def test_a_caller_added_elsewhere_refreshes_the_flag() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    assert _referenced(doc.result().functions)["unused"] is False
    doc.update(doc.text.replace("return used(x)", "return used(x) + unused(x)"))
    assert _referenced(doc.result().functions)["unused"] is True
    assert "def unused" not in doc.reanalysed  # the function itself is not analysed again
    doc.update(doc.text.replace("return used(x) + unused(x)", "return used(x)"))
    assert _referenced(doc.result().functions)["unused"] is False


SEQUENTIAL = HEADER + '''
class ConvBN(nn.Sequential):
    def __init__(self, c_in, c_out):
        conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        super().__init__(conv, nn.BatchNorm2d(c_out), nn.ReLU())
'''


def test_a_sequential_subclass_is_read_as_the_chain_of_its_layers() -> None:
    chains = analyse(SEQUENTIAL, "m.py").chains
    assert [c.name for c in chains] == ["ConvBN"]
    callees = [b.value.callee for b in chains[0].init.bindings]  # type: ignore[union-attr]
    assert callees == ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"]


def test_the_chain_follows_an_edit_of_the_layers() -> None:
    doc = DocumentAnalysis(SEQUENTIAL, "m.py")
    assert len(doc.result().chains) == 1
    doc.update(doc.text.replace("nn.BatchNorm2d(c_out)", "nn.GroupNorm(8, c_out)"))
    callees = [b.value.callee for b in doc.result().chains[0].init.bindings]  # type: ignore[union-attr]
    assert callees == ["torch.nn.Conv2d", "torch.nn.GroupNorm", "torch.nn.ReLU"]


def test_a_helper_another_module_of_the_package_imports_is_referenced(tmp_path) -> None:  # type: ignore[no-untyped-def]
    package = tmp_path / "pkg"
    (package / "layers").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "layers" / "__init__.py").write_text("", encoding="utf-8")
    layers = package / "layers" / "rope.py"
    layers.write_text(SOURCE, encoding="utf-8")
    flags = _referenced(analyse(SOURCE, str(layers)).functions)
    assert flags["unused"] is False  # nothing in the package names it yet
    # A module elsewhere in the package imports it from this one: it is a helper, not dead code.
    (package / "model.py").write_text("from .layers.rope import unused\n", encoding="utf-8")
    (package / "layers" / "extra").mkdir()  # the package's folders changed: the cached answer is stale
    assert _referenced(analyse(SOURCE, str(layers)).functions)["unused"] is True


def test_naming_the_function_without_the_module_does_not_count(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "rope.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "other.py").write_text("def unused(x):\n    return x\n", encoding="utf-8")
    assert _referenced(analyse(SOURCE, str(tmp_path / "rope.py")).functions)["unused"] is False
    (tmp_path / "train.py").write_text("from rope import unused\n", encoding="utf-8")
    assert _referenced(analyse(SOURCE, str(tmp_path / "rope.py")).functions)["unused"] is True
