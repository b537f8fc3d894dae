"""PNG figures: validation perplexity against ICL average, and training-loss curves.

Figures are drawn on an explicit Agg canvas (no pyplot, so no global backend or figure state)
inside a fixed rc context, and saved without the Software tag, so the same inputs give
byte-identical files.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

from selectlab.report.tables import AVERAGE, VAL_PPL
from selectlab.shards import atomic_write_bytes

DPI = 150
# Pinned so a user's matplotlibrc cannot change the pixels.
RC = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "savefig.dpi": DPI,
    "path.simplify": True,
}
PNG_METADATA = {"Software": None}
LINE_STYLES = ("-", "--", ":", "-.")


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson r, or None with fewer than three points or a constant series."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) < 3 or len(xs) != len(ys):
        return None
    dx, dy = xs - xs.mean(), ys - ys.mean()
    denominator = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    if denominator == 0.0:
        return None
    return float((dx * dy).sum()) / denominator


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman rho: Pearson on ranks, ties sharing their average rank."""
    if len(x) != len(y):
        return None
    x_ranks = pd.Series(x, dtype=float).rank(method="average")
    y_ranks = pd.Series(y, dtype=float).rank(method="average")
    return pearson(x_ranks.to_numpy(), y_ranks.to_numpy())


def family_colours(families: Sequence[str]) -> dict[str, tuple]:
    """One tab10/tab20 colour per family, assigned in order of first appearance."""
    unique = list(dict.fromkeys(families))
    cmap = matplotlib.colormaps["tab10" if len(unique) <= 10 else "tab20"]
    return {family: cmap(i % cmap.N) for i, family in enumerate(unique)}


def _format_corr(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def _save_png(figure: Figure, out_path: Path) -> Path:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata=PNG_METADATA)
    atomic_write_bytes(Path(out_path), buffer.getvalue())
    return Path(out_path)


def plot_ppl_vs_icl(
    main: pd.DataFrame,
    out_path: Path,
    *,
    x_column: str = VAL_PPL,
    y_column: str = AVERAGE,
    title: str = "Validation perplexity vs ICL average",
) -> Path:
    """Scatter of `main_table` rows: one labelled point per variant, coloured by family.

    Variants without both numbers are left out; the title gives n, Pearson r and Spearman rho
    over the plotted points.
    """
    points = main[["family", "variant", x_column, y_column]].copy()
    points[x_column] = pd.to_numeric(points[x_column], errors="coerce")
    points[y_column] = pd.to_numeric(points[y_column], errors="coerce")
    points = points[np.isfinite(points[x_column]) & np.isfinite(points[y_column])]
    xs, ys = points[x_column].to_list(), points[y_column].to_list()
    r, rho = pearson(xs, ys), spearman(xs, ys)

    with matplotlib.rc_context(RC):
        figure = Figure(figsize=(7.0, 5.0))
        axes = figure.add_subplot()
        colours = family_colours(list(main["family"]))
        for family, rows in points.groupby("family", sort=False):
            axes.scatter(
                rows[x_column],
                rows[y_column],
                color=colours[family],
                label=family,
                s=28,
                edgecolors="black",
                linewidths=0.4,
                zorder=3,
            )
        for _, row in points.iterrows():
            axes.annotate(
                str(row["variant"]),
                (row[x_column], row[y_column]),
                xytext=(4, 3),
                textcoords="offset points",
                fontsize=7,
            )
        if points.empty:
            axes.text(
                0.5, 0.5, "no variant has both numbers", ha="center", transform=axes.transAxes
            )
        axes.set_xlabel(f"validation perplexity ({x_column}, lower is better)")
        axes.set_ylabel(f"ICL {y_column} (accuracy x100)")
        axes.set_title(
            f"{title}\nn = {len(points)}, Pearson r = {_format_corr(r)}, "
            f"Spearman ρ = {_format_corr(rho)}"
        )
        if not points.empty:
            axes.legend(title="family", fontsize=7, title_fontsize=7, loc="best")
        figure.tight_layout()
        return _save_png(figure, out_path)


def read_train_log(path: Path) -> pd.DataFrame:
    return pd.read_csv(path)


def smooth(values: pd.Series, fraction: float = 0.02) -> pd.Series:
    """Trailing mean over ~`fraction` of the logged points; keeps the curve's length."""
    window = max(1, round(len(values) * fraction))
    return values.rolling(window=window, min_periods=1).mean()


def _loss_axis_limits(curves: Sequence[pd.Series], skip_fraction: float) -> tuple | None:
    # The first steps' loss (~ln vocab) would flatten every difference worth seeing.
    tails = [c.iloc[int(len(c) * skip_fraction) :] for c in curves if len(c)]
    values = pd.concat(tails) if tails else pd.Series(dtype=float)
    values = values[np.isfinite(values)]
    if values.empty:
        return None
    low, high = float(values.min()), float(values.max())
    pad = 0.05 * (high - low) or 0.05 * abs(high) or 0.1
    return low - pad, high + pad


def plot_loss_curves(
    train_logs: Mapping[str, Path | pd.DataFrame],
    out_path: Path,
    *,
    labels: Mapping[str, str] | None = None,
    families: Mapping[str, str] | None = None,
    smoothing_fraction: float = 0.02,
    skip_fraction: float = 0.1,
    title: str = "Training loss",
) -> Path:
    """Training loss (trailing-mean smoothed) against tokens seen, one line per variant.

    `train_logs` maps variant name to its `train_log.csv` (or the loaded frame), in plotting
    order. Lines share their family's colour and differ in dash style. The y range fits the
    curves after the first `skip_fraction` of each run.
    """
    labels = labels or {}
    families = families or {}
    colours = family_colours([families.get(name, "") for name in train_logs])
    style_index: dict[str, int] = {}
    curves: list[pd.Series] = []
    with matplotlib.rc_context(RC):
        figure = Figure(figsize=(8.0, 5.0))
        axes = figure.add_subplot()
        for name, log in train_logs.items():
            frame = log if isinstance(log, pd.DataFrame) else read_train_log(Path(log))
            frame = frame[["tokens", "loss"]].apply(pd.to_numeric, errors="coerce").dropna()
            if frame.empty:
                continue
            frame = frame.sort_values("tokens", kind="stable")
            family = families.get(name, "")
            nth = style_index.get(family, 0)
            style_index[family] = nth + 1
            curve = smooth(frame["loss"].reset_index(drop=True), smoothing_fraction)
            curves.append(curve)
            axes.plot(
                frame["tokens"].to_numpy(),
                curve.to_numpy(),
                color=colours[family],
                linestyle=LINE_STYLES[nth % len(LINE_STYLES)],
                linewidth=1.0,
                label=labels.get(name, name),
            )
        limits = _loss_axis_limits(curves, skip_fraction)
        if limits is not None:
            axes.set_ylim(*limits)
        else:
            axes.text(0.5, 0.5, "no training log", ha="center", transform=axes.transAxes)
        axes.xaxis.set_major_formatter(EngFormatter())
        axes.set_xlabel("tokens seen")
        axes.set_ylabel("training loss (smoothed)")
        axes.set_title(title)
        if curves:
            columns = 1 if len(curves) <= 12 else 2
            axes.legend(fontsize=6, ncol=columns, loc="upper right")
        figure.tight_layout()
        return _save_png(figure, out_path)
