"""Family 1: `BertSelfAttention` served by `scaled_dot_product_attention` through a synthesized subclass."""

from __future__ import annotations

from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.attention_subclass import SubclassSpec, rewrite_with_subclass

# The subclass keeps every parameter of the base (no __init__ of its own), so `state_dict()` is
# unchanged and checkpoints load with strict=True. What SDPA cannot express (relative position
# scores added before the softmax, a head mask multiplying the probabilities, returned
# probabilities) takes the base class's eager path.
TEMPLATE = '''
class {name}(__BASE__):
    """`__BASE__` computed with `scaled_dot_product_attention`.

    Added by Adopter (rule __RULE__). Same parameters as the base class, so its checkpoints load
    unchanged. Relative position embeddings, head masks and returned attention probabilities
    take the base class's eager path.
    """

    def forward(
        self,
        hidden_states,
        attention_mask=None,
        head_mask=None,
        encoder_hidden_states=None,
        encoder_attention_mask=None,
        past_key_value=None,
        output_attentions=False,
    ):
        if self.position_embedding_type != "absolute" or head_mask is not None or output_attentions:
            return super().forward(
                hidden_states,
                attention_mask,
                head_mask,
                encoder_hidden_states,
                encoder_attention_mask,
                past_key_value,
                output_attentions,
            )
        is_cross_attention = encoder_hidden_states is not None
        if is_cross_attention and past_key_value is not None:
            key_layer = past_key_value[0]
            value_layer = past_key_value[1]
            attention_mask = encoder_attention_mask
        elif is_cross_attention:
            key_layer = self.transpose_for_scores(self.key(encoder_hidden_states))
            value_layer = self.transpose_for_scores(self.value(encoder_hidden_states))
            attention_mask = encoder_attention_mask
        elif past_key_value is not None:
            key_layer = __TORCH__.cat([past_key_value[0], self.transpose_for_scores(self.key(hidden_states))], dim=2)
            value_layer = __TORCH__.cat([past_key_value[1], self.transpose_for_scores(self.value(hidden_states))], dim=2)
        else:
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(self.query(hidden_states))

        # The default scale of SDPA is 1/sqrt(head size), the one the eager path divides by.
        context_layer = __TORCH__.nn.functional.scaled_dot_product_attention(
            query_layer,
            key_layer,
            value_layer,
            attn_mask=attention_mask,
            dropout_p=self.dropout.p if self.training else 0.0,
        )
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))
        if self.is_decoder:
            return (context_layer, (key_layer, value_layer))
        return (context_layer,)
'''

SPEC = SubclassSpec(
    base="BertSelfAttention",
    prefix="Sdpa",
    template=TEMPLATE,
    forward_params=(
        "self",
        "hidden_states",
        "attention_mask",
        "head_mask",
        "encoder_hidden_states",
        "encoder_attention_mask",
        "past_key_value",
        "output_attentions",
    ),
    methods=("transpose_for_scores",),
    attributes=("query", "key", "value", "dropout", "position_embedding_type", "all_head_size", "is_decoder"),
)


@strategy("sdpa_bert_self_attention")
def sdpa_bert_self_attention(ctx: SynthContext) -> None:
    """Bind the attention submodule to an SDPA subclass of `BertSelfAttention`."""
    rewrite_with_subclass(ctx, SPEC)
