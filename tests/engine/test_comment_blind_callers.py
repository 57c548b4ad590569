"""A commented-out call of a layer builder does not hide what the real calls pass (issue 20):
`self_call_arguments` (`adopter.analysis.chains.call_arguments`) counts the `self.<method>` of the class's code,
not of its comments. Shaped on pretrainedmodels 0.7.4, `pretrainedmodels/models/cafferesnet.py` lines 111-115
(`self.layer4 = self._make_layer(block, 512, layers[3], stride=2)` followed by `# self.layer4 =
self._make_layer(block, 512, layers[3], stride=1)`), and doclayout-yolo's `nn/modules/modeling/backbone/resnet.py`
line 71 (the same commented-out stage): on a4c764f1 the comment made the calls look used otherwise, and the
block the calls name was not read."""

from __future__ import annotations

from .test_passed_to_callers import RESNET, expect, statements

NAMED = RESNET.replace("self._make_layer(block, ", "self._make_layer(Bottleneck, ")
LAST = "        self.layer2 = self._make_layer(Bottleneck, 128, layers[1], stride=2)\n"


def test_a_commented_out_stage_leaves_the_calls_read() -> None:
    code = NAMED.replace(LAST, LAST + "        # self.layer3 = self._make_layer(Bottleneck, 256, layers[2], stride=1)\n")
    assert statements(code) == expect(code, "# bottleneck")


def test_refusal_a_stage_written_otherwise_than_as_such_a_call() -> None:
    """The nearest look-alike in code: `self._make_layer` used other than as a call (passed on) leaves the
    chain's own statements only, as before."""
    code = NAMED.replace(LAST, LAST + "        self.maker = self._make_layer\n")
    assert statements(code) == expect(code)


def test_a_comment_naming_the_parent_forward_is_no_second_call() -> None:
    """`chains.sequential_classes._inherited_forward` counts the mentions of Sequential's forward in the body's
    code: a comment naming the call (the form of the census's comments naming a call in a forward, 144 places in
    42 dev packages, in `test_sequential_inherited_forward.py`'s DenseNet layer) is not a second call."""
    from .test_sequential_inherited_forward import CALL, DENSE_LAYER, conv_bn

    code = DENSE_LAYER.replace(CALL, CALL + "        # super().forward(x) ran the chain once\n")
    assert len(conv_bn(code)) == len(conv_bn(DENSE_LAYER)) == 1
