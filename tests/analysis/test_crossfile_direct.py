"""`crossfile.direct`: a name's definition read from the file only when jedi could not answer otherwise."""

from __future__ import annotations

import ast
from pathlib import Path

from adopter.analysis.crossfile.ast_files import ParsedFile
from adopter.analysis.crossfile.direct import certain_module, direct_definition, sole_definition
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.crossfile.summary import Definition


def _tree(text: str) -> ast.Module:
    return ast.parse(text)


def test_sole_definition_takes_one_plain_binding() -> None:
    assert isinstance(sole_definition(_tree("import os\nclass A:\n    x = 1\n"), "A"), ast.ClassDef)
    assert isinstance(sole_definition(_tree("def f():\n    A = 2\nA = f()\n"), "A"), ast.Assign)
    assert isinstance(sole_definition(_tree("def A():\n    pass\n"), "A"), ast.FunctionDef)


def test_sole_definition_refuses_any_doubt() -> None:
    for text in ("class A: pass\nclass A: pass\n",  # bound twice
                 "try:\n    from x import A\nexcept ImportError:\n    class A: pass\n",  # under a condition
                 "class A: pass\nfrom m import *\n",  # a star import may rebind it
                 "from .m import A\nfrom .n import A\n",
                 "if TYPE_CHECKING:\n    from .m import A\nelse:\n    A = None\n",
                 "if FLAG:\n    from .m import A\n",  # a condition jedi may read
                 "if TYPE_CHECKING:\n    class A: pass\n",  # only an import is taken from under the test
                 "from . import A\n",  # a submodule or the package's binding: jedi
                 "A: int = 1\n",  # not a plain assignment
                 "A, B = 1, 2\n",
                 "class A: pass\ndef f():\n    global A\n    A = 1\n",
                 "def A(): pass\nclass B:\n    def f(self):\n        global A\n",
                 "class A: pass\nfor A in range(3):\n    pass\n",
                 "async def A(): pass\n"):
        assert sole_definition(_tree(text), "A") is None, text
    assert sole_definition(_tree("class B: pass\n"), "A") is None


def test_a_text_without_global_skips_the_walk() -> None:
    text = "class A: pass\ndef f():\n    global A\n"
    assert sole_definition(_tree(text), "A") is None
    assert isinstance(sole_definition(_tree(text), "A", has_global=False), ast.ClassDef)  # told wrongly: not walked


def test_sole_definition_takes_a_plain_reexport() -> None:
    assert isinstance(sole_definition(_tree("from .m import (B, A)\n"), "A"), ast.ImportFrom)
    assert isinstance(sole_definition(_tree("from .m import X as A\n"), "A"), ast.ImportFrom)
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .m import A\nelse:\n    import sys\n"
    assert isinstance(sole_definition(_tree(typed), "A"), ast.ImportFrom)


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "layers.py").write_text("import torch\n\nclass Act(torch.nn.Module):\n    pass\n")
    (pkg / "sub" / "model.py").write_text("from ..layers import Act\n")
    return pkg


