"""Resolving the validated config into what one job needs.

The workflow passes each job only its own resolved section (as JSON `params`), so Snakemake's
parameter-change detection reruns exactly the jobs whose settings changed. These functions are
plain dict transformations, used by the Snakefile and by hand alike.
"""

from __future__ import annotations

import copy
import glob
import json
from pathlib import Path

import yaml


def load_config(path: str | Path) -> dict:
    with open(path) as handle:
        return yaml.safe_load(handle)


def as_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def deep_merge(base: dict, override: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def embedded_shard_names(num_shards: int) -> list[str]:
    return [f"shard_{i:05d}" for i in range(num_shards)]


def slimpajama_shard_groups(directory: str | Path, pattern: str, group_size: int,
                            limit: int | None = None) -> dict[str, list[str]]:
    """Group the sorted raw files into shards of `group_size` files each.

    One annotation job then covers a group, which keeps the DAG at thousands of jobs, not
    hundreds of thousands, at full scale.
    """
    files = sorted(glob.glob(str(Path(directory) / pattern)))
    if limit:
        files = files[:limit]
    if not files:
        raise ValueError(f"no files match {pattern!r} under {directory}")
    return {
        f"group_{start // group_size:05d}": files[start:start + group_size]
        for start in range(0, len(files), group_size)
    }


def shard_files(config: dict, run_dir: str) -> dict[str, list[str]]:
    """Shard name -> the raw files it reads, for either corpus mode."""
    corpus = config["corpus"]
    if corpus["mode"] == "embedded":
        return {name: [f"{run_dir}/corpus/raw/{name}.jsonl.zst"]
                for name in embedded_shard_names(corpus["num_shards"])}
    slimpajama = corpus["slimpajama"]
    return slimpajama_shard_groups(slimpajama["train_dir"], slimpajama["pattern"],
                                   slimpajama["group_size"], slimpajama.get("max_files"))


def variant_seed(config: dict, name: str) -> int:
    return int(config["variants"][name].get("seed", config["seed"]))


def resolve_selection(config: dict, name: str) -> dict:
    """What `selectlab select run` needs for one variant."""
    variant = config["variants"][name]
    budget = variant.get("budget_tokens", config["selection"]["budget_tokens"])
    return {
        "name": name,
        "method": variant["method"],
        "budget_tokens": int(round(budget * variant.get("budget_scale", 1.0))),
        "seed": variant_seed(config, name),
        "params": variant.get("params", {}),
    }


def resolve_pretrain(config: dict, name: str) -> dict:
    """Training settings and model preset for one variant (variant overrides win)."""
    settings = deep_merge(config["pretrain"], config["variants"][name].get("pretrain", {}))
    preset_name = settings.pop("preset")
    presets = config["models"]["presets"]
    if preset_name not in presets:
        raise ValueError(f"variant {name!r}: unknown model preset {preset_name!r}; "
                         f"known: {sorted(presets)}")
    settings.pop("init_from", None)
    settings.setdefault("seed", variant_seed(config, name))
    return {"preset_name": preset_name, "preset": presets[preset_name], "settings": settings}


def init_variant(config: dict, name: str) -> str | None:
    """The variant whose final model this variant continues from, if any."""
    return config["variants"][name].get("pretrain", {}).get("init_from")


def seq_len(config: dict) -> int:
    return int(config["pretrain"]["seq_len"])


def icl_group_order(config: dict) -> list[str]:
    """ICL table groups in display order: local task kinds, or the configured tasks' groups."""
    icl = config["evaluation"]["icl"]
    if icl["tasks"] == "local":
        return list(icl.get("local_tasks", {}).get("kinds", ["continuation", "cloze"]))
    return list(dict.fromkeys(task["group"] for task in icl["tasks"]))


def report_descriptions(config: dict) -> dict:
    """What the tables and figures show about each variant."""
    return {
        name: {"family": v["family"], "method": v["method"], "label": v.get("label", name),
               "params": v.get("params", {})}
        for name, v in config["variants"].items()
    }
