"""Paths of instruction following (QuRating Figure 3, DataMan Figure 2)."""

from __future__ import annotations

from selectlab.layout._paths import COMPARISON, VARIANT, _under, path


# ---- instruction following (QuRating Figure 3, DataMan Figure 2) -----------------------------
@path
def instruct_train(root: str) -> str:
    return _under(root, "instruct", "data", "train.parquet")


@path
def instruct_eval(root: str) -> str:
    return _under(root, "instruct", "data", "eval.parquet")


@path
def instruct_split(root: str) -> str:
    return _under(root, "instruct", "data", "split.json")


@path
def sft_model(root: str, variant: str = VARIANT) -> str:
    return _under(root, "instruct", "sft", variant, "model")


@path
def sft_log(root: str, variant: str = VARIANT) -> str:
    return _under(root, "instruct", "sft", variant, "sft_log.csv")


@path
def sft_checkpoints(root: str, variant: str = VARIANT) -> str:
    """Resume state; not a declared output, so Snakemake keeps it across failures."""
    return _under(root, "instruct", "sft", variant, "checkpoints")


@path
def answers(root: str, variant: str = VARIANT) -> str:
    return _under(root, "instruct", "answers", f"{variant}.parquet")


@path
def answers_metrics(root: str, variant: str = VARIANT) -> str:
    """Counts of the answers and the generation job's cost (selectlab.flops)."""
    return _under(root, "instruct", "answers", f"{variant}.metrics.json")


@path
def answer_judgments(root: str, comparison: str = COMPARISON) -> str:
    return _under(root, "instruct", "judgments", comparison, "judgments.parquet")


@path
def answer_judge_summary(root: str, comparison: str = COMPARISON) -> str:
    return _under(root, "instruct", "judgments", comparison, "summary.csv")


@path
def answer_judge_cache(root: str, comparison: str = COMPARISON) -> str:
    """Not a declared output: it survives a failed or rerun judge_answers job."""
    return _under(root, "instruct", "judgments", comparison, "cache.sqlite")