def test_certain_module_relative_and_absolute(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    model, layers = str(pkg / "sub" / "model.py"), str(pkg / "layers.py")
    assert certain_module("..layers", model, layers, str(tmp_path))
    assert certain_module("pkg.layers", model, layers, str(tmp_path))
    assert not certain_module("pkg.layers", model, layers, str(pkg))  # not under jedi's project root
    assert not certain_module("..other", model, layers, str(tmp_path))  # not the file located
    assert not certain_module("os.path", model, "/usr/lib/python3/os/path.py", "/usr/lib/python3")


def test_certain_module_refuses_what_could_shadow_it(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    model, layers = str(pkg / "sub" / "model.py"), str(pkg / "layers.py")
    (pkg / "layers.pyi").write_text("class Act: ...\n")  # a stub
    assert not certain_module("..layers", model, layers, str(tmp_path))
    (pkg / "layers.pyi").unlink()
    (pkg / "layers").mkdir()  # a same-named folder: a namespace or regular package could win
    assert not certain_module("..layers", model, layers, str(tmp_path))
    (pkg / "layers").rmdir()
    (pkg / "sub" / "__init__.py").unlink()  # a namespace package on the way
    assert not certain_module("pkg.sub.model", model, str(pkg / "sub" / "model.py"), str(tmp_path))


def _read(path: str) -> ParsedFile | None:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return ParsedFile(0.0, ast.parse(data), {}, {}, b"global" in data)


def test_direct_definition(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    model, layers = str(pkg / "sub" / "model.py"), str(pkg / "layers.py")
    resolver = ModuleResolver(search_paths=[str(tmp_path)])
    root = str(tmp_path)
    found = direct_definition("..layers", "Act", model, layers, root, resolver.locate, _read)
    assert found == Definition(layers, 3, "Act")
    assert direct_definition("..layers", "torch", model, layers, root, resolver.locate, _read) is None  # `import`
    assert direct_definition("..layers", "Act", model, layers, root, resolver.locate, lambda p: None) is None
    # A re-export is followed to the definition, under its own name there.
    (pkg / "sub" / "__init__.py").write_text("from ..layers import Act as Activation\n")
    init = str(pkg / "sub" / "__init__.py")
    assert direct_definition(".", "Activation", model, init, root, resolver.locate, _read) == found


def test_the_statements_of_a_tree_are_its_walk_without_expressions() -> None:
    """`statements_in` keeps `ast.walk`'s order (`imports_of` keeps the first binding of a name it meets)."""
    import ast

    from adopter.analysis.crossfile.ast_files import imports_of, statements_in

    text = ("import a as x\ntry:\n    from b import x\nexcept ImportError:\n    def f():\n        import c as x\n"
            "match v:\n    case 1:\n        from d import y\nclass K:\n    from e import y, z\n"
            "w = lambda: [q for q in ()]\n")
    tree = ast.parse(text)
    holders = (ast.stmt, ast.excepthandler, ast.match_case)
    assert statements_in(tree) == [tree, *(n for n in ast.walk(tree) if isinstance(n, holders))]
    assert imports_of(tree) == {"x": "c", "y": "e.y", "z": "e.z"}  # `as` rebinds; `from` keeps the first


_TRY_ELSE = '''from typing import TYPE_CHECKING


class OptionalDependencyNotAvailable(Exception):
    pass


def is_torch_available():
    return True


_import_structure = {"utils": ["Mixin"]}

if TYPE_CHECKING:
    from .config import Config

    try:
        if not is_torch_available():
            raise OptionalDependencyNotAvailable()
    except OptionalDependencyNotAvailable:
        pass
    else:
        from .utils import Helper, Mixin
    try:
        if not is_torch_available():
            raise OptionalDependencyNotAvailable()
    except OptionalDependencyNotAvailable:
        pass
    else:
        from .tf_utils import TFMixin
else:
    import sys

    sys.modules[__name__] = object()
'''


def _try_else_package(tmp_path: Path, init: str) -> tuple[str, str, str, str]:
    """transformers 4.35.0's `generation/__init__.py` in small: `GenerationMixin` is imported under
    `if TYPE_CHECKING:` in the `else:` of a `try` (what `modeling_utils.py`'s `from .generation import
    GenerationMixin` reaches)."""
    pkg = tmp_path / "pkg"
    (pkg / "gen").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "gen" / "__init__.py").write_text(init)
    (pkg / "gen" / "config.py").write_text("class Config:\n    pass\n")
    (pkg / "gen" / "tf_utils.py").write_text("class TFMixin:\n    pass\n")
    (pkg / "gen" / "utils.py").write_text("import os\n\n\nclass Helper:\n    pass\n\n\nclass Mixin:\n    pass\n")
    (pkg / "model.py").write_text("from .gen import Mixin\n")
    return str(pkg / "model.py"), str(pkg / "gen" / "__init__.py"), str(pkg / "gen" / "utils.py"), str(tmp_path)


def test_an_import_in_the_else_of_a_try_under_type_checking_is_what_jedi_finds(tmp_path: Path) -> None:
    from adopter.analysis.crossfile.jedi_lookup import JediLookup

    model, init, utils, root = _try_else_package(tmp_path, _TRY_ELSE)
    resolver = ModuleResolver(search_paths=[root])
    direct = direct_definition(".gen", "Mixin", model, init, root, resolver.locate, _read)
    assert direct == Definition(utils, 8, "Mixin")
    jedi = JediLookup()
    try:
        assert jedi.goto(".gen", "Mixin", model, root) == direct
    finally:
        jedi.release()


def test_a_try_that_binds_the_name_in_another_arm_is_left_to_jedi() -> None:
    assert isinstance(sole_definition(_tree(_TRY_ELSE), "Mixin"), ast.ImportFrom)
    assert isinstance(sole_definition(_tree(_TRY_ELSE), "TFMixin"), ast.ImportFrom)
    for old, new in (("        pass\n    else:\n        from .utils", "        Mixin = None\n    else:\n        from .utils"),
                     ("except OptionalDependencyNotAvailable:\n        pass\n    else:\n        from .utils",
                      "except OptionalDependencyNotAvailable as Mixin:\n        pass\n    else:\n        from .utils"),
                     ("            raise OptionalDependencyNotAvailable()\n    except OptionalDependencyNotAvailable:\n"
                      "        pass\n    else:\n        from .utils",
                      "            from .other import Mixin\n    except OptionalDependencyNotAvailable:\n"
                      "        pass\n    else:\n        from .utils"),
                     ("from .utils import Helper, Mixin\n", "from .utils import Helper, Mixin\n    finally:\n"
                      "        Mixin = None\n"),
                     ("from .utils import Helper, Mixin\n", "from .utils import Helper, Mixin\n        Mixin = 1\n"),
                     ("from .tf_utils import TFMixin", "from .tf_utils import TFMixin as Mixin"),
                     ("    import sys\n", "    import sys\n    Mixin = None\n")):
        assert old in _TRY_ELSE, old
        assert sole_definition(_tree(_TRY_ELSE.replace(old, new)), "Mixin") is None, new
    assert sole_definition(_tree(_TRY_ELSE.replace("if TYPE_CHECKING:", "if FLAG:")), "Mixin") is None
    top = "try:\n    import torch\nexcept ImportError:\n    pass\nelse:\n    from .utils import Mixin\n"
    assert sole_definition(_tree(top), "Mixin") is None  # not under the test: not taken
