"""Whether a pretraining job fits the GPUs of the partitions it could run on (plan time).

The slurm profile's partition file (profiles/slurm/partitions.yaml) lists each partition's
limits for the slurm plugin; beside them, `gpu_memory_mb` gives the memory of one GPU of each
partition that has GPUs. A pretraining job's estimated peak (selectlab.train.memory) must fit
every partition the plugin could send the job to, or the plan stops with what to change.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from selectlab.resources import cpus_per_gpu
from selectlab.train.memory import GIB, Estimate, Launch


@dataclass(frozen=True)
class Partition:
    name: str
    limits: dict
    gpu_memory_mb: int | None

    def takes(self, shape: dict) -> bool:
        """Whether the slurm plugin could send a job of resource `shape` here."""
        limits = self.limits
        models = limits.get("available_gpu_models")
        checks = [
            shape["gpu"] <= limits.get("max_gpu", 0),
            not shape.get("gpu_model") or not models or shape["gpu_model"] in models,
            shape["nodes"] <= limits.get("max_nodes", float("inf")),
            shape["mem_mb"] <= limits.get("max_mem_mb", float("inf")),
            (cpus_per_gpu(shape) or 0) <= limits.get("max_cpus_per_gpu", float("inf")),
            not isinstance(limits.get("max_runtime"), int | float)
            or shape["runtime"] <= limits["max_runtime"],
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


def check_fits(job: str, peak: Estimate, launch: Launch, shape: dict,
               partition_file: str) -> None:
    """Raise, naming `job`, unless `peak` fits a GPU of every partition that takes `shape`."""
    candidates = [p for p in read_partitions(partition_file) if p.takes(shape)]
    if not candidates:
        raise ValueError(f"{job}: no partition in {partition_file} can take its pretraining "
                         f"job ({shape})")
    for partition in candidates:
        if partition.gpu_memory_mb is None:
            raise ValueError(f"{partition_file}: partition {partition.name!r} has GPUs but no "
                             f"gpu_memory_mb entry; declare the memory of one of its GPUs")
        capacity = partition.gpu_memory_mb * 2**20
        if peak.peak_bytes > capacity:
            raise ValueError(
                f"{job}: one pretraining process needs about {peak.describe()} with "
                f"micro-batch {launch.micro_batch} on {launch.world_size} GPUs and activation "
                f"checkpointing {'on' if launch.activation_checkpointing else 'off'}, but "
                f"partition {partition.name!r} of {partition_file} has "
                f"{capacity / GIB:.1f} GiB GPUs. Turn on "
                f"pretrain.activation_checkpointing, lower micro_batch_sequences, or give the "
                f"preset more GPUs (FSDP shards the model states).")
