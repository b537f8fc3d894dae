"""`selectlab papers tables | figures | vs-published | claims` and the report they lead, end to
end on hand-made results; the report is then opened in headless Chromium."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from selectlab.cli import main
from selectlab.config import load_config
from selectlab.papers.layouts import chart_names
from selectlab.papers.plan import evaluated_variants, paper_plan
from selectlab.report.table_files import read_markdown_notes
from tests.browser import chromium, inspect_report
from tests.conftest import REPO
from tests.unit.test_papers_rater_comparison import qurater_record
from tests.unit.test_papers_tables import icl_result, ppl_result

EMBEDDED = load_config(REPO / "config" / "config.yaml")
for _variant in EMBEDDED["variants"].values():  # one run each: the verdicts use lm-eval's errors
    _variant.pop("replicates", None)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The embedded config's paper outputs from hand-made evaluation results."""
    root = tmp_path_factory.mktemp("papers")
    plan = paper_plan(EMBEDDED)
    for index, run in enumerate(evaluated_variants(EMBEDDED)):
        (root / "eval" / run).mkdir(parents=True)
        # Overall Score l=5 best, l=1 worst, the rest in between.
        accuracy = {"overall_l5": 0.7, "overall_l1": 0.3}.get(run, 0.4 + 0.01 * index)
        (root / "eval" / run / "icl.json").write_text(
            json.dumps(icl_result(plan, {}, default=accuracy)))
        (root / "eval" / run / "perplexity.json").write_text(
            json.dumps(ppl_result(30.0 - 10 * accuracy)))
    for run, fraction in plan["curve_runs"]:
        path = root / "eval" / run / "curve" / fraction / "icl.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(icl_result(plan, {}, default=0.35)))
    # The trained QuRater's held-out accuracy: educational value hardest (QuRating Table 6).
    (root / "raters" / "qurater").mkdir(parents=True)
    (root / "raters" / "qurater" / "metrics.json").write_text(json.dumps(qurater_record(
        {"writing_style": 0.9, "facts_and_trivia": 0.85, "educational_value": 0.6,
         "required_expertise": 0.8})))
    tables, figures = root / "tables", root / "figures"
    cells = str(tables / "paper_cells.csv")
    commands = [
        ["papers", "tables", "--params", json.dumps(plan), "--run-dir", str(root),
         "--notes", '["SIMULATED judge"]'],
        ["papers", "figures", "--params", json.dumps(plan), "--cells", cells, "--out-dir",
         str(figures)],
        ["papers", "vs-published", "--cells", cells, "--published",
         *map(str, (REPO / "config" / "published").glob("*.csv")), "--scale",
         "different scale", "--out-csv", str(tables / "vs_published.csv"),
         "--out-md", str(tables / "vs_published.md")],
        ["papers", "claims", "--cells", cells, "--claims", str(REPO / "config" / "claims.yaml"),
         "--schema", str(REPO / "config" / "schema" / "claims.schema.yaml"), "--scale",
         "different scale", "--out-csv", str(tables / "claims.csv"),
         "--out-md", str(tables / "claims.md")],
    ]
    for command in commands:
        assert main(command) == 0, command
    names = [t["name"] for t in plan["tables"] + plan["rater_tables"]] + ["vs_published",
                                                                          "claims"]
    assert main(["report", "html", "--tables-dir", str(tables), "--figures-dir", str(figures),
                 "--captions-dir", str(REPO / "report"), "--title", "papers",
                 "--tables", *names, "--figures", *chart_names(plan),
                 "--out", str(root / "report.html")]) == 0
    return {"root": root, "tables": tables, "plan": plan, "names": names}


def test_tables_comparison_and_claims_are_written(run):
    tables = run["tables"]
    for name in ("qurating_table1", "dataman_table1", "dataman_table2", "metarater_table13",
                 "metarater_figure1"):
        assert (tables / f"{name}.csv").exists()
        assert read_markdown_notes(tables / f"{name}.md")[0] == "SIMULATED judge"
    compared = pd.read_csv(tables / "vs_published.csv")
    assert set(compared["scale"]) == {"different scale"} and len(compared) > 50
    assert "DIFFERENT SCALE" in " ".join(read_markdown_notes(tables / "vs_published.md"))
    claims = pd.read_csv(tables / "claims.csv").set_index("id")
    # l=5 at 0.7 beats uniform+50% far beyond lm-eval's 2-point errors; no replicates here.
    assert claims.loc["dataman_l5_beats_uniform_plus50", "verdict"] == "reproduced"
    assert claims.loc["dataman_l5_beats_uniform_plus50", "interval"] == "stderr"
    assert claims.loc["metarater_scales_up", "verdict"] == "not run"
    # QuRating Table 6: the trained setup's row from raters/qurater/metrics.json, the rest not
    # run; its published file has no numbers, which the comparison says.
    table6 = pd.read_csv(tables / "qurating_table6.csv", keep_default_na=False)
    assert table6.iloc[0].tolist() == ["Multi-task, from a pre-trained model", "90.0 ± 2.9",
                                       "85.0 ± 3.5", "60.0 ± 4.8", "80.0 ± 3.9"]
    assert set(table6.iloc[1:, 1:].to_numpy().ravel()) == {"not run"}
    assert claims.loc["qurating_qurater_educational_value_hardest", "verdict"] == "reproduced"
    assert claims.loc["qurating_qurater_pretrained_init_helps", "verdict"] == "not run"
    assert any("no published numbers: qurating_table6" in note
               for note in read_markdown_notes(tables / "vs_published.md"))


@pytest.mark.skipif(chromium() is None, reason="chromium not installed: "
                    "scripts/bootstrap.sh --test installs it")
def test_report_renders_every_table_and_figure_in_a_browser(run):
    seen = inspect_report(run["root"] / "report.html")
    assert seen["title"] == "papers"
    figures = chart_names(run["plan"])
    assert len(seen["images"]) == len(figures)
    assert all(image["loaded"] and image["width"] > 100 for image in seen["images"])
    assert len(seen["tables"]) == len(run["names"])
    for table, name in zip(seen["tables"], run["names"], strict=True):
        rows = len(pd.read_csv(run["tables"] / f"{name}.csv"))
        assert table["rows"] == rows and table["columns"] >= 2, name
        assert table["height"] > 20 * rows, name  # drawn on the page, not collapsed
    assert seen["links"] and all(link["resolves"] for link in seen["links"])
    assert seen["headings"][0].startswith("QuRating Table 1")
