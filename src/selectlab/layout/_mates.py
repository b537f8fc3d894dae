"""Paths of MATES's stages."""

from __future__ import annotations

from selectlab.layout._paths import PART, RATER_CARD, RATER_MODEL, STAGE, VARIANT, _under, path


# ---- MATES: a `mates` variant's stages (its stage variants are ordinary variants) ----------
def mates_stage_dir(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    return _under(root, "mates", variant, f"stage{stage}")


@path
def mates_probes(root: str, variant: str = VARIANT, stage: int | str = STAGE,
                 part: int | str = PART) -> str:
    """Oracle influence of one probe job's units, measured on the previous stage's model."""
    return _under(mates_stage_dir(root, variant, stage), "probes", f"part{part}.parquet")


@path
def mates_probe_metrics(root: str, variant: str = VARIANT, stage: int | str = STAGE,
                        part: int | str = PART) -> str:
    return _under(mates_stage_dir(root, variant, stage), "probes", f"part{part}.json")


@path
def influence_model_dir(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    """The stage's data-influence model: a rater directory (selectlab.raters.load_rater)."""
    return _under(mates_stage_dir(root, variant, stage), "influence_model")


@path
def influence_model(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    return _under(influence_model_dir(root, variant, stage), RATER_MODEL)


@path
def influence_model_card(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    return _under(influence_model_dir(root, variant, stage), RATER_CARD)


@path
def mates_fit_metrics(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    return _under(mates_stage_dir(root, variant, stage), "metrics.json")
