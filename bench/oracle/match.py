"""Find each family's patterns in a traced forward graph with inductor's pattern matcher, and place each
match at the lines of the model's source that made its nodes (the nodes' stack traces)."""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from oracle import qkv, walks
from oracle.patterns import BARE_PROJECTION, FamilyPattern, family_patterns
from oracle.trace import frames, named_frames

Line = tuple[str, int]  # (absolute file path, 1-based line)


@dataclass(frozen=True, slots=True)
class Site:
    """One place where a family's ops occur: `anchor` is the line of the pattern's last op (where it is
    written: inside a helper when a helper runs it), `lines` every model line of its ops' call chains
    (`chain`: the line each op is written at and the calls that reach it from the enclosing `forward`)."""

    family: int
    pattern: str
    anchor: Line
    lines: tuple[Line, ...]
    # where its ops are written (`written_at`): the construction line of each torch layer that computed one,
    # the model line of each other op. The report reads it to tell a site the model's distribution writes
    # from one a library model builds and the model's code only runs (`report.library_built`).
    written: tuple[Line, ...] = ()

    def to_json(self) -> dict[str, object]:
        elsewhere: dict[str, set[int]] = defaultdict(set)
        for f, ln in self.lines:
            if f != self.anchor[0]:
                elsewhere[f].add(ln)
        written: dict[str, set[int]] = defaultdict(set)
        for f, ln in self.written:
            written[f].add(ln)
        return {"family": self.family, "pattern": self.pattern, "file": self.anchor[0], "line": self.anchor[1],
                "lines": sorted({ln for f, ln in self.lines if f == self.anchor[0]}),
                "elsewhere": {f: sorted(v) for f, v in sorted(elsewhere.items())},
                "written": {f: sorted(v) for f, v in sorted(written.items())}}


def model_line(node: torch.fx.Node, is_model_file: Callable[[str], bool]) -> Line | None:
    """The innermost frame of the model's code that made `node` (library frames inside it are skipped)."""
    for file, line in reversed(frames(node)):
        if is_model_file(file):
            return file, line
    return None


def written_at(node: torch.fx.Node, is_model_file: Callable[[str], bool]) -> Line | None:
    """Where the model's code writes `node`: the line that constructed the torch layer that computed it
    (`built.py`'s `built_at`: an `nn.Conv2d` of a torchvision VGG was written in torchvision's `make_layers`,
    whichever line runs the container that holds it), else the innermost model line that made it (an op
    written in a forward or helper); None for a node no model line made (a view)."""
    built: Line | None = node.meta.get("built_at")
    return built if built is not None else model_line(node, is_model_file)


def below_model(node: torch.fx.Node, is_model_file: Callable[[str], bool]) -> list[tuple[str, int, str]] | None:
    """The frames (file, line, function) inside the innermost model frame that made `node` (library code
    the model called), outermost first; None when no model frame made it (a view with no line of its own)."""
    named = named_frames(node)
    inner = max((i for i, (f, _, _) in enumerate(named) if is_model_file(f)), default=None)
    return None if inner is None else named[inner + 1:]


def chain(node: torch.fx.Node, is_model_file: Callable[[str], bool]) -> list[Line]:
    """The model lines of `node`'s stack from where it is written outward to the `forward` that calls it,
    innermost first: `[helper line, forward line]` for an op in `self._norm(x)`'s body, `[forward line]`
    for an op written in the forward. These are "the same lines" for scoring: the helper's line is the one
    the user would edit for a fix, the forward's the call that runs it; a finding at either names the
    site. Outer modules' forwards (`x = self.encoder(x)`) are not part of it."""
    out: list[Line] = []
    for file, line, fn in reversed(named_frames(node)):
        if not is_model_file(file):
            continue
        out.append((file, line))
        if fn == "forward":
            break
    return out


# torch layer files whose frames may sit between a model line and a dropout / add / LayerNorm op of a
# family-5 site: the module call itself, `nn.Dropout`, `nn.LayerNorm`. Any other torch layer between them
# (`nn.TransformerEncoderLayer._sa_block`, an `nn.Sequential`'s forward) runs the op inside a library layer.
_DIRECT_LAYER_FILES = frozenset({"module.py", "dropout.py", "normalization.py"})


