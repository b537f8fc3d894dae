"""Paths of selection, pretraining and evaluation."""

from __future__ import annotations

import os

from selectlab.layout._paths import (
    CHECKPOINT_META,
    CHECKPOINT_OWNER,
    CHECKPOINT_PREFIX,
    CHECKPOINT_STEP_DIGITS,
    FAMILY,
    FRACTION,
    PROXIES,
    SEARCH,
    SHARD,
    SNAPSHOTS,
    VARIANT,
    _under,
    path,
)


# ---- selection -------------------------------------------------------------------------------
@path
def rank_dir(root: str, family: str = FAMILY) -> str:
    """One family's percentile-rank sidecars over the pool (selectlab.selection.ranks)."""
    return _under(root, "attributes", "ranks", family)


@path
def rank_sidecar(root: str, family: str = FAMILY, shard: str = SHARD) -> str:
    return _under(rank_dir(root, family), f"{shard}.parquet")


@path
def rank_summary(root: str, family: str = FAMILY) -> str:
    return _under(rank_dir(root, family), "ranks.json")


@path
def selection(root: str, variant: str = VARIANT) -> str:
    return _under(root, "selections", variant, "selection.parquet")


@path
def selection_manifest(root: str, variant: str = VARIANT) -> str:
    return _under(root, "selections", variant, "manifest.json")


@path
def packed(root: str, variant: str = VARIANT) -> str:
    return _under(root, "selections", variant, "train.npy")


@path
def metarater_weights(root: str, search: str = SEARCH, proxies: int | str = PROXIES) -> str:
    return _under(root, "metarater", search, f"n{proxies}", "weights.json")


# ---- pretraining and evaluation --------------------------------------------------------------
@path
def final_model(root: str, variant: str = VARIANT) -> str:
    return _under(root, "models", variant, "final")


@path
def train_log(root: str, variant: str = VARIANT) -> str:
    return _under(root, "models", variant, "train_log.csv")


@path
def checkpoints(root: str, variant: str = VARIANT) -> str:
    """Resume state; not a declared output, so Snakemake keeps it across failures."""
    return _under(root, "models", variant, "checkpoints")


def checkpoint_name(step: int) -> str:
    """The directory name of the checkpoint of `step` (step_0001000)."""
    return f"{CHECKPOINT_PREFIX}{step:0{CHECKPOINT_STEP_DIGITS}d}"


@path
def checkpoint(root: str, variant: str = VARIANT, step: str = "{step}") -> str:
    """One sharded checkpoint; `step` in its 7 digits (checkpoint_name)."""
    return _under(checkpoints(root, variant), f"{CHECKPOINT_PREFIX}{step}")


@path
def checkpoint_meta(root: str, variant: str = VARIANT, step: str = "{step}") -> str:
    """Written after every shard: a checkpoint without it is an unfinished save."""
    return _under(checkpoint(root, variant, step), CHECKPOINT_META)


@path
def checkpoint_owner(root: str, variant: str = VARIANT) -> str:
    """The claim of the training run that may write this variant's checkpoints."""
    return _under(checkpoints(root, variant), CHECKPOINT_OWNER)


@path
def lm_eval_data(root: str) -> str:
    """What fetch_eval_data put in the shared lm-eval cache; the ICL jobs wait on it."""
    return _under(root, "eval", "lm_eval_data.json")


def snapshot_name(fraction: str) -> str:
    """A snapshot directory's name; `fraction` as the curves name it (`str(float)`: "0.5")."""
    return f"f{fraction}"


@path
def snapshot(root: str, variant: str = VARIANT, fraction: str = FRACTION) -> str:
    """The weights part-way through training (a point of a curve figure), inside the final
    model directory, so they are part of the pretraining job's declared output."""
    return _under(final_model(root, variant), SNAPSHOTS, snapshot_name(fraction))


@path
def icl_tasks(root: str) -> str:
    return _under(root, "eval", "tasks")


@path
def perplexity(root: str, variant: str = VARIANT) -> str:
    return _under(root, "eval", variant, "perplexity.json")


@path
def perplexity_progress(root: str, variant: str = VARIANT) -> str:
    """What an interrupted perplexity job has scored; removed once perplexity.json is written."""
    return _under(root, "eval", variant, ".perplexity.json.progress")


@path
def icl(root: str, variant: str = VARIANT) -> str:
    return _under(root, "eval", variant, "icl.json")


@path
def icl_cache(root: str, variant: str = VARIANT) -> str:
    """lm-eval's result per (task, shots) of a model; not a declared output, so it survives a
    rerun of the model's evaluation."""
    return _under(root, "eval", variant, "icl_cache")


@path
def curve_icl(root: str, variant: str = VARIANT, fraction: str = FRACTION) -> str:
    """A training snapshot's ICL results (`fraction` as `snapshot_name` takes it)."""
    return _under(root, "eval", variant, "curve", fraction, "icl.json")


@path
def curve_icl_cache(root: str, variant: str = VARIANT, fraction: str = FRACTION) -> str:
    return _under(os.path.dirname(curve_icl(root, variant, fraction)), "icl_cache")
