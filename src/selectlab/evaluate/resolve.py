"""The evaluation stage's plan: what each perplexity and lm-eval job reads, and its size.

Plain dict functions (no torch). An evaluation job runs on `evaluation.gpu` GPUs (0 or 1); on
a GPU it takes its model preset's GPU model and one GPU's share of the preset's cores. Its
wall time and memory follow the model's size and the tokens it scores
(selectlab.evaluate.sizing); the rule's `resources` default in
config/schema/resources.schema.yaml gives the rest, and `resources.<rule>` overrides.
"""

from __future__ import annotations

from selectlab.evaluate.sizing import eval_size
from selectlab.resources import rule_shape, schema_default
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


def data_cache(config: dict) -> str:
    """The shared directory fetch_eval_data fills and the ICL jobs read offline."""
    return config["evaluation"]["icl"].get("data_cache") or schema_default(
        "evaluation.schema.yaml", "properties", "icl", "properties", "data_cache")


def fetch_params(config: dict) -> dict:
    """What `selectlab evaluate fetch-data` downloads: the lm-eval tasks (none when local)."""
    return {"tasks": config["evaluation"]["icl"]["tasks"]}


def eval_shape(config: dict, rule: str, name: str) -> dict:
    """The job of `rule` (eval_perplexity, eval_icl) on variant `name`'s model."""
    gpu = int(config["evaluation"].get("gpu", 0))
    derived = {"gpu": gpu} | eval_size(config, name, rule.removeprefix("eval_"))
    if gpu:
        preset = pretrain_shape(config, name)
        derived |= {"gpu_model": preset.get("gpu_model"),
                    "cpus": max(1, preset["cpus"] // max(preset["gpu"], 1))}
    return rule_shape(config, rule, derived)