def one_forward(nodes: Iterable[torch.fx.Node], is_model_file: Callable[[str], bool]) -> bool:
    """Whether a dropout -> add -> LayerNorm match is one the rule's rewrite can fuse: its dropout, add and
    LayerNorm are each called from model code directly (an `nn.Dropout` / `nn.LayerNorm` / `F.dropout` /
    `F.layer_norm` call, not an op inside another torch layer: `nn.TransformerEncoderLayer`'s inherited
    `_sa_block`, an `nn.Sequential` ending in a Dropout), and their call chains (`chain`) reach the same
    `forward` (or the same function, for a module-level one), so one function holds all three calls. A
    dropout that ends another module's forward (a FeedForward block's last layer), with the add in the
    caller and the norm in the next block, is three modules' ops that trace next to each other, not a
    site: the rewrite replaces a dropout call, an add and a norm call written in one function. A norm
    computed by a custom LayerNorm's own forward (`F.layer_norm(x.float(), ...)`) is the same: its chain
    ends in that forward, and the rule does not match custom norms (their semantics differ)."""
    ends: set[tuple[str, int]] = set()
    for n in nodes:
        if n.op != "call_function":
            continue
        below = below_model(n, is_model_file)
        if below is None:
            continue  # a view or getitem with no model line of its own
        for f, _, _ in below:
            if "/torch/nn/modules/" in f.replace("\\", "/") and f.rsplit("/", 1)[-1] not in _DIRECT_LAYER_FILES:
                return False
        lines = chain(n, is_model_file)
        if not lines:
            continue
        ends.add(enclosing_function(*lines[-1]))
    return len(ends) == 1


@functools.cache
def _functions(path: str) -> tuple[tuple[int, int, int], ...]:
    """(first line, last line, def line) of every function in the file; () when it cannot be read."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return ()
    return tuple((min([n.lineno, *(d.lineno for d in n.decorator_list)]), n.end_lineno or n.lineno, n.lineno)
                 for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def enclosing_function(path: str, line: int) -> tuple[str, int]:
    """(file, line of the innermost `def` holding `line`); (file, 0) outside any function or unreadable."""
    best = (0, 10 ** 9, 0)
    for start, end, at in _functions(path):
        if start <= line <= end and end - start < best[1] - best[0]:
            best = (start, end, at)
    return path, best[2]


def executed_lines(gm: torch.fx.GraphModule, is_model_file: Callable[[str], bool]) -> set[Line]:
    """Every model line some forward op came from: what the trace exercised."""
    out: set[Line] = set()
    for n in gm.graph.nodes:
        if n.op == "call_function":
            for f, ln in frames(n):
                if is_model_file(f):
                    out.add((f, ln))
    return out


def _by_root(patterns: Iterable[FamilyPattern]) -> dict[object, list[FamilyPattern]]:
    index: dict[object, list[FamilyPattern]] = defaultdict(list)
    for p in patterns:
        for fn in getattr(p.pattern, "fns", ()):
            index[fn].append(p)
    return index


# torch's own frames that only pass a call on (a module's `__call__`, `nn.Sequential`'s loop over its items):
# ops under them are still computed by the layers the model's code chose.
_PASSING_FRAMES = frozenset({"module.py", "container.py"})
_TORCH_NN = str(Path(torch.__file__).resolve().parent / "nn") + "/"


def torch_composed(nodes: Iterable[torch.fx.Node], is_model_file: Callable[[str], bool]) -> bool:
    """Whether a match's ops were all computed inside one call of torch's own layer code (`torch/nn`) below
    the model's innermost line, by different lines of it: `nn.MultiheadAttention` (its
    `F.multi_head_attention_forward` computes projections, scores, softmax and the weighted sum),
    `nn.TransformerEncoderLayer`'s feed-forward. That is torch's implementation, not a chain the user wrote:
    a rule rewrites the user's ops, and the call is already the library's (its fast path is torch's to
    choose). Torch layers the model chains itself (`nn.Linear` then `nn.GELU`, an `nn.Sequential` of a conv
    and a BatchNorm) share no such call; three `nn.Linear`s share the frames of `Linear.forward` but make
    each op at the same line of it (the frames name no call, so the same lines are read as separate calls
    of a one-op layer): neither is torch's composite."""
    shared: set[tuple[str, int, str]] | None = None
    paths: set[tuple[tuple[str, int, str], ...]] = set()
    for n in nodes:
        if n.op != "call_function":
            continue
        below = below_model(n, is_model_file)
        if below is None:
            continue
        path = tuple(fr for fr in below
                     if fr[0].startswith(_TORCH_NN) and fr[0].rsplit("/", 1)[-1] not in _PASSING_FRAMES)
        shared = set(path) if shared is None else shared & set(path)
        if not shared:
            return False
        paths.add(path)
    return bool(shared) and len(paths) > 1


