"""QuRating Table 6: the run's QuRater fills the row of how it was trained, from its own metrics,
and each setup of `raters.qurater.setups` fills its own; the setups it does not train say
"not run", in the table, the comparison and the claims."""

from __future__ import annotations

import copy
import math

import pandas as pd
import pytest

from selectlab.config import load_config
from selectlab.papers import rater_comparison as R
from selectlab.papers.cells import build_cells, read_rater_records
from selectlab.papers.claims import (
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    judge_claims,
    load_claims,
)
from selectlab.papers.plan import paper_plan, result_inputs
from selectlab.papers.published import read_published, tables_without_numbers
from selectlab.papers.tables import all_paper_tables
from selectlab.report.plan import report_plan
from tests.conftest import REPO

EMBEDDED = load_config(REPO / "config" / "config.yaml")
CLAIMS = load_claims(REPO / "config" / "claims.yaml",
                     REPO / "config" / "schema" / "claims.schema.yaml")
TABLE6_CLAIMS = [c for c in CLAIMS if c.source.endswith("Table 6")]


def qurater_record(accuracy: dict[str, float], pairs: int = 400) -> dict:
    """A QuRater metrics.json with the given accuracy at the 50% confidence level."""
    return {"rater": "qurater", "metrics": {
        criterion: {"pairwise_accuracy": value, "accuracy_confidence50": value,
                    "pairs_confidence50": pairs, "accuracy_confidence80": None,
                    "pairs_confidence80": 0}
        for criterion, value in accuracy.items()}}


ACCURACY = {"writing_style": 0.9, "facts_and_trivia": 0.85, "educational_value": 0.6,
            "required_expertise": 0.8}


def cells_of(config: dict, record: dict | None,
             others: dict | None = None) -> tuple[dict, pd.DataFrame]:
    plan = paper_plan(config)
    plan = plan | {"tables": [], "protocols": {}}  # Table 6 alone: no model results needed
    return plan, build_cells(plan, {}, {}, raters={"qurater": record} | (others or {}))


def with_setups(config: dict, setups: dict) -> dict:
    config = copy.deepcopy(config)
    config["raters"]["qurater"]["setups"] = setups
    return config


SCRATCH = {"train_backbone": True, "epochs": 2, "lr": 1.0e-4}


def test_plan_reads_the_qurater_metrics_and_names_the_trained_setup():
    plan = paper_plan(EMBEDDED)
    assert plan["rater_tables"] == [{
        "name": "qurating_table6", "rater": "qurater",
        "trained": {"qurater_multitask_pretrained": "qurater"},
        "criteria": ["writing_style", "facts_and_trivia", "educational_value",
                     "required_expertise"]}]
    assert result_inputs(plan, "results/x")[-1] == "results/x/raters/qurater/metrics.json"
    assert "qurating_table6" in report_plan(EMBEDDED).numbered_tables
    scratch = copy.deepcopy(EMBEDDED)
    scratch["raters"]["qurater"]["backbone"] = "random_encoder"
    assert paper_plan(scratch)["rater_tables"][0]["trained"] == {
        "qurater_multitask_scratch": "qurater"}
    every = with_setups(EMBEDDED, {"separate_pretrained": {}, "multitask_scratch": SCRATCH,
                                   "separate_scratch": SCRATCH})
    plan = paper_plan(every)
    assert plan["rater_tables"][0]["trained"] == {
        "qurater_multitask_pretrained": "qurater",
        "qurater_separate_pretrained": "qurater_separate_pretrained",
        "qurater_multitask_scratch": "qurater_multitask_scratch",
        "qurater_separate_scratch": "qurater_separate_scratch"}
    assert result_inputs(plan, "results/x")[-4:] == [
        f"results/x/raters/{r}/metrics.json" for r in (
            "qurater", "qurater_separate_pretrained", "qurater_multitask_scratch",
            "qurater_separate_scratch")]
    untrained = copy.deepcopy(EMBEDDED)
    del untrained["raters"]["qurater"]
    with pytest.raises(ValueError, match="table6 compares QuRater"):
        paper_plan(untrained)


def test_cells_hold_the_measured_accuracy_with_a_binomial_interval():
    _, cells = cells_of(EMBEDDED, qurater_record(ACCURACY))
    mine = cells.set_index(["variant", "column"])
    assert len(cells) == 16  # four setups x four criteria
    edu = mine.loc[("qurater_multitask_pretrained", "educational_value")]
    assert edu["mean"] == pytest.approx(60.0)
    assert edu["se"] == pytest.approx(100 * math.sqrt(0.6 * 0.4 / 400))  # 2.449
    assert edu["high"] - edu["mean"] == pytest.approx(1.959964 * edu["se"], rel=1e-5)
    assert (edu["n"], edu["basis"]) == (1, "stderr")
    others = cells[cells["variant"] != "qurater_multitask_pretrained"]
    assert others["mean"].isna().all() and set(others["basis"]) == {"not run"}


