"""Per-paper tables and their comparison with published numbers, from hand-made results."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest

from selectlab.config import load_config
from selectlab.papers.cells import build_cells, cell_estimate, read_cells, read_results
from selectlab.papers.estimates import difference, estimate
from selectlab.papers.plan import evaluated_variants, paper_plan
from selectlab.papers.published import read_published, vs_published
from selectlab.papers.tables import all_paper_tables
from tests.conftest import REPO

EMBEDDED = load_config(REPO / "config" / "config.yaml")
PAPER = load_config(REPO / "config" / "paper.yaml")


def icl_result(plan: dict, accuracy: dict[str, float], default: float = 0.5) -> dict:
    """An icl.json holding every evaluated setting of the plan; `accuracy` by setting key."""
    keys = {key for settings in plan["settings"].values() for key in settings.values()}
    return {"settings": {
        key: {"task": key.split("@")[0], "shots": int(key.split("@")[1]),
              "acc": accuracy.get(key, default), "acc_stderr": 0.02,
              "acc_norm": accuracy.get(key, default) + 0.01, "acc_norm_stderr": 0.02,
              "exact_match": None, "exact_match_stderr": None, "n": 100}
        for key in keys}}


def ppl_result(overall: float) -> dict:
    split = {"RedPajamaWikipedia": {"ppl": overall - 1}, "RedPajamaBook": {"ppl": overall + 1},
             "all": {"ppl": overall}}
    return {"validation": split, "test": split}


@pytest.fixture(scope="module")
def embedded_run():
    """The embedded config with three replicates of uniform and Overall Score l=5."""
    config = copy.deepcopy(EMBEDDED)
    for variant in config["variants"].values():  # the rest run once, whatever the default says
        variant.pop("replicates", None)
    config["variants"]["uniform"]["replicates"] = 3
    config["variants"]["overall_l5"]["replicates"] = 3
    plan = paper_plan(config)
    runs = evaluated_variants(config)
    icl, perplexity = {}, {}
    for name in runs:
        bump = {"uniform": 0.0, "uniform__rep1": 0.02, "uniform__rep2": -0.02}.get(name, 0.1)
        icl[name] = icl_result(plan, {}, default=0.5 + bump)
        perplexity[name] = ppl_result(20.0 - 10 * bump)
    icl.pop("semdedup")  # a variant without ICL results: its cells stay empty
    cells = build_cells(plan, perplexity, icl)
    return config, plan, cells


def test_embedded_plan_has_the_papers_tables_and_replicates(embedded_run):
    config, plan, _ = embedded_run
    names = [t["name"] for t in plan["tables"]]
    assert names[:2] == ["qurating_table1", "qurating_table9"]
    assert {"dataman_table1", "dataman_table2", "dataman_table14", "metarater_table1"} <= set(
        names)
    assert plan["replicates"]["uniform"] == ["uniform", "uniform__rep1", "uniform__rep2"]
    assert plan["scale"] == "different scale" and plan["stand_ins"]
    assert paper_plan(PAPER)["scale"] == "same scale"
    # DataMan Table 2 at the embedded default: the Technology block, base first.
    (table2,) = [t for t in plan["tables"] if t["name"] == "dataman_table2"]
    assert table2["blocks"] == [{"domain": "E", "rows": ["overall_l5", "cpt_technology"]}]


def test_cells_average_replicates_and_use_the_papers_average(embedded_run):
    _, _, cells = embedded_run
    uniform = cell_estimate(cells, "dataman_table1", "uniform", "average")
    # Six tasks report acc_norm (51), BoolQ, WinoGrande, MMLU acc (50) and NQ's exact match
    # falls back to a stand-in's acc (50): 50.6, +-2 points over the three replicates.
    assert uniform.n == 3 and uniform.mean == pytest.approx(50.6)
    assert uniform.values == pytest.approx((50.6, 52.6, 48.6)) and uniform.basis == "replicates"
    # One run: the interval comes from lm-eval's standard errors (ten tasks, each 2 points).
    coherence = cell_estimate(cells, "dataman_table1", "dataman_coherence", "average")
    assert coherence.n == 1 and coherence.basis == "stderr"
    assert coherence.se == pytest.approx((10 * 2.0**2) ** 0.5 / 10)
    # Meta-rater reports acc, QuRating acc_norm: the same setting read with each metric.
    mr = cell_estimate(cells, "metarater_table1", "uniform", "average")
    assert mr.mean == pytest.approx(50.0)
    assert cell_estimate(cells, "metarater_table1", "semdedup", "average") is None
    # Perplexity has no interval from one run.
    assert cell_estimate(cells, "dataman_table1", "dataman_coherence", "val_ppl").basis == "none"


def test_cells_round_trip_through_csv(embedded_run, tmp_path):
    _, _, cells = embedded_run
    cells.to_csv(tmp_path / "cells.csv", index=False)
    back = read_cells(tmp_path / "cells.csv")
    for table, variant, column in [("dataman_table1", "uniform", "average"),
                                   ("dataman_table1", "dataman_coherence", "average")]:
        a, b = (cell_estimate(c, table, variant, column) for c in (cells, back))
        assert (b.mean, b.n, b.basis) == pytest.approx((a.mean, a.n, a.basis))
        assert (b.low, b.high) == pytest.approx((a.low, a.high))


def test_tables_have_the_papers_columns_and_rows(embedded_run):
    config, plan, cells = embedded_run
    tables = all_paper_tables(plan, cells)
    dataman = tables["dataman_table1"]
    assert list(dataman.columns) == [
        "Selection method", "Val Perplexity", "Test Perplexity",
        "Reading Comprehension (5 tasks)", "Commonsense Reasoning (3 tasks)",
        "World Knowledge (2 tasks)", "Average (10 tasks)"]
    assert dataman["Selection method"].tolist()[:2] == ["Uniform", "Uniform (+50% data)"]
    assert dataman.iloc[0]["Average (10 tasks)"] == "50.6 ± 5.0"  # t(2) x 2 / sqrt 3
    assert dataman.iloc[1]["Average (10 tasks)"] == "60.6"
    metarater = tables["metarater_table13"]
    assert list(metarater.columns)[1:] == [
        "ARC-C (15)", "ARC-E (15)", "SciQ (2)", "HellaSwag (6)", "SIQA (0)", "WinoGrande (15)",
        "RACE (0)", "OpenbookQA (0)", "Average (8 tasks)"]
    assert metarater.iloc[0]["Average (8 tasks)"] == "50.00 ± 4.97"
    notes = " ".join(metarater.attrs["notes"])
    assert "stand-ins" in notes and "ARC-C = sl_cloze_stackexchange @ 0 shots" in notes
    assert "Different scale" in notes and "Semantic deduplication" not in notes
    assert "Empty cells: no result for SemDeDup (k=20)" in notes
    table2 = tables["dataman_table2"]
    assert table2["Domain"].tolist() == ["Technology (not in the paper)"] * 2
    assert list(table2.columns)[-1] == "Mean of the domain's subtasks"
    per_source = tables["dataman_table12"]
    assert list(per_source.columns)[1:] == ["Wiki", "Book", "Overall"]


def test_vs_published_pairs_every_shared_cell_and_labels_the_scale(embedded_run):
    _, plan, cells = embedded_run
    published = read_published((REPO / "config" / "published").glob("*.csv"))
    compared = vs_published(cells, published, plan["scale"])
    assert set(compared["scale"]) == {"different scale"}
    uniform = compared[(compared["table"] == "dataman_table1")
                       & (compared["variant"] == "uniform") & (compared["column"] == "average")]
    (row,) = uniform.to_dict("records")
    assert row["published"] == 44.9 and row["run"] == pytest.approx(50.6)
    assert row["difference"] == pytest.approx(5.7)
    # Only cells both have: the embedded run has no dsir_book, the paper no Technology block.
    assert "dsir_book" not in set(compared["variant"])
    assert "dataman_table2" not in set(compared["table"])
    assert len(compared) == len(compared.drop_duplicates(["table", "block", "variant", "column"]))


def test_welch_difference_and_single_run_intervals():
    a, b = estimate([50.0, 51.0, 52.0]), estimate([45.0, 46.0, 47.0])
    diff = difference(a, b)
    assert diff.mean == pytest.approx(5.0) and diff.low > 0 and diff.basis == "replicates"
    single = difference(estimate([50.0], [1.0]), estimate([47.0], [1.0]))
    assert single.basis == "stderr" and single.se == pytest.approx(2**0.5)
    assert difference(estimate([10.0]), estimate([9.0])).low is None


def test_results_are_read_per_run(tmp_path):
    (tmp_path / "eval" / "uniform").mkdir(parents=True)
    (tmp_path / "eval" / "uniform" / "icl.json").write_text(json.dumps({"settings": {}}))
    perplexity, icl = read_results(str(tmp_path), ["uniform", "other"])
    assert icl == {"uniform": {"settings": {}}, "other": None}
    assert perplexity == {"uniform": None, "other": None}


def test_published_files_are_numbers_keyed_by_configured_variants():
    published = read_published((REPO / "config" / "published").glob("*.csv"))
    assert pd.api.types.is_float_dtype(published["published"])
    assert set(published["variant"]) <= set(PAPER["variants"])
    tables = {t for t in published["table"]}
    layouts = {t["name"] for t in paper_plan(PAPER)["tables"]}
    assert tables <= layouts


def test_curve_cells_tables_and_charts(tmp_path):
    """Meta-rater Figure 1 at full scale: each row evaluated at 1/4, 1/2, 3/4 and at the end."""
    from selectlab.papers.claims import judge_claims, load_claims
    from selectlab.papers.figures import draw_charts
    from selectlab.papers.layouts import chart_names

    config = copy.deepcopy(PAPER)
    # Meta-rater's random row re-runs uniform on the full SlimPajama; claims name it `uniform`.
    for variant in ("uniform_slimpajama", "metarater_all"):  # two seeds each, equal numbers
        config["variants"][variant]["replicates"] = 2
    plan = paper_plan(config)
    (curve,) = [t for t in plan["tables"] if t["name"] == "metarater_figure1"]
    assert curve["fractions"] == ["0.25", "0.5", "0.75", "1.0"]
    assert ["metarater_all__rep1", "0.5"] in plan["curve_runs"]
    assert plan["paper_rows"]["uniform_slimpajama"] == "uniform"
    icl = {run: icl_result(plan, {}, 0.45 if run.startswith("uniform") else 0.5)
           for run in evaluated_variants(config)}
    # Meta-rater climbs 0.40 -> 0.50 over its run; at half its tokens it has uniform's 0.45.
    curve_icl = {(run, f): icl_result(plan, {}, {"0.25": 0.40, "0.5": 0.45, "0.75": 0.48}[f])
                 for run, f in plan["curve_runs"]}
    cells = build_cells(plan, {}, icl, curve_icl)
    half = cell_estimate(cells, "metarater_figure1", "metarater_all", "average", "0.5")
    final = cell_estimate(cells, "metarater_figure1", "uniform", "average", "1.0")
    assert final == cell_estimate(cells, "metarater_figure1", "uniform_slimpajama", "average",
                                  "1.0")
    assert half.mean == pytest.approx(45.0) and final.mean == pytest.approx(45.0)
    tokens = cell_estimate(cells, "metarater_figure1", "metarater_all", "tokens", "0.5")
    assert tokens.mean == 15e9
    claims = load_claims(REPO / "config" / "claims.yaml",
                         REPO / "config" / "schema" / "claims.schema.yaml")
    verdicts = judge_claims(claims, cells, "same scale").set_index("id")["verdict"]
    assert verdicts["metarater_half_tokens_match_random"] == "reproduced"
    # One run each: lm-eval's errors (2 points a task) give +-1.96 around 0, wider than the
    # claim's tolerance of 1 point: no verdict either way.
    single = build_cells(paper_plan(PAPER), {}, icl, curve_icl)
    verdicts = judge_claims(claims, single, "same scale").set_index("id")["verdict"]
    assert verdicts["metarater_half_tokens_match_random"] == "inconclusive"
    table = all_paper_tables(plan, cells)["metarater_figure1"]
    assert table["Fraction of training"].tolist()[:3] == ["0.25"] * 3
    written = draw_charts(cells, plan, tmp_path)
    assert written == chart_names(plan) == [
        "metarater_figure1", "metarater_figure2", "metarater_figure3", "dataman_figure6",
        "paper_spread"]
    for name in written:
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
