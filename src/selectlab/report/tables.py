"""Result tables in the papers' shape: one row per selection variant, grouped by family.

Every builder is a pure function of already-loaded JSON (`eval/{variant}/perplexity.json` and
`icl.json`, `None` where a variant has no such file) and returns a DataFrame whose index is the
variant's config name. A cell is either a finite number or empty; each empty cell is explained by
a note kept in `df.attrs["notes"]`, which `write_table` prints under the Markdown table after the
caller's own notes. `df.attrs["decimals"]` says how many decimals each numeric column shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from selectlab.report.table_files import finite_or_none
from selectlab.report.training_tokens import (
    SHORT_DECIMALS,
    SHORT_OF_BUDGET,
    TOKEN_COLUMNS,
    TrainingTokens,
    empty_reasons,
    short_note,
    token_cells,
)

VAL_PPL = "val ppl"
TEST_PPL = "test ppl"
# The overview averages its lm-eval groups, each the mean of its tasks: the mean of group means,
# not the papers' ten-task average (their per-paper tables, selectlab.papers, have that one).
AVERAGE = "mean of groups"
SPLITS = ("validation", "test")
PPL_DECIMALS = 2
SCORE_DECIMALS = 1
# SlimPajama's sources in the order the papers list them; unknown sources follow, sorted.
SOURCE_ORDER = tuple(
    f"RedPajama{name}"
    for name in "CommonCrawl C4 Github Wikipedia Book ArXiv StackExchange".split()
)
ALL_SOURCES = "all"


@dataclass(frozen=True)
class Variant:
    name: str
    family: str
    label: str


def delta_column(baseline: str) -> str:
    return f"delta vs {baseline}"


def variants_in_report_order(
    descriptions: Mapping[str, Mapping], family_order: Sequence[str] | None = None
) -> list[Variant]:
    """Families in `family_order` (else first appearance in the config), config order inside."""
    variants = [
        Variant(name, str(desc.get("family", "")), str(desc.get("label") or name))
        for name, desc in descriptions.items()
    ]
    families = list(family_order or [])
    for variant in variants:
        if variant.family not in families:
            families.append(variant.family)
    rank = {family: i for i, family in enumerate(families)}
    # sorted() is stable, so config order survives inside a family.
    return sorted(variants, key=lambda v: rank[v.family])


def read_json_if_present(path: Path) -> dict | None:
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def read_eval_results(
    eval_root: Path, variant_names: Iterable[str]
) -> tuple[dict[str, dict | None], dict[str, dict | None]]:
    """(perplexity, icl) per variant from `eval_root/{variant}/`; None where a file is absent."""
    perplexity: dict[str, dict | None] = {}
    icl: dict[str, dict | None] = {}
    for name in variant_names:
        perplexity[name] = read_json_if_present(Path(eval_root) / name / "perplexity.json")
        icl[name] = read_json_if_present(Path(eval_root) / name / "icl.json")
    return perplexity, icl


def headline_score(task: Mapping) -> float | None:
    """The value under the task's own `metric` key (acc_norm or acc), if finite."""
    metric = task.get("metric")
    return finite_or_none(task.get(metric)) if isinstance(metric, str) else None


def icl_group_order(group_order: Sequence[str], icl: Mapping[str, dict | None]) -> list[str]:
    """The configured groups, then any group only the results name (sorted), so none vanish."""
    groups = list(group_order)
    extra = {
        str(task.get("group"))
        for result in icl.values()
        if result
        for task in result.get("tasks", {}).values()
    }
    return groups + sorted(extra - set(groups))


class EmptyCells:
    """Collects why cells are empty and renders one note per (variant, reason)."""

    def __init__(self) -> None:
        self._columns: dict[tuple[str, str], list[str]] = {}
        self._whole_columns: list[str] = []

    def add(self, label: str, columns: Sequence[str], reason: str) -> None:
        bucket = self._columns.setdefault((label, reason), [])
        bucket.extend(c for c in columns if c not in bucket)

    def add_column_note(self, note: str) -> None:
        if note not in self._whole_columns:
            self._whole_columns.append(note)

    def notes(self) -> list[str]:
        lines = list(self._whole_columns)
        for (label, reason), columns in self._columns.items():
            lines.append(f"Empty for {label} ({', '.join(columns)}): {reason}.")
        return lines


def _reason_for_missing(
    name: str, kind: str, missing_reasons: Mapping[str, str] | None, result: object = None
) -> str:
    """The caller's reason for a variant without results, else a generic one."""
    if result:
        return f"no finite {kind} value"
    if missing_reasons and name in missing_reasons:
        return missing_reasons[name]
    return f"no {kind} results for this variant"


def overall_perplexity(result: Mapping | None, split: str) -> float | None:
    if not result:
        return None
    return finite_or_none(result.get(split, {}).get(ALL_SOURCES, {}).get("ppl"))


