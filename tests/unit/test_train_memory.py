"""The plan-time GPU memory estimate of pretraining, checked three ways:

* parameters: the formula against a real transformers Llama, and against Meta-rater Table 11's
  totals for every preset of config/paper.yaml;
* model states: ZeRO's Table 1 (Rajbhandari et al. 2020): 7.5B parameters with mixed-precision
  Adam hold 120 GB of model states unsharded, 1.9 GB a GPU fully sharded over 64;
* activations: the per-layer coefficients against the bytes autograd really saves for backward
  in a small Llama (saved-tensor hooks, counting each storage once), in every precision regime,
  with and without activation checkpointing;

and the check that stops a plan: the paper presets pass with activation checkpointing on, and
a preset that cannot fit is refused with a message naming it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import yaml

from selectlab.config import load_config
from selectlab.selection import resolve as select_cfg
from selectlab.train import resolve as train_cfg
from selectlab.train.memory import (
    CHECKPOINT_BYTES,
    Launch,
    Shape,
    activation_bytes_per_token,
    estimate,
    model_state_bytes,
)

REPO = Path(__file__).resolve().parents[2]
PARTITIONS = REPO / "profiles" / "slurm" / "partitions.yaml"
PAPER = load_config(REPO / "config" / "paper.yaml")
# Meta-rater Appendix D, Table 11: "Number of Total Parameters".
TABLE_11 = {"proxy_18m": 18_089_216, "llama_178m": 178_476_928, "llama_407m": 407_020_800,
            "llama_1b3": 1_345_423_360, "llama_3b3": 3_335_989_760, "llama_7b2": 7_241_732_096}


def llama(shape: Shape, dtype=torch.float32):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=shape.vocab_size, hidden_size=shape.hidden_size,
                         intermediate_size=shape.intermediate_size,
                         num_hidden_layers=shape.num_layers, num_attention_heads=shape.num_heads,
                         num_key_value_heads=shape.num_kv_heads, max_position_embeddings=256,
                         tie_word_embeddings=shape.tie_embeddings, attn_implementation="sdpa")
    return LlamaForCausalLM(config).to(dtype)


def saved_bytes(shape: Shape, regime: str, checkpointing: bool, tokens: tuple[int, int]) -> int:
    """Bytes of every non-parameter storage autograd saves in one forward pass."""
    model = llama(shape, torch.bfloat16 if regime == "bf16" else torch.float32)
    if checkpointing:
        model.activation_checkpointing_enable(
            activation_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    ids = torch.randint(0, shape.vocab_size, tokens)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=regime == "autocast"):
            model(input_ids=ids, labels=ids)
    return sum(seen.values())


def test_parameter_formula_counts_a_real_llama():
    for shape in (Shape(64, 2, 4, 2, 160, 300, tie_embeddings=True), Shape(96, 3, 6, 6, 256, 500)):
        assert shape.parameters() == sum(p.numel() for p in llama(shape).parameters())


@pytest.mark.parametrize("preset", sorted(TABLE_11))
def test_paper_presets_have_table_11_parameter_counts(preset):
    variant = next(name for name in [*PAPER["variants"], *select_cfg.proxy_variant_names(PAPER)]
                   if train_cfg.preset_name(PAPER, name) == preset)
    assert train_cfg.model_shape(PAPER, variant).parameters() == TABLE_11[preset]


def test_model_states_match_zero_table_1():
    assert model_state_bytes(7_500_000_000, 64, sharded=False) == pytest.approx(120e9)
    assert model_state_bytes(7_500_000_000, 64, sharded=True) == pytest.approx(1.875e9)


@pytest.mark.parametrize("regime", ["bf16", "autocast", "fp32"])
@pytest.mark.parametrize("shape", [Shape(128, 3, 4, 2, 352, 1000), Shape(192, 3, 6, 6, 512, 700)])
def test_activation_coefficients_match_what_autograd_saves(regime, shape):
    tokens = (2, 64)
    one_layer = Shape(**{**shape.__dict__, "num_layers": 1})
    for checkpointing in (False, True):
        measured = (saved_bytes(shape, regime, checkpointing, tokens)
                    - saved_bytes(one_layer, regime, checkpointing, tokens)) / 2
        count = tokens[0] * tokens[1]
        if checkpointing:
            expected = count * CHECKPOINT_BYTES[regime] * shape.hidden_size
        else:
            expected = count * activation_bytes_per_token(shape, regime)
            if regime == "autocast":  # the bf16 weight copies autocast keeps for backward
                expected += 2 * (shape.layer_parameters() - 2 * shape.hidden_size)
        assert measured == pytest.approx(expected, rel=0.03), (regime, checkpointing)


def test_checkpointing_and_sharding_lower_the_estimate():
    shape = Shape(4096, 32, 32, 8, 14336, 32000)
    launch = Launch(seq_len=1024, micro_batch=16, world_size=64, accumulation_steps=2, fsdp=True,
                    activation_checkpointing=False, bf16=True)
    full = estimate(shape, launch)
    checkpointed = estimate(shape, Launch(**{**launch.__dict__, "activation_checkpointing": True}))
    unsharded = estimate(shape, Launch(**{**launch.__dict__, "fsdp": False}))
    assert checkpointed.parts["activations"] < full.parts["activations"] / 10
    assert unsharded.parts["model states"] == 64 * full.parts["model states"]
    assert full.peak_bytes > 80 * 2**30 > checkpointed.peak_bytes


def all_variants(config: dict) -> list[str]:
    return [*config["variants"], *select_cfg.proxy_variant_names(config)]


def test_paper_presets_fit_80gb_gpus_with_activation_checkpointing():
    assert PAPER["pretrain"]["activation_checkpointing"] is True
    needed = {train_cfg.checked_gpu_memory_mb(PAPER, name, str(PARTITIONS))
              for name in all_variants(PAPER)}
    assert max(needed) < 81920


def test_a_preset_that_cannot_fit_stops_the_plan_with_a_clear_message():
    config = copy.deepcopy(PAPER)
    config["pretrain"]["activation_checkpointing"] = False
    with pytest.raises(ValueError) as refused:
        train_cfg.checked_gpu_memory_mb(config, "uniform_7b2_150b", str(PARTITIONS))
    message = str(refused.value)
    assert "'uniform_7b2_150b' (preset 'llama_7b2')" in message
    assert "activation checkpointing off" in message and "partition 'gpu'" in message
    assert "80.0 GiB GPUs" in message and "pretrain.activation_checkpointing" in message
    # Without a partition file (a local run) nothing is checked.
    assert train_cfg.checked_gpu_memory_mb(config, "uniform_7b2_150b", None) > 81920


def test_partition_file_problems_are_named(tmp_path):
    def partition_file(name: str, content: dict) -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(content))
        return str(path)

    gpu = {"partitions": {"gpu": {"max_gpu": 8, "max_nodes": 8}}}
    with pytest.raises(ValueError, match="'gpu' has GPUs but no gpu_memory_mb"):
        train_cfg.checked_gpu_memory_mb(PAPER, "uniform", partition_file("undeclared", gpu))
    misspelt = gpu | {"gpu_memory_mb": {"gpu": 40960, "a100": 1}}
    with pytest.raises(ValueError, match=r"does not list: \['a100'\]"):
        train_cfg.checked_gpu_memory_mb(PAPER, "uniform", partition_file("misspelt", misspelt))
    small = {"partitions": {"gpu": {"max_gpu": 4}}, "gpu_memory_mb": {"gpu": 40960}}
    with pytest.raises(ValueError, match="no partition in .* can take its pretraining job"):
        train_cfg.checked_gpu_memory_mb(PAPER, "uniform", partition_file("small", small))


def test_global_batch_must_split_evenly_over_micro_batches_and_gpus():
    config = copy.deepcopy(PAPER)
    config["pretrain"]["micro_batch_sequences"] = 48
    with pytest.raises(ValueError, match="not a multiple of micro_batch_sequences 48 x 8 GPUs"):
        train_cfg.launch_plan(config, "uniform")
