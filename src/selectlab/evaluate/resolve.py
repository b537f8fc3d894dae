"""The evaluation stage's plan: what each perplexity and lm-eval job reads, and its size.

Plain dict functions (no torch). An evaluation job runs on `evaluation.gpu` GPUs (0 or 1); on
a GPU it takes its model preset's GPU model, one GPU's share of the preset's cores and memory
(the rule's `resources` default in config/schema/resources.schema.yaml gives the rest).
"""

from __future__ import annotations

from selectlab.resources import rule_shape
from selectlab.train.resolve import pretrain_shape, seq_len

ICL_KEYS = ("tasks", "batch_size", "dtype", "limit")


def uses_local_tasks(config: dict) -> bool:
    """Whether lm-eval reads the offline tasks built from the held-out test split."""
    return config["evaluation"]["icl"]["tasks"] == "local"


def local_task_params(config: dict) -> dict:
    return config["evaluation"]["icl"].get("local_tasks", {})


def perplexity_params(config: dict, name: str) -> dict:
    """What `selectlab evaluate perplexity` needs for one variant's model."""
    return config["evaluation"]["perplexity"] | {"seq_len": seq_len(config, name)}


def icl_params(config: dict) -> dict:
    """What `selectlab evaluate icl` needs (the same for every model)."""
    icl = config["evaluation"]["icl"]
    return {key: icl[key] for key in ICL_KEYS if key in icl} | {"seed": config["seed"]}


def eval_shape(config: dict, rule: str, name: str) -> dict:
    """The job of `rule` (eval_perplexity, eval_icl) on variant `name`'s model."""
    gpu = int(config["evaluation"].get("gpu", 0))
    preset = pretrain_shape(config, name)
    per_gpu = max(preset["gpu"], 1)
    derived = {"gpu": gpu, "mem_mb": preset["mem_mb"] // per_gpu}
    if gpu:
        derived |= {"gpu_model": preset.get("gpu_model"),
                    "cpus": max(1, preset["cpus"] // per_gpu)}
    return rule_shape(config, rule, derived)
