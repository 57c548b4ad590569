"""BatchNorm subclasses whose `forward` is the plain BatchNorm of its input in eval mode: a BatchNorm for family 7.

Synchronised and split BatchNorms (vacancy's `SynchronizedBatchNorm2d`, copied into many repositories;
pytorchvideo's `NaiveSyncBatchNorm2d`; timm's `SplitBatchNorm2d`) change how the statistics are gathered while
training and fall back to the torch BatchNorm otherwise:

    class _SynchronizedBatchNorm(_BatchNorm):
        def forward(self, input):
            if not (self._is_parallel and self.training):
                return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                    self.training, self.momentum, self.eps)
            ...  # gather the batch statistics across devices

In eval mode (`self.training` false) such a module is the BatchNorm of its running statistics, so a convolution
followed by one is a convolution followed by a BatchNorm. `eval_norm` reads the forward (Python's `ast`): the
statements the eval path runs, after BatchNorm's bookkeeping, are one `return` of the norm of the input as it
came in (`crossfile.norm_act`'s reading: `F.batch_norm` of the module's own statistics, `super().forward(x)`). An
`if` whose test is true whenever the module is not training (`not self.training`, `A or not self.training`,
`not (A and self.training)`) puts the eval path in its body; one whose test is false then (`self.training`,
`self.training and A`) puts it after the `if`. Any other test (`self.training or not self.track_running_stats`:
eval mode alone does not decide it) is refused, as is a forward that rebinds the input on the eval path.

The base may be a torch BatchNorm or torch's rank-free `_BatchNorm`; the latter is bound as `nn.SyncBatchNorm`,
torch's rank-free BatchNorm. Training differs from the torch layer (that is the class's point), so the sites
have no automatic fix (`EVAL_NORM`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from adopter.analysis.crossfile.norm_act import BATCH_NORMS, _bookkeeping, _norm_of

EVAL_NORM = "; its forward is the BatchNorm in eval mode only"  # suffix of `Ctor.origin`: no automatic fix
RANK_FREE = frozenset({"torch.nn.modules.batchnorm._BatchNorm", "torch.nn._BatchNorm"})
_RANK_FREE_LAYER = "torch.nn.SyncBatchNorm"  # the torch BatchNorm of any rank a `_BatchNorm` subclass is bound as


def eval_norm(cls: ast.ClassDef, base: str, qualify: Callable[[str], str]) -> str | None:
    """The torch BatchNorm the `forward` of `cls` (a subclass of the qualified `base`) computes in eval mode, when
    that is all its eval path does (see the module's doc), else None."""
    layer = _RANK_FREE_LAYER if base in RANK_FREE else base
    if layer not in BATCH_NORMS:
        return None
    forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    if forward is None:
        return None
    params = [a.arg for a in forward.args.posonlyargs + forward.args.args]
    if len(params) != 2 or forward.args.vararg or forward.args.kwonlyargs or forward.args.kwarg:
        return None
    self_name, x = params
    body = [s for s in forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return layer if _eval_path_norms(body, x, self_name, base, qualify) else None


def _eval_path_norms(body: list[ast.stmt], x: str, self_name: str, base: str, qualify: Callable[[str], str]) -> bool:
    """Whether the statements `body` run in eval mode are bookkeeping, then `return` the norm of `x`."""
    for at, stmt in enumerate(body):
        if isinstance(stmt, ast.Return):
            return stmt.value is not None and _returns_norm(stmt.value, x, self_name, base, qualify)
        if isinstance(stmt, ast.If):
            when_eval = _when_eval(stmt.test, self_name)
            if when_eval is True:
                return _eval_path_norms(stmt.body, x, self_name, base, qualify)
            if when_eval is False:
                return _eval_path_norms(stmt.orelse + body[at + 1:], x, self_name, base, qualify)
        if not _bookkeeping(stmt, x):
            return False
    return False  # no `return` on the eval path


def _returns_norm(value: ast.expr, x: str, self_name: str, base: str, qualify: Callable[[str], str]) -> bool:
    stmt = ast.Assign(targets=[ast.Name(id="_", ctx=ast.Store())], value=value)
    return _norm_of(stmt, x, self_name, base, qualify) is not None


def _when_eval(test: ast.expr, self_name: str) -> bool | None:
    """The value of `test` whenever `self.training` is false, when that alone decides it, else None."""
    if isinstance(test, ast.Attribute) and test.attr == "training" and _is_name(test.value, self_name):
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _when_eval(test.operand, self_name)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_when_eval(v, self_name) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in values else None  # `self.training and A`: false in eval mode
        return True if True in values else None  # `A or not self.training`: true in eval mode
    return None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
