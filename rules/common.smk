# Shared helpers: paths, shard listing, per-job config resolution. Logic lives in selectlab.
import os

from selectlab import config as cfg
from selectlab.selection.methods import required_raters

RUN = f"results/{config['run']}"
LOGS = f"{RUN}/logs"
SHARD_FILES = cfg.shard_files(config, RUN)
SHARDS = list(SHARD_FILES)
VARIANTS = list(config["variants"])
SPLITS = ["validation", "test"]
CONTAINERS = {
    "cpu": "containers/cpu.sif",
    "train": "containers/train.sif",
    "vllm": "containers/vllm.sif",
} | config.get("containers", {})


wildcard_constraints:
    shard="[A-Za-z0-9_]+",
    variant="|".join(VARIANTS),
    split="validation|test",


def json_param(value):
    """A config section as compact JSON, so a change to it reruns exactly its jobs."""
    return cfg.as_json(value)


def raw_shard_files(wildcards):
    return SHARD_FILES[wildcards.shard]


def final_targets():
    return [
        f"{RUN}/tables/main.md",
        f"{RUN}/report/report.html",
        f"{RUN}/archive/selectlab-{config['run']}.tar.gz",
    ]


def parent_dir(name):
    """A params function: the directory of output `name` (keeps paths derived from outputs)."""
    return lambda wildcards, output: os.path.dirname(output[name])


def selection_sidecars(wildcards):
    """Score sidecars a variant's selection method reads, besides the meta sidecars."""
    raters = required_raters(config["variants"][wildcards.variant].get("params", {}))
    return expand(
        f"{RUN}/attributes/{{rater}}/{{shard}}.parquet", rater=raters, shard=SHARDS
    )


def init_model(wildcards):
    """The final model of the variant this one continues pretraining from, if any."""
    parent = cfg.init_variant(config, wildcards.variant)
    return [f"{RUN}/models/{parent}/final"] if parent else []


def report_params():
    return {
        "descriptions": cfg.report_descriptions(config),
        "baseline": config["evaluation"]["baseline"],
        "group_order": cfg.icl_group_order(config),
        "notes": [],
    }
