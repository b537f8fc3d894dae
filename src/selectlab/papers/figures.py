"""The papers' charts redrawn from the run's cells, with the spread over replicates.

* `metarater_figure1`: average downstream score against training tokens, one line per row
  (Meta-rater Figure 1: random, the best QuRating selection and Meta-rater);
* `metarater_figure2`: average score per number of proxy models (its Figure 2);
* `metarater_figure3`: task categories, all domains vs CommonCrawl only (its Figure 3);
* `dataman_figure6`: validation perplexity against each task's score over DataMan Table 1's
  rows, one panel per task, with Pearson's and Spearman's coefficients (its Figure 6);
* `paper_spread`: every paper's Table 1 average, each replicate a dot, the mean with its 95%
  interval as a bar, so the spread behind every verdict is visible.

Error bars are the cells' 95% intervals (over replicates, or lm-eval's standard errors for a
single run); a cell without an interval is drawn without a bar.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from selectlab.papers.layouts import LAYOUTS, SPREAD  # noqa: E402
from selectlab.papers.protocols import parse_protocol  # noqa: E402


def cell_rows(cells: pd.DataFrame, table: str, column: str) -> pd.DataFrame:
    return cells[(cells["table"] == table) & (cells["column"] == column)]


def error_bar(row) -> tuple[float, float]:
    if pd.isna(row["low"]) or pd.isna(row["high"]):
        return (0.0, 0.0)
    return (row["mean"] - row["low"], row["high"] - row["mean"])


def save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_curve(cells: pd.DataFrame, table_plan: dict, labels: dict, path: Path) -> Path:
    """Average score against tokens trained, one line per row, intervals as bars."""
    name = table_plan["name"]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    tokens = cell_rows(cells, name, "tokens")
    average = cell_rows(cells, name, "average")
    for variant in table_plan["rows"]:
        points = average[average["variant"] == variant].merge(
            tokens[tokens["variant"] == variant][["block", "mean"]].rename(
                columns={"mean": "tokens"}), on="block").sort_values("tokens")
        points = points[points["mean"].notna()]
        if points.empty:
            continue
        bars = list(zip(*[error_bar(r) for r in points.to_dict("records")], strict=True))
        ax.errorbar(points["tokens"], points["mean"], yerr=bars, marker="o", capsize=3,
                    label=labels.get(variant, variant))
    ax.set_xlabel("training tokens")
    ax.set_ylabel("average score (%)")
    ax.set_title(LAYOUTS[name].caption, fontsize=9)
    ax.legend(fontsize=8)
    return save(fig, path)


def plot_bars(cells: pd.DataFrame, table_plan: dict, labels: dict, columns: dict[str, str],
              path: Path) -> Path:
    """Grouped bars: one group per column, one bar per row, intervals as error bars."""
    name = table_plan["name"]
    rows = table_plan["rows"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(columns) * len(rows) / 2), 4))
    width = 0.8 / max(len(rows), 1)
    for i, variant in enumerate(rows):
        means, bars = [], []
        for column in columns:
            match = cell_rows(cells, name, column)
            match = match[match["variant"] == variant].to_dict("records")
            means.append(match[0]["mean"] if match else float("nan"))
            bars.append(error_bar(match[0]) if match else (0.0, 0.0))
        positions = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(columns))]
        ax.bar(positions, means, width, yerr=list(zip(*bars, strict=True)), capsize=3,
               label=labels.get(variant, variant))
    ax.set_xticks(range(len(columns)), list(columns.values()), fontsize=8)
    ax.set_ylabel("score (%)")
    ax.set_title(LAYOUTS[name].caption, fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, path)


def plot_ppl_vs_tasks(cells: pd.DataFrame, plan: dict, path: Path) -> Path:
    """DataMan Figure 6: per task, each row's validation perplexity against its score."""
    protocol = parse_protocol("dataman", plan["protocols"]["dataman"])
    ppl = cell_rows(cells, "dataman_table1", "val_ppl").set_index("variant")["mean"]
    tasks = protocol.grouped_tasks
    columns = 5
    fig, axes = plt.subplots((len(tasks) + columns - 1) // columns, columns, squeeze=False,
                             figsize=(3.0 * columns, 2.6 * ((len(tasks) + columns - 1) // columns)))
    for ax, task in zip(axes.flat, tasks, strict=False):
        scores = cell_rows(cells, "dataman_table14", task).set_index("variant")["mean"]
        both = pd.DataFrame({"ppl": ppl, "score": scores}).dropna()
        ax.scatter(both["ppl"], both["score"], s=10)
        title = protocol.tasks[task].label
        if len(both) >= 3 and both["ppl"].nunique() > 1 and both["score"].nunique() > 1:
            pearson = both["ppl"].corr(both["score"], method="pearson")
            spearman = both["ppl"].corr(both["score"], method="spearman")
            title += f"\nPearson {pearson:+.2f}, Spearman {spearman:+.2f}"
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("val perplexity", fontsize=7)
        ax.set_ylabel("score (%)", fontsize=7)
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    return save(fig, path)


def plot_spread(cells: pd.DataFrame, plan: dict, path: Path) -> Path:
    """Each paper's Table 1 average: replicate dots and the mean with its interval."""
    tables = [t for t in plan["tables"] if t["name"].endswith("_table1")]
    fig, axes = plt.subplots(1, max(len(tables), 1), squeeze=False,
                             figsize=(4.5 * max(len(tables), 1), 0.35 * max(
                                 [len(t["rows"]) for t in tables] or [4]) + 1.5))
    for ax, table in zip(axes[0], tables, strict=False):
        average = cell_rows(cells, table["name"], "average").set_index("variant")
        for y, variant in enumerate(reversed(table["rows"])):
            if variant not in average.index or pd.isna(average.loc[variant, "mean"]):
                continue
            row = average.loc[variant]
            values = [float(v) for v in str(row["values"]).split(";") if v]
            ax.scatter(values, [y] * len(values), s=12, color="grey", zorder=2)
            low, high = error_bar({"mean": row["mean"], "low": row["low"], "high": row["high"]})
            ax.errorbar([row["mean"]], [y], xerr=[[low], [high]], fmt="D", color="black",
                        capsize=3, zorder=3)
        ax.set_yticks(range(len(table["rows"])),
                      [plan["labels"].get(v, v) for v in reversed(table["rows"])], fontsize=7)
        ax.set_xlabel("average score (%)")
        ax.set_title(LAYOUTS[table["name"]].caption.split(":")[0], fontsize=9)
    return save(fig, path)


def draw_charts(cells: pd.DataFrame, plan: dict, out_dir: Path) -> list[str]:
    """Every chart the plan's tables allow; returns the figure names written."""
    out_dir = Path(out_dir)
    labels = plan["labels"]
    by_name = {t["name"]: t for t in plan["tables"]}
    written = []
    if "metarater_figure1" in by_name:
        plot_curve(cells, by_name["metarater_figure1"], labels, out_dir / "metarater_figure1.png")
        written.append("metarater_figure1")
    if "metarater_figure2" in by_name:
        plot_bars(cells, by_name["metarater_figure2"], labels, {"average": "average"},
                  out_dir / "metarater_figure2.png")
        written.append("metarater_figure2")
    if "metarater_figure3" in by_name:
        protocol = parse_protocol("metarater", plan["protocols"]["metarater"])
        plot_bars(cells, by_name["metarater_figure3"], labels,
                  {g.id: g.label for g in protocol.groups}, out_dir / "metarater_figure3.png")
        written.append("metarater_figure3")
    if {"dataman_table1", "dataman_table14"} <= set(by_name):
        plot_ppl_vs_tasks(cells, plan, out_dir / "dataman_figure6.png")
        written.append("dataman_figure6")
    plot_spread(cells, plan, out_dir / f"{SPREAD}.png")
    return [*written, SPREAD]
