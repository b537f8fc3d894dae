"""The overlap table and the selection figures: contents, and deterministic PNGs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selectlab.report import selection_figures as sf
from selectlab.report.table_files import write_table
from selectlab.report.tables import AVERAGE
from selectlab.selection.metarater import FitSettings as Fit
from selectlab.selection.metarater import ProxyResult, RegressorSettings, fit_search, proxy_weights

PNG = b"\x89PNG\r\n\x1a\n"
DESCRIPTIONS = {
    "uniform": {"family": "baseline", "label": "Uniform"},
    "mr": {"family": "metarater", "label": "Meta-rater"},
    "dsir": {"family": "baseline", "label": "DSIR"},
}


@pytest.fixture(scope="module")
def fit() -> dict:
    scores = ["a.x", "a.y", "-b.z"]
    rng = np.random.default_rng(0)
    proxies = [ProxyResult(f"s__proxy{i:03d}", proxy_weights(1, i, 3, 1.0), 0.0)
               for i in range(24)]
    proxies = [ProxyResult(p.name, p.weights, 3 - p.weights[0] + rng.normal(0, 0.01))
               for p in proxies]
    settings = Fit(search="s", scores=scores, proxies_used=24, seed=2, candidates=2000, top=16,
                   regressor=RegressorSettings(num_leaves=4, min_data_in_leaf=2))
    return fit_search(settings, proxies, {})


def test_overlap_table_is_in_report_order_and_round_trips(tmp_path):
    matrix = pd.DataFrame([[1.0, 0.25, 0.5], [0.25, 1.0, 0.125], [0.5, 0.125, 1.0]],
                          index=list(DESCRIPTIONS), columns=list(DESCRIPTIONS))
    table = sf.overlap_table(matrix, DESCRIPTIONS)
    assert table["variant"].tolist() == ["uniform", "dsir", "mr"]  # families grouped
    assert table["family"].tolist() == ["baseline", "baseline", "metarater"]
    assert table.loc[1, "uniform"] == 0.5 and table.loc[2, "dsir"] == 0.125
    write_table(table, tmp_path / "o.csv", tmp_path / "o.md")
    back = sf.read_overlap_table(tmp_path / "o.csv")
    assert back.loc["mr", "uniform"] == 0.25 and back.shape == (3, 3)
    assert "| dsir |" in (tmp_path / "o.md").read_text().replace("  ", " ")


def test_proxy_count_points_pair_each_variant_with_its_average():
    main = pd.DataFrame({"variant": ["MR 32", "MR 64", "Uniform"], AVERAGE: [40.0, None, 39.0]})
    points = sf.proxy_count_points(main, [("all", 32, "MR 32"), ("all", 64, "MR 64")])
    assert points.to_dict("records") == [{"search": "all", "proxies": 32, "average": 40.0}]


def test_principal_axes_follow_the_largest_spread():
    weights = np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0], [0.5, 0.25, 0.25]])
    mean, axes = sf.principal_axes(weights)
    assert np.allclose(mean, weights.mean(axis=0)) and axes.shape == (2, 3)
    assert abs(axes[0][0]) == pytest.approx(np.sqrt(2 / 3), abs=1e-6)


def test_figures_are_written_and_reproducible(fit, tmp_path):
    matrix = pd.DataFrame(np.eye(3), index=list(DESCRIPTIONS), columns=list(DESCRIPTIONS))
    points = pd.DataFrame({"search": ["s", "s"], "proxies": [8, 24], "average": [40.1, 41.0]})
    draw = {
        "selection_overlap": lambda out: sf.plot_selection_overlap(matrix, out),
        "metarater_fit": lambda out: sf.plot_metarater_fit({"s": fit}, out),
        "metarater_weights": lambda out: sf.plot_metarater_weights({"s": fit}, out),
        "metarater_proxies": lambda out: sf.plot_downstream_vs_proxies(points, out),
        "metarater_pca": lambda out: sf.plot_weight_pca({"s": fit}, out),
        "empty_fit": lambda out: sf.plot_metarater_fit({}, out),
        "empty_proxies": lambda out: sf.plot_downstream_vs_proxies(points.iloc[:0], out),
    }
    for name, plot in draw.items():
        first, second = tmp_path / f"{name}.png", tmp_path / f"{name}-again.png"
        plot(first)
        plot(second)
        assert first.read_bytes()[:8] == PNG, name
        assert first.read_bytes() == second.read_bytes(), name
