"""Family 2: `T5Attention` served by `scaled_dot_product_attention` through a synthesized subclass."""

from __future__ import annotations

from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.attention_subclass import SubclassSpec, rewrite_with_subclass

# T5 does not scale the scores (scale 1.0) and adds the relative position bias (plus the padding
# mask folded into it) before the softmax: that sum is exactly SDPA's additive float mask. The
# position bias is still returned, since the next layers reuse it.
TEMPLATE = '''
class {name}(__BASE__):
    """`__BASE__` computed with `scaled_dot_product_attention`.

    Added by Adopter (rule __RULE__). Same parameters as the base class, so its checkpoints load
    unchanged. The position bias is the additive mask, with scale 1.0; head masks and returned
    attention weights take the eager path.
    """

    def forward(
        self,
        hidden_states,
        mask=None,
        key_value_states=None,
        position_bias=None,
        past_key_value=None,
        layer_head_mask=None,
        query_length=None,
        use_cache=False,
        output_attentions=False,
    ):
        if layer_head_mask is not None or output_attentions:
            return super().forward(
                hidden_states,
                mask,
                key_value_states,
                position_bias,
                past_key_value,
                layer_head_mask,
                query_length,
                use_cache,
                output_attentions,
            )
        batch_size, seq_length = hidden_states.shape[:2]
        real_seq_length = seq_length
        if past_key_value is not None:
            if len(past_key_value) != 2:
                raise ValueError(
                    f"past_key_value should have 2 past states: keys and values. Got {len(past_key_value)} past states"
                )
            real_seq_length += past_key_value[0].shape[2] if query_length is None else query_length
        key_length = real_seq_length if key_value_states is None else key_value_states.shape[1]

        def shape(states):
            return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        def project(hidden_states, proj_layer, key_value_states, past_key_value):
            if key_value_states is None:
                hidden_states = shape(proj_layer(hidden_states))
            elif past_key_value is None:
                hidden_states = shape(proj_layer(key_value_states))
            if past_key_value is not None:
                if key_value_states is None:
                    hidden_states = __TORCH__.cat([past_key_value, hidden_states], dim=2)
                elif past_key_value.shape[2] != key_value_states.shape[1]:
                    hidden_states = shape(proj_layer(key_value_states))
                else:
                    hidden_states = past_key_value
            return hidden_states

        query_states = shape(self.q(hidden_states))
        key_states = project(
            hidden_states, self.k, key_value_states, past_key_value[0] if past_key_value is not None else None
        )
        value_states = project(
            hidden_states, self.v, key_value_states, past_key_value[1] if past_key_value is not None else None
        )

        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = __TORCH__.zeros(
                    (1, self.n_heads, real_seq_length, key_length),
                    device=query_states.device,
                    dtype=query_states.dtype,
                )
                if self.gradient_checkpointing and self.training:
                    position_bias.requires_grad = True
            else:
                position_bias = self.compute_bias(real_seq_length, key_length, device=query_states.device)
            if past_key_value is not None:
                position_bias = position_bias[:, :, -hidden_states.size(1) :, :]
            if mask is not None:
                position_bias = position_bias + mask

        if self.pruned_heads:
            kept = __TORCH__.ones(position_bias.shape[1])
            kept[list(self.pruned_heads)] = 0
            position_bias_masked = position_bias[:, kept.bool()]
        else:
            position_bias_masked = position_bias

        attn_output = __TORCH__.nn.functional.scaled_dot_product_attention(
            query_states,
            key_states,
            value_states,
            attn_mask=position_bias_masked.to(query_states.dtype),
            dropout_p=self.dropout if self.training else 0.0,
            scale=1.0,
        )
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)
        attn_output = self.o(attn_output)
        present_key_value_state = (key_states, value_states) if (self.is_decoder and use_cache) else None
        return (attn_output, present_key_value_state, position_bias)
'''

SPEC = SubclassSpec(
    base="T5Attention",
    prefix="Sdpa",
    template=TEMPLATE,
    forward_params=(
        "self",
        "hidden_states",
        "mask",
        "key_value_states",
        "position_bias",
        "past_key_value",
        "layer_head_mask",
        "query_length",
        "use_cache",
        "output_attentions",
    ),
    methods=("compute_bias",),
    attributes=(
        "q",
        "k",
        "v",
        "o",
        "n_heads",
        "key_value_proj_dim",
        "inner_dim",
        "dropout",
        "has_relative_attention_bias",
        "pruned_heads",
        "gradient_checkpointing",
        "is_decoder",
    ),
)


@strategy("sdpa_t5_attention")
def sdpa_t5_attention(ctx: SynthContext) -> None:
    """Bind the attention submodule to an SDPA subclass of `T5Attention`."""
    rewrite_with_subclass(ctx, SPEC)
