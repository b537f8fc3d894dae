"""Model presets against the papers: every full-scale preset has the parameter count Meta-rater's
Table 11 gives (the 1.3B one is also QuRating's and DataMan's Sheared-LLaMA-1.3B), and the
Meta-rater rows train with Meta-rater's own settings (Appendix D)."""

from __future__ import annotations

from pathlib import Path

import pytest

from selectlab.config import load_config
from selectlab.selection import resolve as selection
from selectlab.train import resolve as train
from selectlab.train.model import ModelPreset, llama_config, parameter_count

REPO = Path(__file__).resolve().parents[2]
LLAMA_VOCAB = 32_000  # Meta-rater Appendix D: the LLaMA tokenizer, vocabulary 32,000
# Meta-rater Table 11 "Number of Total Parameters"; the 46M proxy of section 5.1 ("we expand the
# model size from 18M to 46M parameters") is given to two significant figures only.
TABLE_11 = {"proxy_18m": 18_089_216, "llama_178m": 178_476_928, "llama_407m": 407_020_800,
            "llama_1b3": 1_345_423_360, "llama_3b3": 3_335_989_760, "llama_7b2": 7_241_732_096}
ROUNDED = {"proxy_46m": 46_000_000}
# Table 11 shapes: hidden size, layers, attention heads, KV heads
SHAPES = {"proxy_18m": (256, 2, 4, 4), "proxy_46m": (512, 4, 8, 8), "llama_178m": (896, 12, 7, 7),
          "llama_407m": (1280, 16, 10, 10), "llama_1b3": (2048, 24, 16, 16),
          "llama_3b3": (2560, 40, 20, 20), "llama_7b2": (4096, 32, 32, 8)}


def paper_presets() -> dict[str, ModelPreset]:
    config = load_config(REPO / "config" / "paper.yaml")
    return {name: ModelPreset.from_dict(p) for name, p in config["models"]["presets"].items()}


def test_every_paper_preset_is_a_table_11_model():
    assert set(paper_presets()) == set(TABLE_11) | set(ROUNDED)


@pytest.mark.parametrize("name", sorted(TABLE_11))
def test_preset_parameter_count_matches_table_11(name):
    preset = paper_presets()[name]
    hidden, layers, heads, kv_heads = SHAPES[name]
    assert (preset.hidden_size, preset.num_layers, preset.num_heads,
            preset.num_kv_heads or preset.num_heads) == (hidden, layers, heads, kv_heads)
    count = parameter_count(preset, LLAMA_VOCAB)
    assert abs(count - TABLE_11[name]) <= 0.005 * TABLE_11[name]
    assert count == TABLE_11[name]  # the widths are the ones the exact counts imply


def test_the_46m_proxy_rounds_to_the_papers_46m():
    preset = paper_presets()["proxy_46m"]
    assert SHAPES["proxy_46m"][:2] == (preset.hidden_size, preset.num_layers)
    count = parameter_count(preset, LLAMA_VOCAB)
    assert round(count / 1e6) == 46
    # same MLP ratio as the 18M proxy it scales up
    proxy = paper_presets()["proxy_18m"]
    assert preset.mlp_width() / preset.hidden_size == proxy.mlp_width() / proxy.hidden_size


@pytest.mark.parametrize("preset", [
    ModelPreset(hidden_size=64, num_layers=2, num_heads=4, tie_embeddings=True),
    ModelPreset(hidden_size=96, num_layers=3, num_heads=6, num_kv_heads=2, intermediate_size=200),
])
def test_parameter_count_is_what_transformers_builds(preset):
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(llama_config(preset, vocab_size=500, context=64, eos_id=0, pad_id=1))
    assert parameter_count(preset, 500) == sum(p.numel() for p in model.parameters())


def test_metarater_rows_train_with_metarater_settings_and_proxies_on_half_a_billion_tokens():
    config = load_config(REPO / "config" / "paper.yaml")
    metarater_families = {"metarater_baseline", "metarater", "metarater_combination",
                          "metarater_proxies", "metarater_ablation", "scale"}
    rows = [n for n, v in config["variants"].items() if v["family"] in metarater_families]
    proxies = [name for search in selection.metarater_searches(config)
               for name in selection.proxy_names(config, search)[:2]]
    assert len(rows) > 20
    for name in rows + proxies:
        settings = train.resolve_pretrain(config, name)["settings"]
        # Appendix D: a global batch of 4,194,304 tokens, learning rate 5e-5, Adam (0.9, 0.95)
        assert settings["global_batch_sequences"] * settings["seq_len"] == 4_194_304, name
        assert settings["lr"] == 5.0e-5, name
        assert (settings["beta1"], settings["beta2"]) == (0.9, 0.95)
    for name in proxies:
        assert selection.resolve_selection(config, name)["budget_tokens"] == 500_000_000  # Table 11
    # Table 11's consumed tokens of the scale rows (Tables 3 and 14)
    tokens = {"llama_178m": 3e9, "llama_407m": 6e9, "llama_3b3": 100e9, "llama_7b2": 150e9}
    scale = [n for n in rows if config["variants"][n]["family"] == "scale"]
    assert len(scale) == 8
    for name in scale:
        budget = selection.resolve_selection(config, name)["budget_tokens"]
        assert budget == tokens[train.preset_name(config, name)], name


def test_qurating_and_dataman_rows_keep_their_own_batch_and_learning_rate():
    config = load_config(REPO / "config" / "paper.yaml")
    for name, variant in config["variants"].items():
        if variant["family"] in ("qurating", "dataman", "dataman_level", "baseline"):
            settings = train.resolve_pretrain(config, name)["settings"]
            # QuRating section 5.1 / DataMan Appendix C: 2,048 sequences, 5e-4 cosine to 5e-5
            assert settings["global_batch_sequences"] == 2048 and settings["lr"] == 5.0e-4
            assert settings["lr"] * settings["min_lr_ratio"] == pytest.approx(5.0e-5)
            assert train.preset_name(config, name) == "llama_1b3"