def group_scores(result: Mapping, groups: Sequence[str]) -> dict[str, float | None]:
    """Mean headline score (x100) per group; None when a group has no task or a non-finite one."""
    by_group: dict[str, list[float | None]] = {group: [] for group in groups}
    for task in result.get("tasks", {}).values():
        by_group.setdefault(str(task.get("group")), []).append(headline_score(task))
    means: dict[str, float | None] = {}
    for group in groups:
        scores = by_group.get(group, [])
        if not scores or any(score is None for score in scores):
            means[group] = None
        else:
            means[group] = 100.0 * sum(scores) / len(scores)  # type: ignore[arg-type]
    return means


def _rounded(value: float | None, decimals: int) -> float | None:
    # Adding 0.0 turns a rounded -0.0 into 0.0 so it never prints as "-0.0".
    return None if value is None else round(value, decimals) + 0.0


def main_table(
    descriptions: Mapping[str, Mapping],
    perplexity: Mapping[str, dict | None],
    icl: Mapping[str, dict | None],
    group_order: Sequence[str],
    baseline: str = "uniform",
    *,
    family_order: Sequence[str] | None = None,
    missing_reasons: Mapping[str, str] | None = None,
    tokens: Mapping[str, TrainingTokens] | None = None,
) -> pd.DataFrame:
    """Rows = variants; overall val/test perplexity, ICL score per group, average, delta, then
    the tokens the selection found, the tokens the model trained on and how far the selection
    fell short of its budget (`tokens`, read by selectlab.report.training_tokens).

    Group scores are means of the tasks' headline scores x100; the average is the mean of the
    unrounded group scores and needs every group; the delta is taken between the rounded averages
    so it matches the numbers a reader sees. A short selection also gets a note under the table.
    """
    variants = variants_in_report_order(descriptions, family_order)
    groups = icl_group_order(group_order, icl)
    delta = delta_column(baseline)
    empty = EmptyCells()
    short_notes: list[str] = []
    if tokens is None:
        empty.add_column_note(f"Columns {', '.join(TOKEN_COLUMNS)} are empty: no selection "
                              "manifests or training logs were read.")
    rows: list[dict] = []
    for variant in variants:
        row: dict[str, object] = {"family": variant.family, "variant": variant.label}
        if tokens is not None:
            record = tokens.get(variant.name)
            row.update(token_cells(record))
            for column, reason in empty_reasons(record).items():
                empty.add(variant.label, [column], reason)
            note = short_note(variant.label, record)
            short_notes += [note] if note else []
        ppl_result = perplexity.get(variant.name)
        for column, split in ((VAL_PPL, "validation"), (TEST_PPL, "test")):
            value = overall_perplexity(ppl_result, split)
            row[column] = _rounded(value, PPL_DECIMALS)
            if value is None:
                why = _reason_for_missing(variant.name, "perplexity", missing_reasons, ppl_result)
                empty.add(variant.label, [column], why)
        icl_result = icl.get(variant.name)
        if not icl_result:
            reason = _reason_for_missing(variant.name, "ICL", missing_reasons)
            empty.add(variant.label, [*groups, AVERAGE, delta], reason)
            scores = {group: None for group in groups}
        else:
            scores = group_scores(icl_result, groups)
            for group, score in scores.items():
                if score is None:
                    empty.add(variant.label, [group], "no task or a non-finite score in the group")
        for group in groups:
            row[group] = _rounded(scores[group], SCORE_DECIMALS)
        known = [score for score in scores.values() if score is not None]
        average = sum(known) / len(known) if known and len(known) == len(groups) else None
        if icl_result and average is None:
            empty.add(variant.label, [AVERAGE, delta], "the average needs every ICL group")
        row[AVERAGE] = _rounded(average, SCORE_DECIMALS)
        rows.append(row)

    frame = pd.DataFrame(
        rows,
        index=pd.Index([v.name for v in variants], name="name"),
        columns=["family", "variant", VAL_PPL, TEST_PPL, *groups, AVERAGE, *TOKEN_COLUMNS],
    )
    base_average = frame.at[baseline, AVERAGE] if baseline in frame.index else None
    if finite_or_none(base_average) is None:
        frame[delta] = None
        empty.add_column_note(
            f"Column '{delta}' is empty: the baseline '{baseline}' has no ICL average."
        )
    else:
        frame[delta] = [
            _rounded(avg - base_average, SCORE_DECIMALS)
            if finite_or_none(avg) is not None
            else None
            for avg in frame[AVERAGE]
        ]
    numeric = [VAL_PPL, TEST_PPL, *groups, AVERAGE, delta, *TOKEN_COLUMNS]
    frame = frame.reindex(columns=["family", "variant", *numeric]).astype(
        {c: "float64" for c in numeric})
    decimals = {VAL_PPL: PPL_DECIMALS, TEST_PPL: PPL_DECIMALS, SHORT_OF_BUDGET: SHORT_DECIMALS}
    decimals.update({c: SCORE_DECIMALS for c in [*groups, AVERAGE, delta]})
    decimals.update({c: 0 for c in TOKEN_COLUMNS if c != SHORT_OF_BUDGET})
    frame.attrs["notes"] = empty.notes() + short_notes
    frame.attrs["decimals"] = decimals
    return frame


def short_source_name(source: str) -> str:
    return source.removeprefix("RedPajama") or source


