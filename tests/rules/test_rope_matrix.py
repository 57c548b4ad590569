"""Family 15 as a 2x2 rotation matrix per pair (DiffSynth-Studio 2.1.12's Flux `apply_rope`): one finding per q/k
pair at q's statement, none for a 2-D dot product of the same shape whose factor is not a cos/sin table."""

from __future__ import annotations

from attention_harness import findings_of, rules_of

RULES = rules_of("f15-rope-forms")

# diffsynth/models/flux_dit.py, FluxJointAttention.apply_rope (lines 65-70) verbatim, called from a forward;
# `Overlap` is the near form (box geometry: `a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]`).
SOURCE = '''
import torch


class FluxJointAttention(torch.nn.Module):
    def apply_rope(self, xq, xk, freqs_cis):
        xq_ = xq.float().reshape(*xq.shape[:-1], -1, 1, 2)
        xk_ = xk.float().reshape(*xk.shape[:-1], -1, 1, 2)
        xq_out = freqs_cis[..., 0] * xq_[..., 0] + freqs_cis[..., 1] * xq_[..., 1]
        xk_out = freqs_cis[..., 0] * xk_[..., 0] + freqs_cis[..., 1] * xk_[..., 1]
        return xq_out.reshape(*xq.shape).type_as(xq), xk_out.reshape(*xk.shape).type_as(xk)

    def forward(self, q, k, image_rotary_emb):
        q, k = self.apply_rope(q, k, image_rotary_emb)
        return torch.nn.functional.scaled_dot_product_attention(q, k, k)


class Overlap(torch.nn.Module):
    def forward(self, boxes, anchors, centres):
        a = boxes.reshape(*boxes.shape[:-1], -1, 2)
        c = centres.reshape(*centres.shape[:-1], -1, 2)
        ab = anchors[..., 0] * a[..., 0] + anchors[..., 1] * a[..., 1]
        cb = anchors[..., 0] * c[..., 0] + anchors[..., 1] * c[..., 1]
        return ab, cb
'''


def test_one_finding_per_pair_at_the_q_statement_and_none_for_a_dot_product() -> None:
    found = [(f.rule_id, f.span.start_line + 1, f.fixable) for f in findings_of(SOURCE, RULES)]
    assert found == [("f15-rope-matrix", 9, False)]
