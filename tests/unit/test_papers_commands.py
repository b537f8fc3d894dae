"""`selectlab papers tables | vs-published | claims` end to end on hand-made results."""

from __future__ import annotations

import json

import pandas as pd

from selectlab.cli import main
from selectlab.config import load_config
from selectlab.papers.plan import evaluated_variants, paper_plan
from selectlab.report.table_files import read_markdown_notes
from tests.conftest import REPO
from tests.unit.test_papers_tables import icl_result, ppl_result

EMBEDDED = load_config(REPO / "config" / "config.yaml")


def test_commands_write_tables_comparison_and_claims(tmp_path):
    plan = paper_plan(EMBEDDED)
    for index, run in enumerate(evaluated_variants(EMBEDDED)):
        (tmp_path / "eval" / run).mkdir(parents=True)
        # Overall Score l=5 best, l=1 worst, the rest in between.
        accuracy = {"overall_l5": 0.7, "overall_l1": 0.3}.get(run, 0.4 + 0.01 * index)
        (tmp_path / "eval" / run / "icl.json").write_text(
            json.dumps(icl_result(plan, {}, default=accuracy)))
        (tmp_path / "eval" / run / "perplexity.json").write_text(
            json.dumps(ppl_result(30.0 - 10 * accuracy)))
    tables = tmp_path / "tables"
    assert main(["papers", "tables", "--params", json.dumps(plan), "--eval-dir",
                 str(tmp_path / "eval"), "--notes", '["SIMULATED judge"]', "--out-dir",
                 str(tables)]) == 0
    for name in ("qurating_table1", "dataman_table1", "dataman_table2", "metarater_table13"):
        assert (tables / f"{name}.csv").exists()
        assert read_markdown_notes(tables / f"{name}.md")[0] == "SIMULATED judge"
    cells = tables / "paper_cells.csv"
    assert main(["papers", "vs-published", "--cells", str(cells), "--published",
                 *map(str, (REPO / "config" / "published").glob("*.csv")),
                 "--scale", "different scale", "--out-csv", str(tables / "vs_published.csv"),
                 "--out-md", str(tables / "vs_published.md")]) == 0
    compared = pd.read_csv(tables / "vs_published.csv")
    assert set(compared["scale"]) == {"different scale"} and len(compared) > 50
    assert "DIFFERENT SCALE" in " ".join(read_markdown_notes(tables / "vs_published.md"))
    assert main(["papers", "claims", "--cells", str(cells), "--claims",
                 str(REPO / "config" / "claims.yaml"), "--schema",
                 str(REPO / "config" / "schema" / "claims.schema.yaml"), "--scale",
                 "different scale", "--out-csv", str(tables / "claims.csv"),
                 "--out-md", str(tables / "claims.md")]) == 0
    claims = pd.read_csv(tables / "claims.csv").set_index("id")
    # l=5 at 0.7 beats uniform+50% far beyond lm-eval's 2-point errors; no replicates here.
    assert claims.loc["dataman_l5_beats_uniform_plus50", "verdict"] == "reproduced"
    assert claims.loc["dataman_l5_beats_uniform_plus50", "interval"] == "stderr"
    assert claims.loc["metarater_scales_up", "verdict"] == "not run"