def calls_sdpa(line: Line) -> bool:
    """Whether the model line calls `scaled_dot_product_attention`: ops placed there are SDPA's own math path
    (traced on the meta device it runs as its decomposition), the fused call a family-10 rewrite would write."""
    return "scaled_dot_product_attention" in _source_line(*line)


@functools.lru_cache(maxsize=4096)
def _source_line(path: str, line: int) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    return lines[line - 1] if 0 < line <= len(lines) else ""


def find_sites(gm: torch.fx.GraphModule, is_model_file: Callable[[str], bool],
               patterns: tuple[FamilyPattern, ...] | None = None) -> list[Site]:
    """Every family site in the forward graph; a site whose ops all come from library code (no model line)
    is dropped, as it is not in the user's source, and so is one whose ops torch's own code composed
    (`torch_composed`) or SDPA's math path made (`calls_sdpa`), with the softmax inside it."""
    index = _by_root(patterns if patterns is not None else family_patterns())
    found: dict[tuple[int, Line], Site] = {}
    projections: dict[tuple[torch.fx.Node, object], list[tuple[torch.fx.Node, list[torch.fx.Node]]]] = defaultdict(list)
    bare: dict[tuple[torch.fx.Node, object], list[tuple[torch.fx.Node, list[torch.fx.Node]]]] = defaultdict(list)
    for node in reversed(gm.graph.nodes):
        if node.op != "call_function":
            continue
        for fp in index.get(node.target, ()):
            m = fp.pattern.match(node)
            if not m or (fp.check is not None and not fp.check(m)):
                continue
            if fp.family == 9:  # three projections of one input with one width make the site, not one
                x = m.kwargs.get("x")
                width = node.meta["val"].shape[1:] if "val" in node.meta else None
                group = bare if fp.name.startswith(BARE_PROJECTION) else projections
                group[(x, tuple(width) if width is not None else None)].append((node, list(m.nodes)))
                continue
            if fp.family == 5 and not one_forward(m.nodes, is_model_file):
                continue
            if _not_the_users(m.nodes, node, is_model_file):
                continue
            _add(found, fp.family, fp.name, node, m.nodes, is_model_file)
    _walked(found, gm, is_model_file)
    _qkv(found, gm, projections, bare, is_model_file)
    return list(found.values())


def _qkv(found: dict[tuple[int, Line], Site], gm: torch.fx.GraphModule,
         split: dict[tuple[torch.fx.Node, object], list[tuple[torch.fx.Node, list[torch.fx.Node]]]],
         bare: dict[tuple[torch.fx.Node, object], list[tuple[torch.fx.Node, list[torch.fx.Node]]]],
         is_model_file: Callable[[str], bool]) -> None:
    """Three projections of one input with one width: each split into heads (the patterns), or, with no split
    the patterns spell, feeding one attention (`qkv.attends`); never when only a caller makes their inputs one
    tensor (`qkv.caller_aliased`)."""
    taken: set[torch.fx.Node] = set()
    for kind, groups in (("qkv_projections", split), ("qkv_projections_attended", bare)):
        for group in groups.values():
            uniq = {id(n): (n, nodes) for n, nodes in group}
            members = sorted(uniq.values(), key=lambda t: _order(gm, t[0]))
            if len(members) < 3 or any(n in taken for _, ns in members for n in ns):
                continue
            nodes = [n for _, ns in members for n in ns]
            if torch_composed(nodes, is_model_file) or qkv.caller_aliased((ns for _, ns in members), is_model_file):
                continue
            # projections torch's multi-head attention makes from the model's weights (CLIP's AttentionPool2d
            # passes `q_proj_weight=self.q_proj.weight`): no `nn.Linear` call of the model's own to fuse
            if any(_inside_torch_attention(n, is_model_file) for n, _ in members):
                continue
            if kind != "qkv_projections" and not qkv.attends(n for n, _ in members):
                continue
            taken.update(nodes)
            _add(found, 9, kind, members[0][0], nodes, is_model_file)


