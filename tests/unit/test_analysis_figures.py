"""The analysis plan of a config, the figures (deterministic PNGs) and their place in the report."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from selectlab.analysis import figures as fig
from selectlab.analysis import plan
from selectlab.analysis.outputs import FigureJob, write_figures
from selectlab.cli import main
from selectlab.config import load_config

PNG = b"\x89PNG\r\n\x1a\n"
SOURCES = ["RedPajamaWikipedia", "RedPajamaBook", "RedPajamaGithub"]


def score_frame(n: int = 90) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    quality = rng.normal(size=n)
    frame = pd.DataFrame({
        "set_name": [SOURCES[i % 3] for i in range(n)],
        "n_tokens": rng.integers(10, 500, n),
        "signals.doc_word_count": pd.array(rng.integers(5, 900, n), dtype="Int64"),
        "signals.doc_frac_unique_words": rng.uniform(0.2, 1.0, n),
        "refppl.ref_nll": 3.0 - 0.4 * quality + rng.normal(scale=0.3, size=n),
        "dataman.overall_score": pd.array(np.clip(np.round(quality + 3), 1, 5), dtype="Int64"),
        "dataman.accuracy": pd.array(rng.integers(1, 6, n), dtype="Int64"),
    })
    frame.loc[[4, 40], "dataman.overall_score"] = pd.NA
    frame.loc[[7], "refppl.ref_nll"] = np.nan
    return frame


def job(tmp_path: Path, dataman: str | None = "dataman", refppl: str | None = "refppl"):
    families = ["signals", "refppl"] + (["dataman"] if dataman else [])
    return FigureJob(families=families, rater_families=["dataman"] if dataman else [],
                     dataman=dataman, refppl=refppl, notes=["SIMULATED judge: not an LLM."],
                     nll_note="NLL: tiny LM, first 16 tokens.",
                     figures_dir=tmp_path / "figures", matrices_dir=tmp_path / "analysis",
                     tables_dir=tmp_path / "tables")


def test_write_figures_draws_the_plans_figures_and_its_matrices(tmp_path):
    frame = score_frame()
    written = write_figures({"full": frame}, job(tmp_path))
    names = sorted(path.stem for path in written)
    assert names == sorted(["analysis_distribution_signals", "analysis_distribution_refppl",
                            "analysis_distribution_dataman", "analysis_spearman",
                            "analysis_dataman_pearson", "analysis_dataman_vs_nll"])
    assert all(path.read_bytes()[:8] == PNG for path in written)
    spearman = pd.read_csv(tmp_path / "analysis" / "analysis_spearman.csv", index_col=0)
    columns = ["signals.doc_word_count", "signals.doc_frac_unique_words", "refppl.ref_nll",
               "dataman.accuracy", "dataman.overall_score"]
    assert list(spearman.columns) == columns  # DataMan's ratings in the paper's order
    expected = frame[columns].astype("float64").corr(method="spearman")
    np.testing.assert_allclose(spearman.to_numpy(), expected.to_numpy(), atol=1e-12)
    pearson = pd.read_csv(tmp_path / "analysis" / "analysis_dataman_pearson.csv", index_col=0)
    assert pearson.loc["dataman.accuracy", "dataman.overall_score"] == pytest.approx(
        expected_pearson(frame, "dataman.accuracy", "dataman.overall_score"))
    table = (tmp_path / "tables" / "analysis_dataman_vs_nll_spearman.md").read_text()
    assert "| Overall Score | 87 |" in table  # 90 documents, 3 without one of the two
    assert "- SIMULATED judge: not an LLM." in table and "- NLL: tiny LM" in table
    rho = pd.read_csv(tmp_path / "tables" / "analysis_dataman_vs_nll_spearman.csv")
    assert rho.set_index("rating").at["Overall Score", "spearman"] < -0.5


def expected_pearson(frame: pd.DataFrame, a: str, b: str) -> float:
    both = frame[[a, b]].astype("float64").dropna()
    return float(np.corrcoef(both[a], both[b])[0, 1])


def test_only_outputs_built_on_judge_trained_raters_carry_the_judges_notes(tmp_path):
    figures = job(tmp_path)
    assert figures.notes_for(["signals"]) == []
    assert figures.notes_for(["signals", "dataman"]) == ["SIMULATED judge: not an LLM."]


def test_without_dataman_only_distributions_and_the_spearman_heatmap_are_drawn(tmp_path):
    frame = score_frame().drop(columns=["dataman.overall_score", "dataman.accuracy"])
    written = write_figures({"full": frame}, job(tmp_path, dataman=None))
    assert sorted(p.stem for p in written) == sorted([
        "analysis_distribution_signals", "analysis_distribution_refppl", "analysis_spearman"])
    assert not (tmp_path / "tables").exists()


@pytest.mark.parametrize("draw", ["distributions", "heatmap", "nll"])
def test_figures_are_byte_identical_for_the_same_input(tmp_path, draw):
    frame = score_frame()

    def render(path: Path) -> bytes:
        ratings = ["dataman.accuracy", "dataman.overall_score"]
        if draw == "distributions":
            fig.plot_distributions(frame, ["signals.doc_word_count", *ratings], path,
                                   title="t", notes=["a note"])
        elif draw == "heatmap":
            matrix = frame[ratings + ["refppl.ref_nll"]].astype(float).corr()
            fig.plot_heatmap(matrix, path, title="t", colorbar_label="r", notes=["a note"])
        else:
            rho = pd.DataFrame({"rating": ["accuracy", "overall_score"],
                                "spearman": [0.1, np.nan]})
            fig.plot_ratings_vs_nll(frame, ratings, "refppl.ref_nll", rho, {}, path)
        return path.read_bytes()

    first, second = render(tmp_path / "a.png"), render(tmp_path / "b.png")
    assert first[:8] == PNG and first == second


def test_ratings_are_drawn_as_shares_and_wide_integers_as_histograms():
    frame = score_frame()
    assert fig.is_rating(frame["dataman.overall_score"])
    assert not fig.is_rating(frame["signals.doc_word_count"])
    assert not fig.is_rating(frame["refppl.ref_nll"])
    assert fig.source_order(["X", "RedPajamaBook", "RedPajamaCommonCrawl"]) == [
        "RedPajamaCommonCrawl", "RedPajamaBook", "X"]


@pytest.fixture
def config() -> dict:
    return load_config(REPO / "config" / "config.yaml")


def with_rater_families(config: dict) -> dict:
    changed = copy.deepcopy(config)
    families = changed["annotate"]["families"]
    families.update({
        "qurater": {"kind": "rater", "rater": "qurater", "forward_batch_size": 8},
        "dataman": {"kind": "rater", "rater": "dataman", "forward_batch_size": 8}})
    changed["analysis"] = {"sample_rows": 5000}
    return changed


def test_the_plan_follows_the_configured_families(config):
    changed = with_rater_families(config)
    analysis = plan.analysis_plan(changed)
    assert "embedding" not in analysis.families and analysis.families["dataman"] == "rater"
    assert analysis.dataman == "dataman" and analysis.refppl == "refppl"
    assert analysis.rater_families() == ["qurater", "dataman", "prrc", "fineweb_edu", "wanjuan"]
    assert analysis.sample_rows == 5000 and analysis.seed == config["seed"]
    assert "analysis_distribution_qurater" in analysis.figures()
    assert analysis.tables() == ["analysis_dataman_corpus", "analysis_dataman_domain_means",
                                 "analysis_dataman_vs_nll_spearman"]
    assert plan.matrices(analysis) == ["analysis_spearman", "analysis_dataman_pearson"]
    params = plan.figure_params(changed, ["note"])
    assert params["refppl_settings"]["model"] == "smollm2-gguf" and params["notes"] == ["note"]
    generative = copy.deepcopy(changed)
    generative["annotate"]["families"]["dataman"] = {
        "kind": "rater_generative", "rater": "dataman", "max_attempts": 3,
        "retry_temperature": 0.7}
    assert plan.analysis_plan(generative).dataman == "dataman"
    del generative["annotate"]["families"]["dataman"]
    assert plan.analysis_plan(generative).tables() == []


def test_each_familys_figures_come_from_the_pool_it_annotates_first(config, tmp_path):
    changed = with_rater_families(config)
    families = changed["annotate"]["families"]
    families["dataman"]["pools"] = ["dataman"]  # DataMan rates DataPajama only
    families["refppl"]["pools"] = ["full", "dataman"]
    analysis = plan.analysis_plan(changed)
    assert analysis.samples["dataman"] == ["refppl", "dataman"]
    assert "dataman" not in analysis.samples["full"] and "refppl" in analysis.samples["full"]
    assert analysis.dataman_pool == "dataman" and analysis.pool_of("qurater") == "full"
    assert {"analysis_dataman_pearson", "analysis_dataman_vs_nll",
            "analysis_spearman"} <= set(analysis.figures())
    # Without the reference LM on DataMan's pool, DataMan against NLL cannot be drawn.
    families["refppl"]["pools"] = ["full"]
    assert "analysis_dataman_vs_nll" not in plan.analysis_plan(changed).figures()
    # Drawn: DataMan's heatmap from the DataMan pool's sample, the Spearman heatmap from the
    # full pool's, which has no DataMan column.
    full, dataman = score_frame(), score_frame(60)
    full = full.drop(columns=["dataman.overall_score", "dataman.accuracy"])
    figures = job(tmp_path)
    pools = FigureJob(**{**figures.__dict__, "family_pools": {"dataman": "dataman"}})
    written = {path.stem for path in write_figures({"full": full, "dataman": dataman}, pools)}
    assert {"analysis_dataman_pearson", "analysis_dataman_vs_nll", "analysis_spearman",
            "analysis_distribution_dataman"} <= written
    spearman = pd.read_csv(tmp_path / "analysis" / "analysis_spearman.csv", index_col=0)
    assert not [c for c in spearman.columns if c.startswith("dataman.")]
    pearson = pd.read_csv(tmp_path / "analysis" / "analysis_dataman_pearson.csv", index_col=0)
    assert list(pearson.columns) == ["dataman.accuracy", "dataman.overall_score"]


def test_every_analysis_output_has_a_caption_file_and_a_heading(config):
    analysis = plan.analysis_plan(with_rater_families(config))
    for name in analysis.figures() + analysis.tables():
        assert (REPO / "report" / f"{plan.caption_stem(name)}.rst").is_file(), name
        assert plan.heading(name)


def test_the_html_report_shows_analysis_tables_and_figures(tmp_path):
    frame = score_frame()
    figures = job(tmp_path)
    write_figures({"full": frame}, figures)
    out = tmp_path / "report.html"
    code = main(["report", "html", "--tables-dir", str(tmp_path / "tables"),
                 "--figures-dir", str(tmp_path / "figures"),
                 "--captions-dir", str(REPO / "report"), "--title", "t",
                 "--tables", "analysis_dataman_vs_nll_spearman",
                 "--figures", "analysis_distribution_dataman", "analysis_spearman",
                 "--out", str(out)])
    assert code == 0
    html = out.read_text()
    assert "Score distributions per source: dataman" in html
    assert "Spearman correlation of all scores" in html
    assert "SIMULATED judge: not an LLM." in html  # the table's note
