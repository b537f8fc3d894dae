"""The win-rate figure in the papers' shape: one panel per paper (QuRating Figure 3, DataMan
Figure 2), a bar per variant with its bootstrap 95% interval, and the 50% line where a
variant's answers are as good as the reference variant's. The judge's caveats are printed under
the panels, so a copied figure still says which judge it rests on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from selectlab.analysis.figures import finish
from selectlab.report.figures import RC

BAR_INCHES = 0.32


def plot_winrate(table: pd.DataFrame, out_path: Path, notes: Sequence[str] = ()) -> Path:
    figures = list(dict.fromkeys(table["figure"]))
    heights = [max(1.6, BAR_INCHES * (table["figure"] == f).sum() + 0.9) for f in figures]
    with matplotlib.rc_context(RC):
        figure = Figure(figsize=(7.0, sum(heights) + 0.4 * len(notes) + 0.4))
        grid = figure.add_gridspec(len(figures), 1, height_ratios=heights)
        for index, name in enumerate(figures):
            axes = figure.add_subplot(grid[index])
            rows = table[table["figure"] == name].iloc[::-1]
            rate = rows["win_rate"].to_numpy(dtype=float)
            errors = np.vstack([rate - rows["ci_low"].to_numpy(dtype=float),
                                rows["ci_high"].to_numpy(dtype=float) - rate])
            positions = np.arange(len(rows))
            axes.barh(positions, rate, color="tab:blue", height=0.6, zorder=3)
            axes.errorbar(rate, positions, xerr=np.nan_to_num(errors), fmt="none",
                          ecolor="black", capsize=3, linewidth=0.8, zorder=4)
            high = rows["ci_high"].to_numpy(dtype=float)
            for y, value, right in zip(positions, rate, high, strict=True):
                if np.isfinite(value):  # the number sits right of its interval
                    x = (right if np.isfinite(right) else value) + 1
                    axes.text(x, y, f"{value:.1f}", va="center", fontsize=7, zorder=5)
            axes.axvline(50, color="grey", linestyle="--", linewidth=0.8, zorder=2)
            axes.set_yticks(positions, rows["label"].tolist())
            axes.set_xlim(0, 100)
            axes.set_ylim(-0.8, len(rows) - 0.2)
            reference = rows["reference"].iloc[0] if len(rows) else ""
            axes.set_title(f"{name}: win rate (%) against {reference}")
            if index == len(figures) - 1:
                axes.set_xlabel("win rate, ties as half (%); bars: bootstrap 95% interval")
        return finish(figure, notes, out_path)