def _not_the_users(nodes: Iterable[torch.fx.Node], anchor_node: torch.fx.Node,
                   is_model_file: Callable[[str], bool]) -> bool:
    """A match torch computed (`torch_composed`, `calls_sdpa`): a softmax is judged with the attention
    around it (its own match is one op, which any layer computes alone): by the call it sits in."""
    nodes = list(nodes)
    if torch_composed(nodes, is_model_file):
        return True
    line = model_line(anchor_node, is_model_file)
    if line is not None and calls_sdpa(line):
        return True
    return _inside_torch_attention(anchor_node, is_model_file)


def _inside_torch_attention(node: torch.fx.Node, is_model_file: Callable[[str], bool]) -> bool:
    """A single op (a softmax) made inside torch's multi-head attention (`F.multi_head_attention_forward`,
    reached from `nn.MultiheadAttention` or called directly)."""
    return any(f.startswith(_TORCH_NN) and fn == "multi_head_attention_forward"
               for f, _, fn in below_model(node, is_model_file) or ())


def _walked(found: dict[tuple[int, Line], Site], gm: torch.fx.GraphModule,
            is_model_file: Callable[[str], bool]) -> None:
    """Attention and rotary embedding the fixed patterns do not spell (`walks.py`): each is added where
    no site of its family is anchored at the same line, named `attention_walk` / `rope_walk`, so the
    sites only the walks count can be told apart."""
    for family, name, sites in ((10, "attention_walk", walks.attention(gm.graph)),
                                (15, "rope_walk", walks.rotary(gm.graph))):
        for anchor_node, nodes in sites:
            anchor = model_line(anchor_node, is_model_file)
            if anchor is not None and (family, anchor) in found:
                continue
            if _not_the_users(nodes, anchor_node, is_model_file):
                continue
            _add(found, family, name, anchor_node, nodes, is_model_file)


def _order(gm: torch.fx.GraphModule, node: torch.fx.Node) -> int:
    for i, n in enumerate(gm.graph.nodes):
        if n is node:
            return i
    return -1


def _in_file(node: torch.fx.Node, file: str) -> Line | None:
    """The innermost frame of `node` in `file` (the call a model line makes into a helper elsewhere)."""
    for f, line in reversed(frames(node)):
        if f == file:
            return f, line
    return None


def _add(found: dict[tuple[int, Line], Site], family: int, name: str, anchor_node: torch.fx.Node,
         nodes: Iterable[torch.fx.Node], is_model_file: Callable[[str], bool]) -> None:
    """A site anchored at its last op, in the file of its first op: a Linear in a model file followed by a
    GELU module defined in another (`self.act(h)`, with `GELUActivation.forward` in `activations.py`)
    is placed at the model file's `self.act(h)` call, with the helper's lines kept as `elsewhere`."""
    nodes = list(nodes)
    lines = [ln for n in nodes for ln in chain(n, is_model_file)]
    # where the torch layers that computed the ops were constructed (`built.py`): a conv and a BatchNorm in
    # an `nn.Sequential` are made where the model builds them, not at the line that calls the container
    lines += [n.meta["built_at"] for n in nodes if "built_at" in n.meta]
    written = [w for n in nodes if n.op == "call_function" and (w := written_at(n, is_model_file)) is not None]
    anchor = model_line(anchor_node, is_model_file)
    placed = [n for n in nodes if model_line(n, is_model_file) is not None]
    order = {n: i for i, n in enumerate(placed[0].graph.nodes)} if placed else {}
    first = min(placed, key=order.__getitem__, default=None)
    first_line = model_line(first, is_model_file) if first is not None else None
    if anchor is not None and first_line is not None and anchor[0] != first_line[0]:
        call = _in_file(anchor_node, first_line[0])
        if call is not None:
            anchor = call
            lines.append(call)
    if anchor is None:
        if not lines:
            return
        anchor = lines[-1]
    key = (family, anchor)
    if key in found:
        lines = [*found[key].lines, *lines]
        written = [*found[key].written, *written]
    found[key] = Site(family, name, anchor, tuple(sorted(set(lines))), tuple(sorted(set(written))))
