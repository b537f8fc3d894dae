"""FLOPs formulas against hand-computed values, and the shapes they read from models."""

from __future__ import annotations

import pytest

from selectlab.flops import (
    ModelShape,
    combined_shape,
    cost_record,
    inference_flops,
    llama_counts,
    metarater_inference_flops,
    metarater_training_flops,
    module_shape,
    preset_shape,
    training_flops,
)

# Meta-rater's 18M proxy (Table 11: hidden 256, 2 layers, 4 heads, 18,089,216 parameters with
# the 32,000-token Llama vocabulary, untied embeddings): the count implies an MLP width of 768.
PROXY = {"hidden_size": 256, "num_layers": 2, "num_heads": 4, "intermediate_size": 768}


def test_the_proxy_preset_has_meta_raters_parameter_count_and_hand_computed_flops():
    counts = llama_counts(256, 2, 4, 4, 768, 32000, tied=False)
    # Per layer: q, k, v, o 4 x 256^2 = 262,144; MLP 3 x 256 x 768 = 589,824; norms 512.
    assert counts.per_layer == 262_144 + 589_824 + 512
    assert counts.total == 18_089_216  # 2 x 32,000 x 256 + 2 x 852,480 + 256
    shape = preset_shape(PROXY, vocab=32000, context=1024)
    assert shape == ModelShape(18_089_216 - 8_192_000, 2, 256, 1024)
    tokens = 1_000_000
    # 6 N D = 6 x 9,897,216 x 1e6; attention 6 x 2 layers x 1,024 x 256 x 1e6.
    assert training_flops(shape, tokens) == pytest.approx(5.9383296e13 + 3.145728e12)
    assert inference_flops(shape, tokens) == pytest.approx((5.9383296e13 + 3.145728e12) / 3)
    # Meta-rater Appendix F: 6 x L x H^2 x tokens, 2 x L x H^2 x tokens.
    assert metarater_training_flops(2, 256, tokens) == 6 * 2 * 256**2 * tokens == 7.86432e11
    assert metarater_inference_flops(2, 256, tokens) == 2.62144e11


def test_the_1b3_preset_matches_table_11_and_a_tied_table_counts_as_the_projection():
    counts = llama_counts(2048, 24, 16, 16, 5504, 32000, tied=False)
    assert counts.total == 1_345_423_360  # Meta-rater Table 11
    tied = llama_counts(2048, 24, 16, 16, 5504, 32000, tied=True)
    assert tied.total == counts.total - 32000 * 2048
    assert tied.matmul == tied.total  # the shared matrix is the output product
    assert counts.matmul == counts.total - 32000 * 2048


@pytest.mark.parametrize("tied", [True, False])
def test_a_loaded_model_has_the_shape_its_preset_gives(tied):
    from transformers import LlamaForCausalLM

    from selectlab.train.model import ModelPreset, llama_config

    preset = ModelPreset(hidden_size=64, num_layers=2, num_heads=4, tie_embeddings=tied)
    model = LlamaForCausalLM(llama_config(preset, 500, 128, 0, 1))
    assert module_shape(model, 128) == preset_shape(preset, vocab=500, context=128)


def test_combined_shapes_add_weights_and_layers_and_cost_records_count_gpu_hours_on_gpus():
    a, b = ModelShape(100, 2, 8, 16), ModelShape(50, 1, 8, 32)
    assert combined_shape([a, b]) == ModelShape(150, 3, 8, 32)
    assert combined_shape([]) is None
    with pytest.raises(ValueError, match="hidden sizes"):
        combined_shape([a, ModelShape(1, 1, 4, 4)])
    gpu = cost_record("train", 1e15, seconds=7200, gpus=8, device="cuda:0", shape=a, tokens=10)
    assert gpu["gpu_hours"] == 16.0 and gpu["wall_hours"] == 2.0
    assert gpu["metarater_flops"] == 6 * 2 * 64 * 10
    cpu = cost_record("inference", 1e12, seconds=3600, gpus=2, device="cpu")
    assert cpu["gpu_hours"] == 0.0 and cpu["gpus"] == 0 and cpu["wall_hours"] == 1.0
