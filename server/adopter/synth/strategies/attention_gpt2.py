"""Family 3: `GPT2Attention` served by `scaled_dot_product_attention` through a synthesized subclass."""

from __future__ import annotations

from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.attention_subclass import SubclassSpec, rewrite_with_subclass

# Causal self-attention uses `is_causal` when no padding mask is given and the query covers every
# key (no cache); otherwise the slice of the causal `bias` buffer the eager path uses becomes part of
# the additive mask. Head masks, returned weights and the upcast/reordered variant stay eager.
TEMPLATE = '''
class {name}(__BASE__):
    """`__BASE__` computed with `scaled_dot_product_attention`.

    Added by Adopter (rule __RULE__). Same parameters and buffers as the base class, so its
    checkpoints load unchanged. Head masks, returned attention weights and
    `reorder_and_upcast_attn` take the base class's eager path.
    """

    def forward(
        self,
        hidden_states,
        layer_past=None,
        attention_mask=None,
        head_mask=None,
        encoder_hidden_states=None,
        encoder_attention_mask=None,
        use_cache=False,
        output_attentions=False,
    ):
        if (
            head_mask is not None
            or output_attentions
            or self.reorder_and_upcast_attn
            or (encoder_hidden_states is not None and not hasattr(self, "q_attn"))
        ):
            return super().forward(
                hidden_states,
                layer_past,
                attention_mask,
                head_mask,
                encoder_hidden_states,
                encoder_attention_mask,
                use_cache,
                output_attentions,
            )
        if encoder_hidden_states is not None:
            query = self.q_attn(hidden_states)
            key, value = self.c_attn(encoder_hidden_states).split(self.split_size, dim=2)
            attention_mask = encoder_attention_mask
        else:
            query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        if layer_past is not None:
            past_key, past_value = layer_past
            key = __TORCH__.cat((past_key, key), dim=-2)
            value = __TORCH__.cat((past_value, value), dim=-2)
        present = (key, value) if use_cache is True else None

        scale = 1.0
        if self.scale_attn_weights:
            scale = scale / value.size(-1) ** 0.5
        if self.scale_attn_by_inverse_layer_idx:
            scale = scale / float(self.layer_idx + 1)
        is_causal = False
        if not self.is_cross_attention:
            query_length, key_length = query.size(-2), key.size(-2)
            if attention_mask is None and query_length == key_length:
                is_causal = True
            else:
                causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
                causal_bias = __TORCH__.zeros(causal_mask.shape, dtype=query.dtype, device=query.device)
                causal_bias = causal_bias.masked_fill(~causal_mask, __TORCH__.finfo(query.dtype).min)
                attention_mask = causal_bias if attention_mask is None else causal_bias + attention_mask
        attn_output = __TORCH__.nn.functional.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=attention_mask,
            dropout_p=self.attn_dropout.p if self.training else 0.0,
            is_causal=is_causal,
            scale=scale,
        )
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)
        return (attn_output, present)
'''

SPEC = SubclassSpec(
    base="GPT2Attention",
    prefix="Sdpa",
    template=TEMPLATE,
    forward_params=(
        "self",
        "hidden_states",
        "layer_past",
        "attention_mask",
        "head_mask",
        "encoder_hidden_states",
        "encoder_attention_mask",
        "use_cache",
        "output_attentions",
    ),
    methods=("_split_heads", "_merge_heads"),
    attributes=(
        "c_attn",
        "c_proj",
        "attn_dropout",
        "resid_dropout",
        "bias",
        "split_size",
        "num_heads",
        "head_dim",
        "scale_attn_weights",
        "scale_attn_by_inverse_layer_idx",
        "layer_idx",
        "reorder_and_upcast_attn",
        "is_cross_attention",
    ),
)


@strategy("sdpa_gpt2_attention")
def sdpa_gpt2_attention(ctx: SynthContext) -> None:
    """Bind the attention submodule to an SDPA subclass of `GPT2Attention`."""
    rewrite_with_subclass(ctx, SPEC)
