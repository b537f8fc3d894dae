"""Analyses of the judge's labels (QuRating Fig. 5, DataMan Table 6 and Fig. 5 on the
fine-tuning set) and QuRating Fig. 7 as scatter plots."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selectlab.analysis import judge_labels as jl
from selectlab.analysis import plan
from selectlab.analysis.outputs import FigureJob, write_figures
from selectlab.cli import main
from selectlab.judge.dataman import QUALITY_COLUMNS

PNG = b"\x89PNG\r\n\x1a\n"


def qurating_labels(n: int = 60) -> pd.DataFrame:
    """Writing style and educational value move together; required expertise is noise."""
    rng = np.random.default_rng(1)
    base = rng.uniform(0.05, 0.95, n)
    rows = []
    for i in range(n):
        values = {"writing_style": base[i], "educational_value": 0.9 * base[i] + 0.05,
                  "required_expertise": rng.uniform()}
        for criterion, p in values.items():
            rows.append({"doc_a": f"a{i}", "doc_b": f"b{i}", "criterion": criterion,
                         "p_b_better": p, "n_orders": 2})
    return pd.DataFrame(rows)


def dataman_labels(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    overall = rng.integers(1, 6, n)
    frame = pd.DataFrame({c: np.clip(overall + rng.integers(-1, 2, n), 1, 5)
                          for c in QUALITY_COLUMNS})
    frame["overall_score"] = overall
    frame["domain"] = ["A"] * 10 + ["E"] * 30
    frame["set_name"] = ["RedPajamaWikipedia", "RedPajamaGithub"] * (n // 2)
    frame["doc_id"] = [f"d{i}" for i in range(n)]
    return frame


def test_qurating_label_pearson_pairs_the_criteria_of_each_pair():
    matrix = jl.qurating_label_pearson(qurating_labels())
    assert list(matrix.columns) == ["writing_style", "educational_value", "required_expertise"]
    assert matrix.at["writing_style", "educational_value"] == pytest.approx(1.0)
    assert abs(matrix.at["writing_style", "required_expertise"]) < 0.4


def test_dataman_finetune_table_counts_documents_per_domain_score_and_source():
    table = jl.dataman_finetune_table(dataman_labels())
    assert list(table.columns) == ["group", "value", "documents", "documents %"]
    domains = table[table["group"] == "Domain"].set_index("value")
    assert domains.loc["Technology (E)", "documents"] == 30
    assert domains.loc["Medicine (A)", "documents %"] == pytest.approx(25.0)
    sources = table[table["group"] == "Source"].set_index("value")
    assert sources["documents"].to_dict() == {"Github": 20, "Wikipedia": 20}
    assert table.iloc[-1]["documents"] == 40
    matrix = jl.dataman_label_pearson(dataman_labels())
    assert matrix.shape == (14, 14) and matrix.index[-1] == "Overall Score"


def test_judge_labels_command_writes_figures_tables_and_matrices(tmp_path):
    dataman, qurating = tmp_path / "dataman.parquet", tmp_path / "qurating.parquet"
    dataman_labels().to_parquet(dataman)
    qurating_labels().to_parquet(qurating)
    assert main(["analysis", "judge-labels", "--qurating", str(qurating), "--dataman",
                 str(dataman), "--notes", '["SIMULATED judge"]', "--figures-dir",
                 str(tmp_path / "figures"), "--tables-dir", str(tmp_path / "tables"),
                 "--matrices-dir", str(tmp_path / "analysis")]) == 0
    for name in (plan.QURATING_LABEL_PEARSON, plan.DATAMAN_LABEL_PEARSON):
        assert (tmp_path / "figures" / f"{name}.png").read_bytes()[:8] == PNG
        assert (tmp_path / "analysis" / f"{name}.csv").exists()
    table = (tmp_path / "tables" / f"{plan.DATAMAN_FINETUNE}.md").read_text()
    assert "- SIMULATED judge" in table and "Technology (E)" in table


def test_label_outputs_follow_the_judge_protocols():
    config = {"judge": {"protocols": {"qurating": {}, "prrc": {}}},
              "annotate": {"families": {}}, "seed": 0}
    assert plan.analysis_plan(config).label_figures() == [plan.QURATING_LABEL_PEARSON]
    assert plan.analysis_plan(config).label_tables() == []


def test_qurater_ratings_against_nll_as_scatter_plots(tmp_path):
    rng = np.random.default_rng(3)
    n = 80
    quality = rng.normal(size=n)
    frame = pd.DataFrame({"set_name": ["RedPajamaBook"] * n, "n_tokens": 100,
                          "refppl.ref_nll": 3 - quality,
                          "qurater.writing_style": quality + rng.normal(scale=0.1, size=n),
                          "qurater.educational_value": rng.normal(size=n)})
    job = FigureJob(families=["refppl", "qurater"], rater_families=["qurater"], dataman=None,
                    refppl="refppl", notes=[], nll_note="NLL note", tables_dir=None,
                    figures_dir=tmp_path, matrices_dir=tmp_path / "m", qurater="qurater")
    written = {p.stem for p in write_figures({"full": frame}, job)}
    assert plan.QURATER_VS_NLL in written
    assert (tmp_path / f"{plan.QURATER_VS_NLL}.png").read_bytes()[:8] == PNG
