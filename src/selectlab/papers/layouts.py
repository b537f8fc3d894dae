"""The shape of every numbered result table of the three papers that the workflow regenerates.

A layout names the table's kind and what its columns hold; which variants are its rows is
configuration (`evaluation.protocols.<paper>.tables.<table>`), so the rows follow the config's
variant names and families, whatever pool they select from.

Kinds:
* `summary`: validation and test perplexity (when `perplexity`), one column per task group,
  the protocol's average (QuRating/DataMan Table 1, DataMan Table 15, Meta-rater Tables 1, 3, 4);
* `per_task`: one column per task of the protocol's groups, and the average (QuRating Table 9,
  DataMan Table 14, Meta-rater Table 13), or per ungrouped task (`extra`, Meta-rater Table 19);
* `domain`: DataMan Table 2, one block per continued-pre-training domain: the base model and
  each domain's continued model, scored on that domain's MMLU subtasks;
* `ppl_source`: DataMan Tables 12 and 13, perplexity per SlimPajama source on one split.

* `curve`: the `summary` columns of each row at several points of its training (fractions of
  its tokens; 1.0 is the final model), Meta-rater Figure 1.
* `rater`: QuRating Table 6, a row per way of training the QuRater, a column per criterion; its
  rows are fixed by the paper, not variants (`selectlab.papers.rater_comparison`).

Meta-rater's Figures 1-3 are charts; their numbers are laid out as tables too
(`metarater_figure1` ...) and drawn from them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableLayout:
    paper: str
    number: str
    kind: str
    caption: str
    perplexity: bool = False
    split: str | None = None
    extra_tasks: bool = False
    item: str = "table"  # or "figure": the paper draws these numbers as a chart
    # Your own rows (selectlab.plugins) join this table beside the paper's: the main
    # comparison of each paper and its per-task breakdown.
    open_rows: bool = False

    @property
    def name(self) -> str:
        return f"{self.paper}_{self.item}{self.number}"


# The source order of DataMan Tables 12-13: CC, C4, Github, Wiki, ArXiv, StackEx, Book, Overall.
DATAMAN_SOURCE_ORDER = (
    "RedPajamaCommonCrawl", "RedPajamaC4", "RedPajamaGithub", "RedPajamaWikipedia",
    "RedPajamaArXiv", "RedPajamaStackExchange", "RedPajamaBook",
)

LAYOUTS: dict[str, TableLayout] = {
    layout.name: layout
    for layout in (
        TableLayout("qurating", "1", "summary",
                    "QuRating Table 1: perplexity and ICL per selection", perplexity=True,
                    open_rows=True),
        TableLayout("qurating", "6", "rater",
                    "QuRating Table 6: QuRater accuracy by training setup"),
        TableLayout("qurating", "9", "per_task", "QuRating Table 9: ICL per task",
                    open_rows=True),
        TableLayout("dataman", "1", "summary",
                    "DataMan Table 1: perplexity and ICL per selection", perplexity=True,
                    open_rows=True),
        TableLayout("dataman", "2", "domain",
                    "DataMan Table 2: domain continued pre-training on MMLU subtasks",
                    perplexity=True),
        TableLayout("dataman", "12", "ppl_source",
                    "DataMan Table 12: validation perplexity per source", split="validation"),
        TableLayout("dataman", "13", "ppl_source",
                    "DataMan Table 13: test perplexity per source", split="test"),
        TableLayout("dataman", "14", "per_task", "DataMan Table 14: ICL per task",
                    open_rows=True),
        TableLayout("dataman", "15", "summary", "DataMan Table 15: 60B-token budgets",
                    perplexity=True),
        TableLayout("metarater", "1", "summary",
                    "Meta-rater Table 1: selection methods on downstream tasks",
                    open_rows=True),
        TableLayout("metarater", "3", "summary", "Meta-rater Table 3: model and data scale"),
        TableLayout("metarater", "4", "summary", "Meta-rater Table 4: naive combinations"),
        TableLayout("metarater", "13", "per_task", "Meta-rater Table 13: ICL per task",
                    open_rows=True),
        TableLayout("metarater", "19", "per_task",
                    "Meta-rater Table 19: MMLU and NaturalQuestions", extra_tasks=True),
        TableLayout("metarater", "1", "curve",
                    "Meta-rater Figure 1: average downstream score against training tokens",
                    item="figure"),
        TableLayout("metarater", "2", "summary",
                    "Meta-rater Figure 2: downstream scores by number of proxy models",
                    item="figure"),
        TableLayout("metarater", "3", "summary",
                    "Meta-rater Figure 3: all domains vs CommonCrawl only", item="figure"),
    )
}


def layout(paper: str, table: str) -> TableLayout:
    """`table` is the config's key: `table1`, `figure3`, ..."""
    name = f"{paper}_{table}"
    if name not in LAYOUTS:
        known = sorted(n for n in LAYOUTS if n.startswith(f"{paper}_"))
        raise ValueError(f"no layout for {paper} {table}; this workflow regenerates {known}")
    return LAYOUTS[name]


# The charts `selectlab.papers.figures` draws (figures/<name>.png); their headings and captions
# in the report are selectlab.report.plan's.
CHARTS = ("metarater_figure1", "metarater_figure2", "metarater_figure3")
SPREAD = "paper_spread"
PPL_VS_TASKS = "dataman_figure6"


def chart_names(plan: dict) -> list[str]:
    """The figures drawn for a paper plan, in the order they are drawn."""
    tables = {t["name"] for t in plan["tables"]}
    names = sorted(n for n in tables if n in CHARTS)
    names += [PPL_VS_TASKS] if {"dataman_table1", "dataman_table14"} <= tables else []
    return [*names, SPREAD] if plan["tables"] else []
