"""Model presets -> transformers `LlamaConfig`.

Presets are named in config (`models.presets`) with the shapes of Meta-rater's Table 11 at full
scale. Table 11 gives each model's exact parameter count, and with untied input and output
embeddings of the 32,000-token Llama vocabulary those counts fix the MLP width of every model
(768 for the 18M proxy, 14,336 for the 7.2B model, ...): the paper's "MLP ratio 8/3" is not what
its counts imply, so the full-scale presets state `intermediate_size`. Without it the width is
8/3 of the hidden size rounded up to a multiple of 64, as in Llama-style models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelPreset:
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int | None = None
    intermediate_size: int | None = None
    tie_embeddings: bool = False
    rope_theta: float = 10000.0

    @classmethod
    def from_dict(cls, params: dict) -> ModelPreset:
        """The architecture fields of a config preset (`fsdp` and `resources` say how it is
        trained, not what it is)."""
        fields = {k: params[k] for k in cls.__dataclass_fields__ if k in params}
        return cls(**fields)

    def mlp_width(self) -> int:
        if self.intermediate_size:
            return self.intermediate_size
        return int(math.ceil(self.hidden_size * 8 / 3 / 64) * 64)


def llama_config(preset: ModelPreset, vocab_size: int, context: int, eos_id: int, pad_id: int):
    from transformers import LlamaConfig

    if preset.hidden_size % preset.num_heads:
        raise ValueError(f"hidden_size {preset.hidden_size} is not divisible by "
                         f"num_heads {preset.num_heads}")
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=preset.hidden_size,
        intermediate_size=preset.mlp_width(),
        num_hidden_layers=preset.num_layers,
        num_attention_heads=preset.num_heads,
        num_key_value_heads=preset.num_kv_heads or preset.num_heads,
        max_position_embeddings=context,
        rope_theta=preset.rope_theta,
        tie_word_embeddings=preset.tie_embeddings,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
    )


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def parameter_count(preset: ModelPreset, vocab_size: int) -> int:
    """Parameters of the `LlamaForCausalLM` that `llama_config` builds, without building it:
    embeddings (twice when untied), per layer the attention projections, the gated MLP and two
    RMSNorm weights, and the final norm."""
    hidden, kv_heads = preset.hidden_size, preset.num_kv_heads or preset.num_heads
    head_dim = hidden // preset.num_heads
    attention = 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim
    layer = attention + 3 * hidden * preset.mlp_width() + 2 * hidden
    embeddings = vocab_size * hidden * (1 if preset.tie_embeddings else 2)
    return embeddings + preset.num_layers * layer + hidden
