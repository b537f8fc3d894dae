"""How a pretraining job runs (launch settings) and whether it fits its GPUs (plan time).

`selectlab.config.resolve_pretrain` gives what a variant learns (its job's params: a change
retrains it). This module gives how it runs: GPUs and nodes (the model preset's `resources`),
micro-batch, activation checkpointing and FSDP. None of these change the model, so the rule
passes them as resources, which Snakemake does not compare when deciding what to rerun, and the
checkpoint hash leaves them out (train/checkpoints.py): resizing a preset resumes its models.

At plan time every pretraining job's peak GPU memory (train/memory.py) is checked against the
GPUs of each partition the slurm plugin could send it to, as declared in the profile's
partition file under `gpu_memory_mb`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from selectlab import config as cfg
from selectlab.train.memory import GIB, Estimate, Launch, Shape, estimate
from selectlab.train.model import ModelPreset

# Meta-rater Appendix D: the LLaMA tokenizer, 32,000 entries. Used for pretrained tokenizers,
# whose size is not in the config.
PRETRAINED_VOCAB_SIZE = 32000


def preset(config: dict, variant: str) -> dict:
    return config["models"]["presets"][cfg.preset_name(config, variant)]


def preset_resources(config: dict, variant: str) -> dict:
    return preset(config, variant).get("resources", {})


def resolve_launch(config: dict, variant: str) -> dict:
    """`selectlab pretrain --launch`: micro-batch, activation checkpointing, FSDP."""
    settings = cfg.merged_pretrain(config, variant)
    return {"micro_batch_sequences": int(settings["micro_batch_sequences"]),
            "activation_checkpointing": bool(settings.get("activation_checkpointing", False)),
            "fsdp": bool(preset(config, variant).get("fsdp", False))}


def launch_arguments(config: dict, variant: str) -> str:
    """The pretrain command's launch options, as one shell-quoted string."""
    resources = preset_resources(config, variant)
    launch = json.dumps(resolve_launch(config, variant), sort_keys=True, separators=(",", ":"))
    return (f"--launch '{launch}' --gpus {int(resources.get('gpu', 0))}"
            f" --nodes {int(resources.get('nodes', 1))}")


def vocab_size(config: dict) -> int:
    tokenizer = config["tokenizer"]
    return int(tokenizer["vocab_size"]) if tokenizer["kind"] == "train_bpe" else (
        PRETRAINED_VOCAB_SIZE)


def model_shape(config: dict, variant: str) -> Shape:
    model = ModelPreset.from_dict(preset(config, variant))
    return Shape(hidden_size=model.hidden_size, num_layers=model.num_layers,
                 num_heads=model.num_heads, num_kv_heads=model.num_kv_heads or model.num_heads,
                 intermediate_size=model.mlp_width(), vocab_size=vocab_size(config),
                 tie_embeddings=model.tie_embeddings)


def world_size(config: dict, variant: str) -> int:
    resources = preset_resources(config, variant)
    return max(int(resources.get("gpu", 0)), 1) * int(resources.get("nodes", 1))


def launch_plan(config: dict, variant: str) -> Launch:
    settings, launch = cfg.merged_pretrain(config, variant), resolve_launch(config, variant)
    world, micro = world_size(config, variant), launch["micro_batch_sequences"]
    batch = int(settings["global_batch_sequences"])
    if batch % (micro * world):
        raise ValueError(f"variant {variant!r}: the global batch of {batch} sequences is not a "
                         f"multiple of micro_batch_sequences {micro} x {world} GPUs")
    return Launch(seq_len=int(settings["seq_len"]), micro_batch=micro, world_size=world,
                  accumulation_steps=batch // (micro * world), fsdp=launch["fsdp"],
                  activation_checkpointing=launch["activation_checkpointing"],
                  bf16=settings.get("dtype", "bf16") == "bf16")


def memory_estimate(config: dict, variant: str) -> Estimate:
    return estimate(model_shape(config, variant), launch_plan(config, variant))


@dataclass(frozen=True)
class Partition:
    name: str
    limits: dict
    gpu_memory_mb: int | None

    def takes(self, resources: dict) -> bool:
        """Whether the slurm plugin could send a pretraining job with `resources` here."""
        limits, gpus = self.limits, int(resources.get("gpu", 0))
        models = limits.get("available_gpu_models")
        checks = [
            gpus <= limits.get("max_gpu", 0),
            not resources.get("gpu_model") or not models or resources["gpu_model"] in models,
            int(resources.get("nodes", 1)) <= limits.get("max_nodes", float("inf")),
            int(resources.get("mem_mb", 0)) <= limits.get("max_mem_mb", float("inf")),
            int(resources.get("cpus_per_gpu", 0)) <= limits.get("max_cpus_per_gpu", float("inf")),
            not isinstance(limits.get("max_runtime"), int | float)
            or int(resources.get("runtime", 0)) <= limits["max_runtime"],
        ]
        return all(checks)


@functools.cache
def read_partitions(path: str) -> tuple[Partition, ...]:
    """The partitions of the slurm profile's partition file, with `gpu_memory_mb` (a top-level
    mapping from partition to the memory of one of its GPUs, the smallest where they differ)."""
    content = yaml.safe_load(Path(path).read_text()) or {}
    memory = content.get("gpu_memory_mb", {}) or {}
    unknown = set(memory) - set(content.get("partitions", {}))
    if unknown:
        raise ValueError(f"{path}: gpu_memory_mb names partitions it does not list: "
                         f"{sorted(unknown)}")
    return tuple(Partition(name, dict(limits or {}), memory.get(name))
                 for name, limits in content.get("partitions", {}).items())


def checked_gpu_memory_mb(config: dict, variant: str, partition_file: str | None) -> int | None:
    """A pretraining job's estimated peak GPU memory per process (MB), after checking it
    against every partition of `partition_file` that could run it (no check without one);
    None for a job without GPUs."""
    resources = preset_resources(config, variant)
    if int(resources.get("gpu", 0)) == 0:
        return None
    peak = memory_estimate(config, variant)
    if partition_file:
        check_fits(config, variant, peak, resources, str(partition_file))
    return int(peak.peak_bytes // 2**20) + 1


def check_fits(config: dict, variant: str, peak: Estimate, resources: dict,
               partition_file: str) -> None:
    candidates = [p for p in read_partitions(partition_file) if p.takes(resources)]
    name = f"variant {variant!r} (preset {cfg.preset_name(config, variant)!r})"
    if not candidates:
        raise ValueError(f"{name}: no partition in {partition_file} can take its pretraining "
                         f"job ({resources})")
    for partition in candidates:
        if partition.gpu_memory_mb is None:
            raise ValueError(f"{partition_file}: partition {partition.name!r} has GPUs but no "
                             f"gpu_memory_mb entry; declare the memory of one of its GPUs")
        capacity = partition.gpu_memory_mb * 2**20
        if peak.peak_bytes > capacity:
            launch = launch_plan(config, variant)
            raise ValueError(
                f"{name}: one pretraining process needs about {peak.describe()} with "
                f"micro-batch {launch.micro_batch} on {launch.world_size} GPUs and activation "
                f"checkpointing {'on' if launch.activation_checkpointing else 'off'}, but "
                f"partition {partition.name!r} of {partition_file} has "
                f"{capacity / GIB:.1f} GiB GPUs. Turn on "
                f"pretrain.activation_checkpointing, lower micro_batch_sequences, or give the "
                f"preset more GPUs (FSDP shards the model states).")
