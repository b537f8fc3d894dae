"""The per-paper tables: each paper's rows, columns and order, printed from the run's cells.

A cell prints its mean; with replicates, "mean ± h" where h is the half-width of the 95%
interval over them. Perplexity has two decimals; scores have the paper's own precision
(QuRating and DataMan one decimal, Meta-rater two).
"""

from __future__ import annotations

import pandas as pd

from selectlab.papers.layouts import LAYOUTS, TableLayout
from selectlab.papers.protocols import Protocol, parse_protocol
from selectlab.papers.rater_comparison import rater_table

SCORE_DECIMALS = {"qurating": 1, "dataman": 1, "metarater": 2}
PPL_DECIMALS = 2
# DataMan Tables 12-13's abbreviations of the sources.
SOURCE_LABELS = {"RedPajamaCommonCrawl": "CC", "RedPajamaC4": "C4", "RedPajamaGithub": "Github",
                 "RedPajamaWikipedia": "Wiki", "RedPajamaArXiv": "ArXiv",
                 "RedPajamaStackExchange": "StackEx", "RedPajamaBook": "Book", "all": "Overall"}
ROW_HEADER = "Selection method"


def format_cell(mean: float, half: float | None, n: int, decimals: int) -> str:
    if pd.isna(mean):
        return ""
    text = f"{mean:.{decimals}f}"
    if n >= 2 and half is not None and not pd.isna(half):
        text += f" ± {half:.{decimals}f}"
    return text


def column_labels(layout: TableLayout, protocol: Protocol, columns: list[str]) -> dict[str, str]:
    """What each cell column is called in the paper's table."""
    groups = {g.id: f"{g.label} ({len(g.tasks)} tasks)" for g in protocol.groups}
    tasks = {t.name: f"{t.label} ({t.shots})" for t in protocol.tasks.values()}
    n_grouped = len(protocol.grouped_tasks)
    average = (f"Average ({n_grouped} tasks)" if protocol.average == "tasks"
               else f"Average ({len(protocol.groups)} groups)")
    fixed = {"val_ppl": "Val Perplexity", "test_ppl": "Test Perplexity", "average": average,
             "tokens": "Tokens"}
    if layout.kind == "domain":
        fixed["average"] = "Mean of the domain's subtasks"
    labels = fixed | groups | tasks | SOURCE_LABELS
    return {c: labels.get(c, c) for c in columns}


def decimals_of(layout: TableLayout, column: str) -> int:
    if column == "tokens":
        return 0
    if layout.kind == "ppl_source" or column in ("val_ppl", "test_ppl"):
        return PPL_DECIMALS
    return SCORE_DECIMALS[layout.paper]


def paper_table(table_plan: dict, plan: dict, cells: pd.DataFrame) -> pd.DataFrame:
    """One per-paper table in its paper's shape (rows in the plan's order)."""
    layout = LAYOUTS[table_plan["name"]]
    protocol = parse_protocol(layout.paper, plan["protocols"][layout.paper])
    mine = cells[cells["table"] == layout.name]
    columns = list(dict.fromkeys(mine["column"]))
    if "average" in columns:  # last, after every block's subtasks in the domain table
        columns = [c for c in columns if c != "average"] + ["average"]
    labels = column_labels(layout, protocol, columns)
    if layout.kind == "domain":
        keys = [(b["domain"], v) for b in table_plan["blocks"] for v in b["rows"]]
    elif layout.kind == "curve":
        keys = [(f, v) for f in table_plan["fractions"] for v in table_plan["rows"]]
    else:
        keys = [("", v) for v in table_plan["rows"]]
    records = []
    for block, variant in keys:
        row = mine[(mine["block"] == block) & (mine["variant"] == variant)]
        record: dict[str, str] = {}
        if layout.kind == "domain":
            record["Domain"] = protocol.domains[block].label
        if layout.kind == "curve":
            record["Fraction of training"] = block
        record[ROW_HEADER] = plan["labels"].get(variant, variant)
        by_column = {r["column"]: r for r in row.to_dict("records")}
        for column in columns:
            cell = by_column.get(column)
            half = None if cell is None else (cell["high"] - cell["mean"])
            record[labels[column]] = ("" if cell is None else format_cell(
                cell["mean"], half, int(cell["n"]), decimals_of(layout, column)))
        records.append(record)
    frame = pd.DataFrame(records)
    frame.attrs["notes"] = table_notes(layout, protocol, plan, mine)
    return frame


def table_notes(layout: TableLayout, protocol: Protocol, plan: dict,
                cells: pd.DataFrame) -> list[str]:
    notes = [layout.caption + "."]
    if plan["scale"] != "same scale":
        notes.append("Different scale from the paper: these numbers come from this "
                     "configuration's corpus, models and tasks, not the paper's.")
    shown = {c for c in cells["column"] if c in protocol.tasks}
    shown |= {t for g in protocol.groups if g.id in set(cells["column"]) for t in g.tasks}
    if "average" in set(cells["column"]):
        shown |= set(protocol.grouped_tasks)
    if plan["stand_ins"] and shown:
        settings = plan["settings"][protocol.name]
        listed = ", ".join(f"{protocol.tasks[t].label} = {settings[t].replace('@', ' @ ')} shots"
                           for t in protocol.tasks if t in shown)
        notes.append("Offline stand-ins, not the benchmarks: each task column holds a local "
                     f"task built from held-out text ({listed}).")
    replicated = int(cells["n"].max()) if len(cells) else 0
    if replicated >= 2:
        notes.append(f"Mean over up to {replicated} replicates (own selection and model seed "
                     "each); ± is the half-width of the 95% t-interval over them.")
    else:
        notes.append("One run per variant, as in the papers: no interval over seeds.")
    missing = sorted({plan["labels"].get(v, v) for v in
                      cells.loc[cells["mean"].isna(), "variant"]})
    if missing:
        notes.append(f"Empty cells: no result for {', '.join(missing)}.")
    if layout.kind == "curve":
        notes.append("Rows below 1.0 are the model's weights at that point of its training "
                     "(not averaged); 1.0 is the final model, the average of its last "
                     "checkpoints.")
    if layout.kind == "domain":
        notes.append("Perplexity is over every held-out source; the paper's Table 2 measures "
                     "it on each domain's documents. The last column, the mean of a block's "
                     "subtasks, is ours.")
    return notes


def all_paper_tables(plan: dict, cells: pd.DataFrame) -> dict[str, pd.DataFrame]:
    tables = {t["name"]: paper_table(t, plan, cells) for t in plan["tables"]}
    return tables | {t["name"]: rater_table(t, cells, plan["scale"])
                     for t in plan.get("rater_tables", [])}
