"""Selection figures: the overlap matrix between variants and Meta-rater's four figures.

Inputs are already-loaded data: the overlap matrix (`tables/selection_overlap.csv`), Meta-rater
fits (`metarater/{search}/n{N}/weights.json`, one per search) and the main table. Drawing follows
`report.figures` (explicit Agg canvas, pinned rc, byte-identical output for the same input).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from selectlab.report.figures import RC, _save_png, spearman
from selectlab.report.tables import AVERAGE, variants_in_report_order

PANEL_WIDTH = 4.2
OVERLAP_DECIMALS = 3


def overlap_table(matrix: pd.DataFrame, descriptions: Mapping[str, Mapping]) -> pd.DataFrame:
    """The Jaccard matrix as a table in report order: family, variant, one column per variant.

    Rows and columns use the config names (short); `matrix` is indexed by them too.
    """
    order = [v.name for v in variants_in_report_order(descriptions) if v.name in matrix.index]
    table = matrix.loc[order, order].round(OVERLAP_DECIMALS)
    table.insert(0, "variant", order)
    table.insert(0, "family", [descriptions[name].get("family", "") for name in order])
    table = table.reset_index(drop=True)
    table.attrs["decimals"] = {name: OVERLAP_DECIMALS for name in order}
    return table


def read_overlap_table(path: Path) -> pd.DataFrame:
    """The square Jaccard matrix back from `overlap_table`'s CSV."""
    table = pd.read_csv(path).drop(columns=["family"]).set_index("variant")
    return table.astype(float)


def _empty(axes, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes)
    axes.set_xticks([])
    axes.set_yticks([])


def _panels(count: int, height: float = 3.6,
            width: float = PANEL_WIDTH) -> tuple[Figure, list]:
    figure = Figure(figsize=(width * max(count, 1), height))
    axes = [figure.add_subplot(1, max(count, 1), i + 1) for i in range(max(count, 1))]
    return figure, axes


def plot_selection_overlap(matrix: pd.DataFrame, out_path: Path) -> Path:
    """Heatmap of pairwise Jaccard overlap between the variants' selected documents."""
    names = list(matrix.index)
    size = max(4.0, 0.45 * len(names) + 2.0)
    with matplotlib.rc_context(RC | {"axes.grid": False}):
        figure = Figure(figsize=(size + 1.0, size))
        axes = figure.add_subplot()
        image = axes.imshow(matrix.to_numpy(dtype=float), vmin=0.0, vmax=1.0, cmap="viridis")
        axes.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
        axes.set_yticks(range(len(names)), names, fontsize=7)
        if len(names) <= 20:
            for i in range(len(names)):
                for j in range(len(names)):
                    value = matrix.iat[i, j]
                    axes.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6,
                              color="white" if value < 0.6 else "black")
        figure.colorbar(image, ax=axes, label="Jaccard overlap of selected documents")
        axes.set_title(f"Selection overlap between {len(names)} variants")
        figure.tight_layout()
        return _save_png(figure, out_path)


def plot_metarater_fit(fits: Mapping[str, dict], out_path: Path) -> Path:
    """Predicted vs actual proxy validation loss; held-out proxies highlighted."""
    with matplotlib.rc_context(RC):
        figure, panels = _panels(len(fits))
        for axes, (search, fit) in zip(panels, fits.items(), strict=False):
            proxies = pd.DataFrame(fit["proxies"])
            for split, style in (("train", {"color": "0.6", "s": 14}),
                                 ("heldout", {"color": "tab:red", "s": 26})):
                rows = proxies[proxies["split"] == split]
                axes.scatter(rows["loss"], rows["predicted"], label=f"{split} ({len(rows)})",
                             edgecolors="black", linewidths=0.3, zorder=3, **style)
            low = min(proxies["loss"].min(), proxies["predicted"].min())
            high = max(proxies["loss"].max(), proxies["predicted"].max())
            axes.plot([low, high], [low, high], color="black", linewidth=0.6, linestyle="--")
            rho = fit["regressor"]["heldout_spearman"]
            axes.set_title(f"{search}: N = {fit['proxies_fitted']}, held-out Spearman "
                           f"{'n/a' if rho is None else f'{rho:+.2f}'}")
            axes.set_xlabel("proxy validation loss (nats/token)")
            axes.set_ylabel("LightGBM prediction")
            axes.legend(fontsize=7)
        if not fits:
            _empty(panels[0], "no Meta-rater search in this configuration")
        figure.tight_layout()
        return _save_png(figure, out_path)