def test_table_prints_the_trained_row_and_not_run_for_the_others():
    plan, cells = cells_of(EMBEDDED, qurater_record(ACCURACY))
    table = all_paper_tables(plan, cells)["qurating_table6"]
    assert list(table.columns) == ["QuRater training", "Writing Style", "Facts & Trivia",
                                   "Educational Value", "Required Expertise"]
    rows = table.set_index("QuRater training")
    assert rows.loc["Multi-task, from a pre-trained model", "Writing Style"] == "90.0 ± 2.9"
    assert rows.loc["Multi-task, from a pre-trained model", "Educational Value"] == "60.0 ± 4.8"
    for label in ("Separate models, from a pre-trained model", "Multi-task, from scratch",
                  "Separate models, from scratch"):
        assert set(rows.loc[label]) == {"not run"}
    assert any("Different scale" in note for note in table.attrs["notes"])
    # No metrics (a rater trained before the confidence levels were recorded): empty cells.
    plan, cells = cells_of(EMBEDDED, None)
    rows = all_paper_tables(plan, cells)["qurating_table6"].set_index("QuRater training")
    assert rows.loc["Multi-task, from a pre-trained model", "Writing Style"] == ""


def test_claims_about_untrained_setups_are_not_run_and_the_hardest_criterion_is_judged():
    assert {c.id for c in TABLE6_CLAIMS} == {
        "qurating_qurater_multitask_not_worse", "qurating_qurater_pretrained_init_helps",
        "qurating_qurater_educational_value_hardest"}
    _, cells = cells_of(EMBEDDED, qurater_record(ACCURACY))
    verdicts = judge_claims(TABLE6_CLAIMS, cells, "different scale").set_index("id")["verdict"]
    assert verdicts["qurating_qurater_multitask_not_worse"] == NOT_RUN
    assert verdicts["qurating_qurater_pretrained_init_helps"] == NOT_RUN
    assert verdicts["qurating_qurater_educational_value_hardest"] == REPRODUCED
    # Planted: educational value predicted best -> the claim flips.
    flipped = ACCURACY | {"educational_value": 0.97}
    _, cells = cells_of(EMBEDDED, qurater_record(flipped))
    verdicts = judge_claims(TABLE6_CLAIMS, cells, "different scale").set_index("id")["verdict"]
    assert verdicts["qurating_qurater_educational_value_hardest"] == NOT_REPRODUCED


def test_every_trained_setup_fills_its_row_and_its_claims_are_judged():
    config = with_setups(EMBEDDED, {"separate_pretrained": {}, "multitask_scratch": SCRATCH})
    worse = {c: a - 0.2 for c, a in ACCURACY.items()}
    others = {"qurater_separate_pretrained": qurater_record(ACCURACY | {"writing_style": 0.5}),
              "qurater_multitask_scratch": qurater_record(worse)}
    plan, cells = cells_of(config, qurater_record(ACCURACY), others)
    rows = all_paper_tables(plan, cells)["qurating_table6"].set_index("QuRater training")
    assert rows.loc["Separate models, from a pre-trained model", "Writing Style"] == "50.0 ± 4.9"
    assert rows.loc["Multi-task, from scratch", "Educational Value"] == "40.0 ± 4.8"
    assert set(rows.loc["Separate models, from scratch"]) == {"not run"}
    verdicts = judge_claims(TABLE6_CLAIMS, cells, "different scale").set_index("id")["verdict"]
    # Pre-trained beats scratch by 20 points on every criterion, 400 pairs each.
    assert verdicts["qurating_qurater_pretrained_init_helps"] == REPRODUCED
    # Multi-task ahead on writing style (90 vs 50), level on the rest: the claim needs one.
    assert verdicts["qurating_qurater_multitask_not_worse"] == REPRODUCED


def test_published_table6_names_its_rows_but_carries_no_numbers():
    paths = list((REPO / "config" / "published").glob("*.csv"))
    assert "qurating_table6" not in set(read_published(paths)["table"])
    empty = tables_without_numbers(paths)
    assert list(empty) == ["qurating_table6"]
    assert "not in our copy" in empty["qurating_table6"]
    rows = pd.read_csv(REPO / "config" / "published" / "qurating_table6.csv")
    assert tuple(rows["variant"]) == R.ROWS


def test_rater_records_are_read_from_the_run(tmp_path):
    plan = paper_plan(EMBEDDED)
    assert read_rater_records(str(tmp_path), plan) == {"qurater": None}
    path = tmp_path / "raters" / "qurater"
    path.mkdir(parents=True)
    (path / "metrics.json").write_text('{"rater": "qurater", "metrics": {}}')
    assert read_rater_records(str(tmp_path), plan) == {"qurater": {"rater": "qurater",
                                                                    "metrics": {}}}
    plan = paper_plan(with_setups(EMBEDDED, {"separate_pretrained": None}))
    assert set(read_rater_records(str(tmp_path), plan)) == {"qurater",
                                                           "qurater_separate_pretrained"}
