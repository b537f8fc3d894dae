"""The claims plan (selectlab.papers.power) and a ladder rung's subset (selectlab.variant_subset):
what a config can decide before it runs, and the rows a rung keeps."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from selectlab.cli import main
from selectlab.config import load_workflow_config
from selectlab.papers.claims import load_claims
from selectlab.papers.power import (
    PRIOR_SD,
    SpreadBook,
    detectable_difference,
    measured_spreads,
    plan_claims,
)
from selectlab.variant_subset import keep_variants
from tests.conftest import REPO

SCHEMA = REPO / "config" / "schema"


def ledger():
    return load_claims(REPO / "config" / "claims.yaml", SCHEMA / "claims.schema.yaml")


def default_plan(measured=None) -> pd.DataFrame:
    config = load_workflow_config([REPO / "config" / "config.yaml"], SCHEMA)
    return plan_claims(ledger(), config, SpreadBook(measured or {}, "a run")).set_index("id")


def test_detectable_difference_is_welchs_80_percent_power_bound():
    # Three seeds a side, sd 1: se = sqrt(2/3), df = 4.
    expected = (stats.t.ppf(0.975, 4) + stats.t.ppf(0.8, 4)) * math.sqrt(2 / 3)
    assert detectable_difference(1.0, 3, 3) == pytest.approx(expected)
    assert detectable_difference(1.0, 3, 3) == pytest.approx(3.035, abs=1e-3)
    # More seeds detect smaller effects; a number on the right has no spread.
    assert detectable_difference(1.0, 5, 5) < detectable_difference(1.0, 3, 3)
    assert detectable_difference(1.0, 3, None) == pytest.approx(
        (stats.t.ppf(0.975, 2) + stats.t.ppf(0.8, 2)) / math.sqrt(3))


def test_the_default_plan_decides_only_claims_whose_rows_have_seeds():
    plan = default_plan()
    # educational value tau=2 and uniform train three times each: decidable, prior spread.
    row = plan.loc["qurating_edu_t2_beats_uniform"]
    assert (row["decidable"], row["seeds"], row["spread"]) == ("yes", 3, "prior")
    prior = detectable_difference(PRIOR_SD["average"], 3, 3)
    assert row["detectable_effect"] == f"{prior:.2f} points"
    # The criteria mix runs once: its claim cannot be decided, however large the effect.
    assert plan.loc["qurating_mix_between_uniform_and_edu", "decidable"] == "no: one seed"
    # Rows the default lacks are named; the rater claim is decided over pairs, not seeds.
    row = plan.loc["qurating_t2_beats_topk"]
    assert row["decidable"] == "no: rows missing"
    assert row["missing_rows"] == "required_expertise_t2, required_expertise_top, writing_style_t2"
    assert plan.loc["qurating_qurater_educational_value_hardest", "decidable"].endswith(
        "(not seeds)")
    # Perplexity effects are relative: a share of the cell's perplexity.
    assert plan.loc["dataman_l1_worst_perplexity", "detectable_effect"].endswith("of perplexity")


def test_a_measured_spread_replaces_the_prior():
    cells = pd.DataFrame([
        {"table": "qurating_table1", "column": "average", "basis": "replicates",
         "values": "30.0;32.0;34.0"},
        {"table": "qurating_table1", "column": "average", "basis": "replicates",
         "values": "20.0;20.0"},
        {"table": "qurating_table1", "column": "val_ppl", "basis": "replicates",
         "values": "90.0;100.0;110.0"},
        {"table": "qurating_table1", "column": "average", "basis": "stderr", "values": "5.0"},
    ])
    measured = measured_spreads(cells)
    # Pooled over cells: variances 4 and 0 -> sd sqrt(2); perplexity sd 10 of mean 100.
    assert measured[("qurating_table1", "average")] == (pytest.approx(math.sqrt(2)), 2)
    assert measured[("qurating_table1", "val_ppl")] == (pytest.approx(0.1), 1)
    row = default_plan(measured).loc["qurating_edu_t2_beats_uniform"]
    assert row["spread"] == "measured (2 cells of a run)"
    assert row["detectable_effect"] == f"{detectable_difference(math.sqrt(2), 3, 3):.2f} points"


def test_plan_claims_command_writes_the_plan(tmp_path):
    out = tmp_path / "claims_plan.csv"
    assert main(["plan", "claims", "--configfile", str(REPO / "config" / "paper.yaml"),
                 "--claims", str(REPO / "config" / "claims.yaml"), "--schema-dir", str(SCHEMA),
                 "--out-csv", str(out)]) == 0
    plan = pd.read_csv(out).set_index("id")
    # The papers ran each row once: the paper config decides nothing over seeds.
    assert set(plan["decidable"]) <= {"no: one seed", "no: rows missing",
                                      "yes, by held-out pairs (not seeds)"}
    assert "a claim is decided only by a 95% interval over seeds" in (
        out.with_suffix(".md").read_text())


def subset_config(keep: list[str]) -> dict:
    config = load_workflow_config([REPO / "config" / "paper.yaml"], SCHEMA)
    return keep_variants(config | {"keep_variants": keep})


def test_keep_variants_keeps_what_kept_rows_build_on_and_prunes_the_rest():
    config = subset_config(["uniform", "curriculum_expertise_up", "cpt_law", "metarater_all"])
    # A curriculum reorders uniform's selection; a continued pre-training starts from l=5.
    assert set(config["variants"]) == {"uniform", "curriculum_expertise_up", "cpt_law",
                                       "overall_l5", "metarater_all"}
    assert "keep_variants" not in config
    assert set(config["metarater"]["searches"]) == {"all25"}
    tables = config["evaluation"]["protocols"]["metarater"]["tables"]
    assert tables["table4"]["variants"] == ["metarater_all"]
    comparisons = config["instruct"]["comparisons"]
    assert comparisons["qurating"]["variants"] == ["curriculum_expertise_up"]
    assert "dataman" not in comparisons  # its reference, educational value tau=2, is dropped


def test_keep_variants_refuses_unknown_names_and_a_dropped_baseline():
    with pytest.raises(ValueError, match=r"does not have: \['unifrom'\]"):
        subset_config(["uniform", "unifrom"])
    with pytest.raises(ValueError, match="must keep evaluation.baseline"):
        subset_config(["overall_l5"])


def test_the_readme_plan_block_covers_the_ladder_and_uses_laptop_spread_for_laptop_columns(
        tmp_path):
    from selectlab.papers.plan_doc import BEGIN, END, LADDER, main

    cells = tmp_path / "paper_cells.csv"
    pd.DataFrame([{"table": "qurating_table1", "column": "average", "basis": "replicates",
                   "values": "20.0;24.0;28.0"}]).to_csv(cells, index=False)
    readme = tmp_path / "README.md"
    readme.write_text(f"# top\n{BEGIN}\nstale\n{END}\nafter\n")
    main([str(readme), "--root", str(REPO), "--cells", str(cells)])
    text = readme.read_text()
    assert "stale" not in text and text.endswith(f"{END}\nafter\n")
    rows = {line.split("`")[1]: [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| `")}
    assert list(rows) == [claim.id for claim in ledger()]
    laptop, demo, _, _, paper = rows["qurating_edu_t2_beats_uniform"]
    # sd 4 measured on the laptop: the laptop columns detect 4x the prior's 0.5-point effect.
    assert laptop == f"yes (3 seeds): {detectable_difference(4.0, 3, 3):.2f} points"
    assert paper == "one seed"
    assert len(rows["qurating_edu_t2_beats_uniform"]) == len(LADDER)