def plot_metarater_weights(fits: Mapping[str, dict], out_path: Path) -> Path:
    """Learned weights (percent) per score, one panel per search (Meta-rater's Table 10)."""
    longest = max((len(fit["scores"]) for fit in fits.values()), default=1)
    with matplotlib.rc_context(RC):
        figure, panels = _panels(len(fits), height=max(3.0, 0.28 * longest + 1.2), width=6.5)
        for axes, (search, fit) in zip(panels, fits.items(), strict=False):
            weights = 100 * np.asarray(fit["weights"]) / max(sum(fit["weights"]), 1e-12)
            positions = np.arange(len(weights))
            axes.barh(positions, weights, color="tab:blue")
            axes.axvline(100 / len(weights), color="black", linewidth=0.6, linestyle="--")
            axes.set_yticks(positions, fit["scores"], fontsize=7)
            axes.invert_yaxis()
            axes.set_xlabel("weight (%); dashed: equal weights")
            axes.set_title(f"{search}: mean of best {fit['top']} / {fit['candidates']}")
        if not fits:
            _empty(panels[0], "no Meta-rater search in this configuration")
        figure.tight_layout()
        return _save_png(figure, out_path)


def proxy_count_points(main: pd.DataFrame,
                       variants: Sequence[tuple[str, int, str]]) -> pd.DataFrame:
    """(search, proxies, average) for the Meta-rater variants that have an ICL average.

    `variants` lists (search, number of proxies, table label) of every Meta-rater variant.
    """
    averages = dict(zip(main["variant"], pd.to_numeric(main[AVERAGE], errors="coerce"),
                        strict=True))
    rows = [{"search": search, "proxies": n, "average": averages.get(label)}
            for search, n, label in variants]
    points = pd.DataFrame(rows, columns=["search", "proxies", "average"])
    return points[np.isfinite(points["average"].astype(float))]


def plot_downstream_vs_proxies(points: pd.DataFrame, out_path: Path) -> Path:
    """ICL average against the number of proxies the weights were fitted on (Fig. 2)."""
    with matplotlib.rc_context(RC):
        figure = Figure(figsize=(5.5, 3.8))
        axes = figure.add_subplot()
        for search, rows in points.groupby("search", sort=False):
            rows = rows.sort_values("proxies")
            axes.plot(rows["proxies"], rows["average"], marker="o", label=search)
        if points.empty:
            _empty(axes, "no Meta-rater variant has an ICL average")
        else:
            axes.set_xscale("log", base=2)
            axes.legend(title="search", fontsize=7, title_fontsize=7)
        axes.set_xlabel("proxy models N")
        axes.set_ylabel("ICL average (accuracy x100)")
        axes.set_title("Downstream score vs number of proxies")
        figure.tight_layout()
        return _save_png(figure, out_path)


def principal_axes(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, first two principal directions) of the rows of `weights`."""
    mean = weights.mean(axis=0)
    _, _, directions = np.linalg.svd(weights - mean, full_matrices=False)
    if directions.shape[0] < 2:
        directions = np.vstack([directions, np.zeros_like(directions)])
    return mean, directions[:2]


def plot_weight_pca(fits: Mapping[str, dict], out_path: Path) -> Path:
    """Proxies' weight vectors on their first two principal components, coloured by loss, over
    the regressor's predicted loss of candidate vectors (Meta-rater's Fig. 5)."""
    with matplotlib.rc_context(RC):
        figure, panels = _panels(len(fits))
        for axes, (search, fit) in zip(panels, fits.items(), strict=False):
            proxies = np.array([p["weights"] for p in fit["proxies"]], dtype=float)
            losses = np.array([p["loss"] for p in fit["proxies"]], dtype=float)
            mean, axes_2d = principal_axes(proxies)
            landscape = np.asarray(fit["landscape"]["weights"], dtype=float)
            if len(landscape):
                shown = (landscape - mean) @ axes_2d.T
                axes.scatter(shown[:, 0], shown[:, 1], c=fit["landscape"]["predicted"], s=6,
                             cmap="Greys", alpha=0.5, zorder=1)
            projected = (proxies - mean) @ axes_2d.T
            points = axes.scatter(projected[:, 0], projected[:, 1], c=losses, cmap="viridis_r",
                                  s=30, edgecolors="black", linewidths=0.3, zorder=3)
            learned = (np.asarray(fit["weights"], dtype=float) - mean) @ axes_2d.T
            axes.scatter([learned[0]], [learned[1]], marker="*", s=160, color="tab:red",
                         edgecolors="black", zorder=4, label="learned weights")
            figure.colorbar(points, ax=axes, label="proxy validation loss")
            rho = spearman(projected[:, 0].tolist(), losses.tolist())
            axes.set_title(f"{search}: PC1 vs loss Spearman "
                           f"{'n/a' if rho is None else f'{rho:+.2f}'}")
            axes.set_xlabel("PC1 of proxy weights")
            axes.set_ylabel("PC2")
            axes.legend(fontsize=7, loc="best")
        if not fits:
            _empty(panels[0], "no Meta-rater search in this configuration")
        figure.tight_layout()
        return _save_png(figure, out_path)
