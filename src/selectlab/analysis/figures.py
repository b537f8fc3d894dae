"""The analysis figures: score distributions per source (DataMan Fig. 3, Meta-rater Figs. 6-12),
correlation heatmaps (DataMan Fig. 5, Meta-rater Fig. 4) and DataMan's ratings against the
reference LM's negative log-likelihood (DataMan Fig. 4).

Drawing follows `selectlab.report.figures`: an explicit Agg canvas, pinned rc settings and no
Software tag, so the same table gives byte-identical PNGs. Caveats (a simulated judge) are
printed under the panels, so a figure copied out of the report still carries them.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from selectlab.analysis.sample import split_name
from selectlab.report.figures import RC, _save_png, family_colours
from selectlab.report.tables import SOURCE_ORDER, short_source_name

PANEL_SIZE = (3.2, 2.4)
PANEL_COLUMNS = 4
MAX_LEVELS = 11  # integer scores with at most this many values are drawn as rating shares
BINS = 30
ANNOTATE_CELLS_UP_TO = 16
NOTE_FONT = 6.5


def source_order(sources: Sequence[str]) -> list[str]:
    present = set(sources)
    known = [s for s in SOURCE_ORDER if s in present]
    return known + sorted(present - set(known))


def is_rating(series: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(series) and series.dropna().nunique() <= MAX_LEVELS


def panel_figure(count: int, title: str) -> tuple[Figure, list]:
    columns = min(PANEL_COLUMNS, max(count, 1))
    rows = max(1, math.ceil(count / columns))
    figure = Figure(figsize=(PANEL_SIZE[0] * columns, PANEL_SIZE[1] * rows + 0.6))
    axes = [figure.add_subplot(rows, columns, i + 1) for i in range(max(count, 1))]
    figure.suptitle(title)
    return figure, axes


def finish(figure: Figure, notes: Sequence[str], out_path: Path, top_inches: float = 0.0) -> Path:
    """Notes go under the panels, wrapped to the figure's width; `top_inches` stay free above
    them (a figure-wide legend)."""
    width = int(figure.get_figwidth() * 14)
    text = "\n".join(textwrap.fill(note, width) for note in notes)
    height = figure.get_figheight()
    bottom = 0.0
    if text:
        lines = text.count("\n") + 1
        bottom = min(0.3, (lines * NOTE_FONT * 1.4 / 72 + 0.1) / height)
        figure.text(0.01, 0.01, text, fontsize=NOTE_FONT, va="bottom", ha="left")
    figure.tight_layout(rect=(0, bottom, 1, 1 - top_inches / height))
    return _save_png(figure, out_path)


def rating_colours(frame: pd.DataFrame, columns: Sequence[str]) -> dict[int, tuple]:
    """One colour per rating level over all rating panels of a figure, low to high."""
    levels = sorted({int(v) for c in columns for v in frame[c].dropna().unique()})
    cmap = matplotlib.colormaps["viridis"]
    return {level: cmap(i / max(len(levels) - 1, 1)) for i, level in enumerate(levels)}


def panel_title(series: pd.Series) -> str:
    name = split_name(str(series.name))[1]
    missing = int(series.isna().sum())
    return f"{name} ({missing} missing)" if missing else name


def draw_rating_shares(axes, values: pd.Series, sources: pd.Series, order: list[str],
                       colours: dict[int, tuple]) -> None:
    """One horizontal bar per source, split into the share of each rating."""
    for row, source in enumerate(order):
        rated = values[(sources == source).to_numpy()].dropna().astype(int)
        left = 0.0
        for level, colour in colours.items():
            share = float((rated == level).mean()) if len(rated) else 0.0
            axes.barh(row, share, left=left, color=colour)
            left += share
    axes.set_yticks(range(len(order)), [short_source_name(s) for s in order], fontsize=7)
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of documents")
    axes.invert_yaxis()


def histogram_edges(values: np.ndarray) -> np.ndarray:
    """Shared bins over the 1st-99th percentile, so one outlier does not flatten the rest."""
    low, high = np.percentile(values, [1, 99])
    if high <= low:
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, BINS + 1)


def draw_histograms(axes, values: pd.Series, sources: pd.Series, order: list[str],
                    colours: dict) -> None:
    finite = values.astype("float64")
    finite = finite[np.isfinite(finite)]
    if finite.empty:
        axes.text(0.5, 0.5, "no values", ha="center", transform=axes.transAxes)
        return
    edges = histogram_edges(finite.to_numpy())
    for source in order:
        part = finite[(sources[finite.index] == source).to_numpy()]
        if part.empty:
            continue
        clipped = np.clip(part.to_numpy(), edges[0], edges[-1])
        axes.hist(clipped, bins=edges, density=True, histtype="step", linewidth=1.0,
                  color=colours[source], label=short_source_name(source))
    axes.set_ylabel("density")


def plot_distributions(frame: pd.DataFrame, columns: Sequence[str], out_path: Path, *,
                       title: str, notes: Sequence[str] = ()) -> Path:
    """One panel per score: rating shares per source, or per-source histograms."""
    order = source_order(frame["set_name"].tolist())
    colours = family_colours(order)
    levels = rating_colours(frame, [c for c in columns if is_rating(frame[c])])
    with matplotlib.rc_context(RC):
        figure, axes = panel_figure(len(columns), title)
        legend_drawn = False
        for ax, column in zip(axes, columns, strict=False):
            values = frame[column]
            if is_rating(values):
                draw_rating_shares(ax, values, frame["set_name"], order, levels)
            else:
                draw_histograms(ax, values, frame["set_name"], order, colours)
                if not legend_drawn and ax.get_legend_handles_labels()[0]:
                    ax.legend(fontsize=6, loc="best")
                    legend_drawn = True
            ax.set_title(panel_title(values), fontsize=8)
        for ax in axes[len(columns):]:
            ax.set_visible(False)
        if not columns:
            axes[0].text(0.5, 0.5, "no score columns", ha="center", transform=axes[0].transAxes)
        top = 0.0
        if levels:
            handles = [Patch(color=colour, label=str(level)) for level, colour in levels.items()]
            figure.legend(handles=handles, title="rating", ncol=len(handles), fontsize=7,
                          title_fontsize=7, loc="upper center", frameon=False,
                          bbox_to_anchor=(0.5, 1 - 0.3 / figure.get_figheight()))
            top = 0.75
        return finish(figure, notes, out_path, top_inches=top)


def plot_heatmap(matrix: pd.DataFrame, out_path: Path, *, title: str, colorbar_label: str,
                 notes: Sequence[str] = ()) -> Path:
    """A correlation matrix from -1 (blue) to +1 (red); undefined cells grey."""
    names = [str(n) for n in matrix.index]
    size = max(4.5, 0.3 * len(names) + 2.5)
    cmap = matplotlib.colormaps["RdBu_r"].with_extremes(bad="0.8")
    with matplotlib.rc_context(RC | {"axes.grid": False}):
        figure = Figure(figsize=(size + 1.2, size))
        axes = figure.add_subplot()
        values = matrix.to_numpy(dtype=float)
        image = axes.imshow(np.ma.masked_invalid(values), vmin=-1.0, vmax=1.0, cmap=cmap)
        font = 7 if len(names) <= ANNOTATE_CELLS_UP_TO else 5
        axes.set_xticks(range(len(names)), names, rotation=70, ha="right", fontsize=font)
        axes.set_yticks(range(len(names)), names, fontsize=font)
        if len(names) <= ANNOTATE_CELLS_UP_TO:
            for (i, j), value in np.ndenumerate(values):
                if np.isfinite(value):
                    axes.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=5.5,
                              color="white" if abs(value) > 0.6 else "black")
        figure.colorbar(image, ax=axes, label=colorbar_label, shrink=0.8)
        axes.set_title(title)
        return finish(figure, notes, out_path)


def plot_ratings_vs_nll(frame: pd.DataFrame, ratings: Sequence[str], nll: str,
                        rho: pd.DataFrame, labels: dict[str, str], out_path: Path, *,
                        notes: Sequence[str] = ()) -> Path:
    """Per rating, the reference NLL of the documents at each rating level (box: quartiles,
    whiskers: 1.5 IQR), titled with Spearman's rho (`rho` from `spearman_against`)."""
    by_rating = rho.set_index("rating")
    with matplotlib.rc_context(RC):
        figure, axes = panel_figure(len(ratings), "DataMan ratings vs reference-LM NLL")
        for ax, column in zip(axes, ratings, strict=False):
            rating = split_name(column)[1]
            both = frame[[column, nll]].dropna()
            levels = sorted(int(v) for v in both[column].unique())
            groups = [both.loc[both[column] == level, nll].astype(float).to_numpy()
                      for level in levels]
            if groups:
                ax.boxplot(groups, positions=levels, widths=0.6, showfliers=False)
            value = by_rating.at[rating, "spearman"]
            shown = "n/a" if pd.isna(value) else f"{value:+.2f}"
            ax.set_title(f"{labels.get(rating, rating)}: ρ = {shown}", fontsize=8)
            ax.set_xlabel("rating")
            ax.set_ylabel("NLL (nats/token)")
        for ax in axes[len(ratings):]:
            ax.set_visible(False)
        return finish(figure, notes, out_path)


def plot_scores_vs_nll(frame: pd.DataFrame, scores: Sequence[str], nll: str, rho: pd.DataFrame,
                       out_path: Path, *, title: str, notes: Sequence[str] = ()) -> Path:
    """QuRating Figure 7: per score, every sampled document as a point (score against the
    reference NLL), titled with Spearman's rho (`rho` from `spearman_against`)."""
    by_score = rho.set_index("rating")
    with matplotlib.rc_context(RC):
        figure, axes = panel_figure(len(scores), title)
        for ax, column in zip(axes, scores, strict=False):
            name = split_name(column)[1]
            both = frame[[column, nll]].dropna().astype(float)
            ax.scatter(both[nll], both[column], s=2, alpha=0.3, linewidths=0, rasterized=True)
            value = by_score.at[name, "spearman"] if name in by_score.index else float("nan")
            shown = "n/a" if pd.isna(value) else f"{value:+.2f}"
            ax.set_title(f"{name}: ρ = {shown}", fontsize=8)
            ax.set_xlabel("NLL (nats/token)")
            ax.set_ylabel("rating")
        for ax in axes[len(scores):]:
            ax.set_visible(False)
        return finish(figure, notes, out_path)
