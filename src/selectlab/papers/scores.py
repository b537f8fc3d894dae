"""A paper's scores of one model: per task, per group and the paper's average, in percent.

The average follows each paper (see `Protocol.average`): QuRating and DataMan average their ten
tasks ("Average (10 tasks)", DataMan Table 1) and Meta-rater its eight (its Table 1 averages
equal the task-count-weighted mean of the group columns), not the mean of the group means. On
DataMan's own Uniform row the two differ by 4.6 points (44.9 vs 40.3).

A score's standard error comes from lm-eval (sampling over the benchmark's items); a group or
average combines its tasks' errors as independent: sqrt(sum se^2) / n.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from selectlab.papers.protocols import Protocol, Setting, TaskSpec
from selectlab.report.table_files import finite_or_none


@dataclass(frozen=True)
class Score:
    value: float | None
    stderr: float | None = None


def setting_score(icl: Mapping | None, setting: Setting, metric: str) -> Score:
    """The metric (x100) of one evaluated setting; empty when the model lacks it.

    Local stand-in tasks are multiple choice and report no exact match; there the accuracy
    stands in for it.
    """
    entry = (icl or {}).get("settings", {}).get(setting.key)
    if not entry:
        return Score(None)
    if metric == "exact_match" and entry.get(metric) is None:
        metric = "acc"  # a benchmark with exact match has no acc: stays empty there
    value = finite_or_none(entry.get(metric))
    stderr = finite_or_none(entry.get(f"{metric}_stderr"))
    return Score(None if value is None else 100.0 * value,
                 None if stderr is None else 100.0 * stderr)


def task_scores(icl: Mapping | None, protocol: Protocol, tasks: Iterable[str],
                setting_of: Callable[[TaskSpec], Setting]) -> dict[str, Score]:
    """Each named protocol task's score, evaluated with the setting `setting_of` gives it."""
    return {
        task: setting_score(icl, setting_of(protocol.tasks[task]), protocol.tasks[task].metric)
        for task in tasks
    }


def mean_score(scores: list[Score]) -> Score:
    """The mean of scores that are all present (else empty); its error if all have one."""
    if not scores or any(s.value is None for s in scores):
        return Score(None)
    value = sum(s.value for s in scores) / len(scores)  # type: ignore[misc]
    errors = [s.stderr for s in scores]
    if any(e is None for e in errors):
        return Score(value)
    return Score(value, math.sqrt(sum(e * e for e in errors)) / len(scores))  # type: ignore[operator]


def group_scores(scores: Mapping[str, Score], protocol: Protocol) -> dict[str, Score]:
    return {group.id: mean_score([scores.get(t, Score(None)) for t in group.tasks])
            for group in protocol.groups}


def protocol_average(scores: Mapping[str, Score], protocol: Protocol) -> Score:
    """The paper's average: over every grouped task, or over the group means."""
    if protocol.average == "groups":
        return mean_score(list(group_scores(scores, protocol).values()))
    return mean_score([scores.get(t, Score(None)) for t in protocol.grouped_tasks])


def average_from_group_means(means: Mapping[str, float], protocol: Protocol) -> float:
    """The paper's average recomputed from its group columns alone.

    With a task average each group weighs as many tasks as it holds (exact when the group
    means are exact; within rounding when they are the papers' rounded columns).
    """
    if protocol.average == "groups":
        return sum(means[g.id] for g in protocol.groups) / len(protocol.groups)
    total = sum(means[g.id] * len(g.tasks) for g in protocol.groups)
    return total / sum(len(g.tasks) for g in protocol.groups)
