"""Paths of the judge's labels, the raters and fitted annotation models, and the analysis
sample."""

from __future__ import annotations

from selectlab.layout._paths import (
    FAMILY,
    NAME,
    PROTOCOL,
    RATER,
    RATER_CARD,
    RATER_MODEL,
    _under,
    path,
)


# ---- judge -----------------------------------------------------------------------------------
@path
def judge_sample(root: str, protocol: str = PROTOCOL) -> str:
    return _under(root, "judgments", protocol, "sample.parquet")


@path
def judgments(root: str, protocol: str = PROTOCOL) -> str:
    return _under(root, "judgments", protocol, "judgments.parquet")


@path
def judge_labels(root: str, protocol: str = PROTOCOL) -> str:
    return _under(root, "judgments", protocol, "labels.parquet")


@path
def judge_summary(root: str, protocol: str = PROTOCOL) -> str:
    return _under(root, "judgments", protocol, "summary.csv")


@path
def judge_cache(root: str, protocol: str = PROTOCOL) -> str:
    """Not a declared output: it survives a failed or rerun judge job."""
    return _under(root, "judgments", protocol, "cache.sqlite")


# ---- raters and fitted annotation models -----------------------------------------------------
@path
def rater_dir(root: str, rater: str = RATER) -> str:
    return _under(root, "raters", rater)


@path
def rater_model(root: str, rater: str = RATER) -> str:
    return _under(rater_dir(root, rater), RATER_MODEL)


@path
def rater_card(root: str, rater: str = RATER) -> str:
    return _under(rater_dir(root, rater), RATER_CARD)


@path
def rater_metrics(root: str, rater: str = RATER) -> str:
    return _under(rater_dir(root, rater), "metrics.json")


@path
def dsir_model(root: str, family: str = FAMILY) -> str:
    return _under(rater_dir(root, family), "model.npz")


@path
def reference_lm(root: str) -> str:
    """The offline reference LM, converted once from its GGUF file."""
    return rater_dir(root, "reference_lm")


# ---- analysis of the annotated corpus --------------------------------------------------------
@path
def analysis_sample(root: str, pool: str = "{pool}") -> str:
    """The analysis sample of one selection pool's units (`full`: the documents)."""
    return _under(root, "analysis", f"sample_{pool}.parquet")


@path
def analysis_sample_summary(root: str, pool: str = "{pool}") -> str:
    return _under(root, "analysis", f"sample_{pool}.json")


@path
def analysis_matrix(root: str, name: str = NAME) -> str:
    return _under(root, "analysis", f"{name}.csv")
