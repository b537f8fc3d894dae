"""Model presets -> transformers `LlamaConfig`.

Presets are named in config (`models.presets`) with the shapes of Meta-rater's Table 11 at full
scale; the MLP width defaults to 8/3 of the hidden size rounded up to a multiple of 64, as in
Llama-style models.
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
