"""Judging a fine-tuned model's answers against the untuned model's, offline: the judge prefers
the answer whose words overlap the reference response more (selectlab.instruct.reference_judge)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from selectlab.instruct import compare
from selectlab.instruct.reference_judge import ReferenceOverlapJudge
from selectlab.judge.run import RunSettings


def judge_tuned_against_untuned(evaluation: pd.DataFrame, answers: dict[str, pd.DataFrame],
                                cache: Path) -> tuple[pd.DataFrame, int]:
    """(judgments, questions asked) of `answers["tuned"]` against `answers["untuned"]`, both
    orders, for the instructions of `evaluation` (id, instruction, response)."""
    texts = {compare.answer_id(row.id, row.answer): row.answer
             for frame in answers.values() for row in frame.itertuples()}
    judge = ReferenceOverlapJudge(texts, dict(zip(evaluation["id"], evaluation["response"],
                                                  strict=True)))
    return compare.judge_comparison(evaluation, answers, ["tuned"], "untuned",
                                    compare.Settings(), judge, cache, RunSettings())
