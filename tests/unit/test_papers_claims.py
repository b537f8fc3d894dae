"""The claims ledger: valid, true of the papers' own numbers, and judged by intervals."""

from __future__ import annotations

import jsonschema
import pandas as pd
import pytest
import yaml

from selectlab.config import load_config
from selectlab.papers.cells import CELL_COLUMNS, cell_record
from selectlab.papers.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    judge_claims,
    load_claims,
    parse_claim,
)
from selectlab.papers.estimates import estimate
from selectlab.papers.layouts import LAYOUTS
from selectlab.papers.published import read_published
from selectlab.papers.rater_comparison import ROWS
from tests.conftest import REPO

LEDGER = REPO / "config" / "claims.yaml"
SCHEMA = REPO / "config" / "schema" / "claims.schema.yaml"
PAPER = load_config(REPO / "config" / "paper.yaml")
CLAIMS = load_claims(LEDGER, SCHEMA)


def cells_from(values: dict[tuple[str, str, str], list[float]], block: str = "") -> pd.DataFrame:
    """Cells with the given replicate values, keyed (table, variant, column)."""
    records = [cell_record(table, block, variant, column, estimate(v))
               for (table, variant, column), v in values.items()]
    return pd.DataFrame(records, columns=CELL_COLUMNS)


def published_cells(rename: dict[str, str] | None = None) -> pd.DataFrame:
    """The papers' numbers as cells of three identical replicates (an exact comparison)."""
    published = read_published((REPO / "config" / "published").glob("*.csv"))
    records = []
    for row in published.to_dict("records"):
        table = (rename or {}).get(row["table"], row["table"])
        records.append(cell_record(table, row["block"], row["variant"], row["column"],
                                   estimate([row["published"]] * 3)))
    return pd.DataFrame(records, columns=CELL_COLUMNS)


def test_ledger_is_valid_and_names_real_tables_and_variants():
    assert len(CLAIMS) >= 20
    assert {c.paper for c in CLAIMS} == {"QuRating", "DataMan", "Meta-rater"}
    for claim in CLAIMS:
        assert claim.size() >= 1, claim.id
        refs = [r for c in claim.comparisons for r in (c.left, c.right)]
        refs += [r for chain in claim.chains for r in chain.cells]
        for ref in refs:
            if isinstance(ref, float):
                continue
            assert ref.table in LAYOUTS, claim.id
            # QuRating Table 6's rows are ways of training the QuRater, not variants.
            rows = ROWS if LAYOUTS[ref.table].kind == "rater" else PAPER["variants"]
            assert ref.variant in rows, (claim.id, ref.variant)


def test_schema_rejects_a_malformed_claim(tmp_path):
    document = yaml.safe_load(LEDGER.read_text())
    document["claims"][0]["comparisons"] = [{"left": {"table": "qurating_table1"}, "op": ">",
                                             "right": {"variant": "uniform"}}]
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(jsonschema.ValidationError):
        load_claims(path, SCHEMA)
    document["claims"] = document["claims"][:5]
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(jsonschema.ValidationError):  # the ledger holds at least 20 claims
        load_claims(path, SCHEMA)


def test_every_claim_with_published_numbers_holds_on_them():
    """The predicates say what the papers' own numbers say."""
    verdicts = judge_claims(CLAIMS, published_cells(), "same scale").set_index("id")["verdict"]
    ran = verdicts[verdicts != NOT_RUN]
    assert set(ran) == {REPRODUCED}, ran[ran != REPRODUCED].to_dict()
    assert {"dataman_overall_score_monotone", "dataman_l5_beats_uniform_plus50",
            "metarater_beats_mean", "metarater_beats_intersection",
            "metarater_more_scores_help"} <= set(ran.index)


def test_qurating_claims_hold_on_datamans_rerun_of_its_selections():
    """DataMan Tables 1 and 14 re-run QuRating's selections; each QuRating claim the re-run
    can check holds there too."""
    cells = published_cells({"dataman_table1": "qurating_table1",
                             "dataman_table14": "qurating_table9"})
    verdicts = judge_claims([c for c in CLAIMS if c.paper == "QuRating"], cells, "")
    ran = verdicts[verdicts["verdict"] != NOT_RUN].set_index("id")["verdict"]
    assert set(ran) == {REPRODUCED} and len(ran) >= 10


BEATS_MEAN = next(c for c in CLAIMS if c.id == "metarater_beats_mean")
KEY_A = ("metarater_table4", "metarater_all", "average")
KEY_B = ("metarater_table4", "mean_all25", "average")