def _sources_in_results(perplexity: Mapping[str, dict | None], splits: Sequence[str]) -> list[str]:
    found = {
        source
        for result in perplexity.values()
        if result
        for split in splits
        for source in result.get(split, {})
        if source != ALL_SOURCES
    }
    known = [s for s in SOURCE_ORDER if s in found]
    return known + sorted(found - set(SOURCE_ORDER))


def perplexity_by_source_table(
    descriptions: Mapping[str, Mapping],
    perplexity: Mapping[str, dict | None],
    splits: Sequence[str] = SPLITS,
    *,
    sources: Sequence[str] | None = None,
    family_order: Sequence[str] | None = None,
    missing_reasons: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """DataMan Tables 12-13: one block of variant rows per split, one column per source + all."""
    variants = variants_in_report_order(descriptions, family_order)
    source_list = list(sources) if sources is not None else _sources_in_results(perplexity, splits)
    columns = [short_source_name(s) for s in source_list] + [ALL_SOURCES]
    empty = EmptyCells()
    rows: list[dict] = []
    index: list[tuple[str, str]] = []
    for split in splits:
        for variant in variants:
            result = perplexity.get(variant.name)
            row: dict[str, object] = {"split": split, "family": variant.family}
            row["variant"] = variant.label
            by_source = (result or {}).get(split, {})
            for source, column in zip([*source_list, ALL_SOURCES], columns, strict=True):
                value = finite_or_none(by_source.get(source, {}).get("ppl"))
                row[column] = _rounded(value, PPL_DECIMALS)
                if value is None:
                    why = _reason_for_missing(variant.name, "perplexity", missing_reasons, result)
                    empty.add(f"{variant.label} [{split}]", [column], why)
            rows.append(row)
            index.append((split, variant.name))
    frame = pd.DataFrame(
        rows,
        index=pd.MultiIndex.from_tuples(index, names=["split", "name"]),
        columns=["split", "family", "variant", *columns],
    )
    frame = frame.astype({c: "float64" for c in columns})
    frame.attrs["notes"] = empty.notes()
    frame.attrs["decimals"] = {c: PPL_DECIMALS for c in columns}
    return frame


@dataclass(frozen=True)
class TaskInfo:
    name: str
    group: str
    shots: int | None
    metric: str


def tasks_in_report_order(
    icl: Mapping[str, dict | None], group_order: Sequence[str]
) -> list[TaskInfo]:
    """Tasks ordered by group, then by first appearance across variants."""
    seen: dict[str, TaskInfo] = {}
    for result in icl.values():
        for name, task in (result or {}).get("tasks", {}).items():
            if name not in seen:
                shots = None if task.get("shots") is None else int(task["shots"])
                seen[name] = TaskInfo(name, str(task.get("group")), shots, str(task.get("metric")))
    groups = icl_group_order(group_order, icl)
    return sorted(seen.values(), key=lambda t: groups.index(t.group))


def score_with_stderr(task: Mapping) -> str | None:
    """'62.3 ± 1.4' (x100) from the headline metric and its stderr; just the score without one."""
    score = headline_score(task)
    if score is None:
        return None
    stderr = finite_or_none(task.get(f"{task.get('metric')}_stderr"))
    text = f"{100.0 * score:.{SCORE_DECIMALS}f}"
    return text if stderr is None else f"{text} ± {100.0 * stderr:.{SCORE_DECIMALS}f}"


def icl_by_task_table(
    descriptions: Mapping[str, Mapping],
    icl: Mapping[str, dict | None],
    group_order: Sequence[str],
    *,
    family_order: Sequence[str] | None = None,
    missing_reasons: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """DataMan Table 14: rows = variants, one column per task holding 'score ± stderr' (x100)."""
    variants = variants_in_report_order(descriptions, family_order)
    tasks = tasks_in_report_order(icl, group_order)
    empty = EmptyCells()
    rows: list[dict] = []
    for variant in variants:
        row: dict[str, object] = {"family": variant.family, "variant": variant.label}
        result = icl.get(variant.name)
        if not result:
            reason = _reason_for_missing(variant.name, "ICL", missing_reasons)
            empty.add(variant.label, [t.name for t in tasks], reason)
        for task in tasks:
            found = (result or {}).get("tasks", {}).get(task.name)
            row[task.name] = score_with_stderr(found) if found else None
            if result and row[task.name] is None:
                empty.add(variant.label, [task.name], "task not run or its score is not finite")
        rows.append(row)
    frame = pd.DataFrame(
        rows,
        index=pd.Index([v.name for v in variants], name="name"),
        columns=["family", "variant", *[t.name for t in tasks]],
    )
    described = "; ".join(
        f"{t.name} = {t.group}, {t.shots if t.shots is not None else '?'}-shot, {t.metric}"
        for t in tasks
    )
    notes = ["Scores are accuracies x100; ± is lm-evaluation-harness's standard error x100."]
    if described:
        notes.append(f"Tasks: {described}.")
    frame.attrs["notes"] = notes + empty.notes()
    frame.attrs["decimals"] = {}
    return frame
