"""The run's numbers for every cell of every per-paper table, over replicates.

One long table (`tables/paper_cells.csv`): table, block (DataMan Table 2's domain, else empty),
variant, column, then the mean over the variant's replicates, the 95% interval (`low`, `high`;
see `estimates` for what it covers), the number of replicates with a value, the interval's
basis and the replicate values. The per-paper tables print it in each paper's shape; the
comparison with published numbers and the claims read it.

Column names: `val_ppl`, `test_ppl`, a protocol group's id, `average`, a protocol task's name,
or a SlimPajama source (`RedPajama...`, `all`) in the per-source perplexity tables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from selectlab import layout as run_layout
from selectlab.papers.estimates import Estimate, cell_record, estimate
from selectlab.papers.layouts import DATAMAN_SOURCE_ORDER, LAYOUTS, TableLayout
from selectlab.papers.protocols import Protocol, Setting, parse_protocol
from selectlab.papers.rater_comparison import compared_raters, rater_cells
from selectlab.papers.scores import (
    Score,
    group_scores,
    mean_score,
    protocol_average,
    task_scores,
)
from selectlab.report.table_files import finite_or_none

CELL_COLUMNS = ["table", "block", "variant", "column", "paper_row", "mean", "low", "high", "n",
                "se", "basis", "values"]
SPLIT_COLUMNS = {"validation": "val_ppl", "test": "test_ppl"}
FINAL = "1.0"  # a curve's last point: the final (checkpoint-averaged) model


def read_json_or_none(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def read_results(run_dir: str, names: list[str]) -> tuple[dict, dict]:
    """(perplexity, icl) per run name from the run directory; None where a file is absent."""
    return ({n: read_json_or_none(Path(run_layout.perplexity(run_dir, n))) for n in names},
            {n: read_json_or_none(Path(run_layout.icl(run_dir, n))) for n in names})


def read_rater_records(run_dir: str, plan: dict) -> dict:
    """The metrics record of every rater a rater table compares (None where absent)."""
    return {rater: read_json_or_none(Path(run_layout.rater_metrics(run_dir, rater)))
            for t in plan.get("rater_tables", []) for rater in compared_raters(t)}


def read_curve_results(run_dir: str, curve_runs: list) -> dict:
    """ICL results of every training-curve snapshot, keyed (run, fraction)."""
    return {(run, key): read_json_or_none(Path(run_layout.curve_icl(run_dir, run, key)))
            for run, key in curve_runs}


def overall_perplexity(result: Mapping | None, split: str) -> Score:
    ppl = finite_or_none((result or {}).get(split, {}).get("all", {}).get("ppl"))
    return Score(ppl)


def source_columns(perplexity: Mapping[str, dict | None], split: str) -> list[str]:
    found = {s for r in perplexity.values() if r for s in r.get(split, {}) if s != "all"}
    known = [s for s in DATAMAN_SOURCE_ORDER if s in found]
    return known + sorted(found - set(known)) + ["all"]


class CellBuilder:
    """Turns one table's rows into cells, given every run's loaded results."""

    def __init__(self, plan: dict, perplexity: Mapping, icl: Mapping,
                 curve_icl: Mapping | None = None) -> None:
        self.plan = plan
        self.perplexity = perplexity
        self.icl = icl
        self.curve_icl = curve_icl or {}
        self.protocols = {n: parse_protocol(n, s) for n, s in plan["protocols"].items()}

    def setting_of(self, protocol: Protocol):
        keys = self.plan["settings"][protocol.name]

        def setting(spec) -> Setting:
            task, shots = keys[spec.name].rsplit("@", 1)
            return Setting(task, int(shots))

        return setting

    def run_icl(self, run: str, fraction: str) -> dict | None:
        return self.icl.get(run) if fraction == FINAL else self.curve_icl.get((run, fraction))

    def run_scores(self, layout: TableLayout, protocol: Protocol, run: str,
                   tasks: list[str], fraction: str = FINAL) -> dict[str, Score]:
        """column -> this run's score, for one row of one table (at one point of its
        training, for a curve)."""
        ppl = self.perplexity.get(run)
        if layout.kind == "ppl_source":
            split = (ppl or {}).get(layout.split, {})
            return {s: Score(finite_or_none(split.get(s, {}).get("ppl")))
                    for s in source_columns(self.perplexity, layout.split)}
        out: dict[str, Score] = {}
        if layout.perplexity:
            out |= {col: overall_perplexity(ppl, split) for split, col in SPLIT_COLUMNS.items()}
        scores = task_scores(self.run_icl(run, fraction), protocol, tasks,
                             self.setting_of(protocol))
        if layout.kind in ("summary", "curve"):
            out |= group_scores(scores, protocol)
        else:
            out |= scores
        if layout.kind in ("summary", "per_task", "curve") and not layout.extra_tasks:
            out["average"] = protocol_average(scores, protocol)
        if layout.kind == "domain":
            # Not a column of the paper's Table 2: the mean of the block's subtasks, which
            # the claim about domain continued pre-training compares.
            out["average"] = mean_score(list(scores.values()))
        return out

    def row_cells(self, table: str, block: str, variant: str, tasks: list[str],
                  fraction: str = FINAL) -> list[dict]:
        layout = LAYOUTS[table]
        protocol = self.protocols[layout.paper]
        runs = self.plan["replicates"][variant]
        per_run = [self.run_scores(layout, protocol, run, tasks, fraction) for run in runs]
        cells = []
        for column in per_run[0]:
            scores = [scores[column] for scores in per_run]
            est = estimate([s.value for s in scores], [s.stderr for s in scores])
            cells.append(cell_record(table, block, variant, column, est,
                                     self.plan.get("paper_rows", {}).get(variant)))
        return cells

    def table_cells(self, table_plan: dict) -> list[dict]:
        layout = LAYOUTS[table_plan["name"]]
        protocol = self.protocols[layout.paper]
        if layout.kind == "domain":
            return [c for block in table_plan["blocks"] for v in block["rows"]
                    for c in self.row_cells(layout.name, block["domain"], v,
                                            list(protocol.domains[block["domain"]].tasks))]
        tasks = protocol.extra_tasks if layout.extra_tasks else protocol.grouped_tasks
        if layout.kind == "curve":
            # One block per point of training; `tokens` is how far each row had trained.
            cells = []
            for key in table_plan["fractions"]:
                for v in table_plan["rows"]:
                    tokens = float(key) * table_plan["tokens"][v]
                    cells.append(cell_record(layout.name, key, v, "tokens", estimate([tokens]),
                                             self.plan.get("paper_rows", {}).get(v)))
                    cells += self.row_cells(layout.name, key, v, tasks, key)
            return cells
        return [c for v in table_plan["rows"] for c in self.row_cells(layout.name, "", v, tasks)]


def build_cells(plan: dict, perplexity: Mapping, icl: Mapping,
                curve_icl: Mapping | None = None, raters: Mapping | None = None) -> pd.DataFrame:
    """Every cell of the plan's tables; `raters` holds the metrics record of each rater a
    rater table compares (None where absent)."""
    builder = CellBuilder(plan, perplexity, icl, curve_icl)
    records = [c for table in plan["tables"] for c in builder.table_cells(table)]
    records += [c for entry in plan.get("rater_tables", [])
                for c in rater_cells(entry, raters or {})]
    frame = pd.DataFrame(records, columns=CELL_COLUMNS)
    return frame.astype({c: "float64" for c in NUMBERS} | {"n": "int64"})


NUMBERS = ("mean", "low", "high", "se")


def read_cells(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype={"block": str, "values": str, "basis": str},
                        keep_default_na=False, na_values={c: [""] for c in NUMBERS})
    return frame.astype({c: "float64" for c in NUMBERS} | {"n": "int64"})


def cell_estimate(cells: pd.DataFrame, table: str, variant: str, column: str,
                  block: str = "") -> Estimate | None:
    """A cell back as an Estimate (replicate values kept), or None if the run lacks it. A
    variant is found by its name, else as the paper's row it re-runs (`paper_row`)."""
    here = cells[(cells["table"] == table) & (cells["column"] == column)
                 & (cells["block"] == block)]
    rows = here[here["variant"] == variant]
    if rows.empty and "paper_row" in here:
        rows = here[here["paper_row"] == variant]
    if rows.empty or pd.isna(rows.iloc[0]["mean"]):
        return None
    record = rows.iloc[0]
    values = [float(v) for v in str(record["values"]).split(";") if v]
    if len(values) >= 2:
        return estimate(values)
    se = None if pd.isna(record["se"]) else float(record["se"])
    return Estimate(float(record["mean"]), int(record["n"]), se, None, str(record["basis"]),
                    tuple(values))