def verdict_of(claim, cells) -> str:
    return judge_claims([claim], cells, "different scale").iloc[0]["verdict"]


def test_planted_numbers_flip_a_verdict():
    apart = cells_from({KEY_A: [47.0, 47.2, 46.9], KEY_B: [44.6, 44.8, 44.5]})
    assert verdict_of(BEATS_MEAN, apart) == REPRODUCED
    reversed_ = cells_from({KEY_A: [47.0, 47.2, 46.9], KEY_B: [48.0, 48.2, 47.9]})
    assert verdict_of(BEATS_MEAN, reversed_) == NOT_REPRODUCED
    overlapping = cells_from({KEY_A: [47.0, 47.6, 46.9], KEY_B: [46.9, 47.3, 47.0]})
    assert verdict_of(BEATS_MEAN, overlapping) == INCONCLUSIVE
    # One run each, no standard error (as for perplexity): no interval, no verdict.
    assert verdict_of(BEATS_MEAN, cells_from({KEY_A: [47.0], KEY_B: [44.0]})) == INCONCLUSIVE
    assert verdict_of(BEATS_MEAN, cells_from({KEY_A: [47.0]})) == NOT_RUN


def test_chain_needs_every_step_and_any_needs_one():
    chain = parse_claim({"id": "x", "paper": "DataMan", "source": "", "claim": "",
                         "chain": {"table": "dataman_table1", "column": "average", "op": "<",
                                   "variants": ["overall_l1", "overall_l3", "overall_l5"]}})
    rising = {("dataman_table1", f"overall_l{level}", "average"): [v, v + 0.1, v - 0.1]
              for level, v in ((1, 38.0), (3, 44.0), (5, 49.0))}
    assert verdict_of(chain, cells_from(rising)) == REPRODUCED
    rising[("dataman_table1", "overall_l5", "average")] = [40.0, 40.1, 39.9]
    assert verdict_of(chain, cells_from(rising)) == NOT_REPRODUCED
    # A level the run lacks drops out of the chain: l=1 < l=5 is still tested.
    del rising[("dataman_table1", "overall_l3", "average")]
    row = judge_claims([chain], cells_from(rising), "").iloc[0]
    assert row["comparisons"] == "1 of 2 run" and row["verdict"] == REPRODUCED
    any_claim = parse_claim({"id": "y", "paper": "QuRating", "source": "", "claim": "",
                             "holds": "any",
                             "each": {"table": "qurating_table9", "column": "piqa", "op": "<",
                                      "variants": ["educational_value_top"],
                                      "than": {"variant": "uniform"}},
                             "comparisons": [{"left": {"table": "qurating_table9",
                                                       "variant": "educational_value_top",
                                                       "column": "mmlu"},
                                              "op": "<", "right": {"variant": "uniform"}}]})
    cells = cells_from({("qurating_table9", "educational_value_top", "piqa"): [60, 61, 59],
                        ("qurating_table9", "uniform", "piqa"): [70, 71, 69],
                        ("qurating_table9", "educational_value_top", "mmlu"): [30, 31, 29],
                        ("qurating_table9", "uniform", "mmlu"): [25, 26, 24]})
    assert verdict_of(any_claim, cells) == REPRODUCED


def test_matches_within_tolerance():
    claim = parse_claim({"id": "m", "paper": "Meta-rater", "source": "", "claim": "",
                         "tolerance": 1.0,
                         "comparisons": [{"left": {"table": "metarater_table1",
                                                   "variant": "metarater_all",
                                                   "column": "average"},
                                          "op": "~", "right": {"variant": "uniform"}}]})
    near = cells_from({("metarater_table1", "metarater_all", "average"): [45.0, 45.1, 44.9],
                       ("metarater_table1", "uniform", "average"): [45.2, 45.1, 45.3]})
    far = cells_from({("metarater_table1", "metarater_all", "average"): [48.0, 48.1, 47.9],
                      ("metarater_table1", "uniform", "average"): [45.2, 45.1, 45.3]})
    assert verdict_of(claim, near) == REPRODUCED
    assert verdict_of(claim, far) == NOT_REPRODUCED


def test_claims_table_reports_evidence_and_scale():
    cells = cells_from({KEY_A: [47.0, 47.2, 46.9], KEY_B: [44.6, 44.8, 44.5]})
    row = judge_claims([BEATS_MEAN], cells, "different scale").iloc[0]
    assert row["comparisons"] == "1 of 1 run" and row["interval"] == "replicates"
    assert row["evidence"].startswith("metarater_all.average > mean_all25.average: 47.03 vs")
    assert row["scale"] == "different scale"
