"""Report tables built from small hand-made evaluation results."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from selectlab.report.table_files import read_markdown_notes, write_table
from selectlab.report.tables import (
    AVERAGE,
    TEST_PPL,
    VAL_PPL,
    delta_column,
    icl_by_task_table,
    main_table,
    perplexity_by_source_table,
    read_eval_results,
)
from selectlab.report.training_tokens import TOKEN_COLUMNS

GROUPS = ["reading comprehension", "commonsense"]
SIMULATED_NOTE = "Ratings come from the SIMULATED judge (offline default), not an LLM"

# Config order interleaves families on purpose: rows must come out grouped.
DESCRIPTIONS = {
    "uniform": {"family": "uniform", "method": "uniform", "label": "Uniform", "params": {}},
    "dsir_wiki": {"family": "DSIR", "method": "dsir", "label": "DSIR Wiki", "params": {}},
    "edu_t2": {"family": "QuRating", "method": "qurating", "label": "Edu t=2", "params": {}},
    "dsir_book": {"family": "DSIR", "method": "dsir", "label": "DSIR Book", "params": {}},
    "uniform_45b": {"family": "uniform", "method": "uniform", "label": "Uniform 45B", "params": {}},
    "proxy_001": {
        "family": "Meta-rater proxy",
        "method": "proxy",
        "label": "Proxy 1",
        "params": {},
    },
}


def ppl_result(val_all: float, test_all: float, wiki: float = 20.0) -> dict:
    def split(overall: float) -> dict:
        return {
            "RedPajamaWikipedia": {"nll": math.log(wiki), "ppl": wiki, "tokens": 100},
            "RedPajamaCommonCrawl": {"nll": 3.5, "ppl": 33.12, "tokens": 300},
            "MysterySource": {"nll": 3.0, "ppl": 20.09, "tokens": 10},
            "all": {"nll": math.log(overall), "ppl": overall, "tokens": 410},
        }

    return {"validation": split(val_all), "test": split(test_all)}


def icl_result(arc: float, boolq: float, hellaswag: float, stderr: float | None = 0.012) -> dict:
    return {
        "tasks": {
            # acc differs from acc_norm so a test can tell which one was used.
            "arc_easy": {
                "group": "reading comprehension",
                "shots": 15,
                "metric": "acc_norm",
                "acc": arc - 0.1,
                "acc_stderr": 0.01,
                "acc_norm": arc,
                "acc_norm_stderr": stderr,
                "n": 200,
            },
            "boolq": {
                "group": "reading comprehension",
                "shots": 0,
                "metric": "acc",
                "acc": boolq,
                "acc_stderr": stderr,
                "acc_norm": None,
                "acc_norm_stderr": None,
                "n": 200,
            },
            "hellaswag": {
                "group": "commonsense",
                "shots": 6,
                "metric": "acc_norm",
                "acc": 0.0,
                "acc_stderr": 0.0,
                "acc_norm": hellaswag,
                "acc_norm_stderr": stderr,
                "n": 200,
            },
        },
        "lm_eval": {"version": "0.4.13"},
    }


@pytest.fixture
def results() -> tuple[dict, dict]:
    perplexity = {
        "uniform": ppl_result(30.0, 31.0),
        "dsir_wiki": ppl_result(28.5, 29.25, wiki=15.0),
        "edu_t2": ppl_result(27.0, 27.5),
        "dsir_book": ppl_result(float("inf"), 32.0),
        "uniform_45b": ppl_result(29.0, 30.0),
        "proxy_001": ppl_result(60.0, 61.0),
    }
    icl = {
        "uniform": icl_result(0.40, 0.60, 0.30),
        "dsir_wiki": icl_result(0.45, 0.63, 0.33),
        "edu_t2": icl_result(0.50, 0.62, 0.36, stderr=None),
        "dsir_book": icl_result(0.42, 0.61, 0.31),
        "uniform_45b": icl_result(0.41, 0.61, 0.32),
        "proxy_001": None,
    }
    return perplexity, icl


def test_rows_are_grouped_by_family_in_config_order(results):
    perplexity, icl = results
    table = main_table(DESCRIPTIONS, perplexity, icl, GROUPS)
    assert list(table.index) == [
        "uniform",
        "uniform_45b",
        "dsir_wiki",
        "dsir_book",
        "edu_t2",
        "proxy_001",
    ]
    assert list(table["variant"])[:2] == ["Uniform", "Uniform 45B"]
    expected_columns = [
        "family",
        "variant",
        VAL_PPL,
        TEST_PPL,
        *GROUPS,
        AVERAGE,
        "delta vs uniform",
        *TOKEN_COLUMNS,
    ]
    assert list(table.columns) == expected_columns
    # Without manifests and logs the token columns stay empty, said once for the table.
    assert table[list(TOKEN_COLUMNS)].isna().all().all()
    assert sum("no selection manifests or training logs" in n for n in table.attrs["notes"]) == 1


def test_explicit_family_order_wins(results):
    perplexity, icl = results
    table = main_table(DESCRIPTIONS, perplexity, icl, GROUPS, family_order=["QuRating"])
    assert list(table.index)[:3] == ["edu_t2", "uniform", "uniform_45b"]


def test_group_scores_average_and_delta_match_hand_computation(results):
    perplexity, icl = results
    table = main_table(DESCRIPTIONS, perplexity, icl, GROUPS)
    # dsir_wiki: reading = mean(45 acc_norm, 63 acc) = 54.0, commonsense = 33.0
    assert table.at["dsir_wiki", "reading comprehension"] == pytest.approx(54.0)
    assert table.at["dsir_wiki", "commonsense"] == pytest.approx(33.0)
    assert table.at["dsir_wiki", AVERAGE] == pytest.approx((54.0 + 33.0) / 2)
    for name in ["uniform", "uniform_45b", "dsir_wiki", "dsir_book", "edu_t2"]:
        hand = sum(table.at[name, group] for group in GROUPS) / len(GROUPS)
        assert table.at[name, AVERAGE] == pytest.approx(hand, abs=0.051)
    assert table.at["uniform", "delta vs uniform"] == 0.0
    assert table.at["dsir_wiki", "delta vs uniform"] == pytest.approx(43.5 - 40.0)
    assert table.at["uniform", VAL_PPL] == pytest.approx(30.0)
    assert table.at["dsir_wiki", TEST_PPL] == pytest.approx(29.25)


def test_empty_cells_are_explained(results):
    perplexity, icl = results
    reasons = {"proxy_001": "Meta-rater proxy models are not evaluated on ICL"}
    table = main_table(DESCRIPTIONS, perplexity, icl, GROUPS, missing_reasons=reasons)
    numeric = table.drop(columns=["family", "variant"])
    finite_or_empty = numeric.map(lambda v: pd.isna(v) or math.isfinite(v))
    assert finite_or_empty.all().all()
    assert table.loc["proxy_001", [*GROUPS, AVERAGE]].isna().all()
    assert table.at["proxy_001", VAL_PPL] == pytest.approx(60.0)
    assert pd.isna(table.at["dsir_book", VAL_PPL])
    notes = table.attrs["notes"]
    assert any("Proxy 1" in n and reasons["proxy_001"] in n for n in notes)
    assert any("DSIR Book" in n and VAL_PPL in n for n in notes)


def test_missing_baseline_leaves_delta_empty_with_note(results):
    perplexity, icl = results
    icl = {**icl, "uniform": None}
    table = main_table(DESCRIPTIONS, perplexity, icl, GROUPS)
    assert table[delta_column("uniform")].isna().all()
    assert any("baseline 'uniform'" in n for n in table.attrs["notes"])


def test_write_table_puts_every_note_under_the_markdown(tmp_path, results):
    perplexity, icl = results
    table = main_table(DESCRIPTIONS, perplexity, icl, GROUPS)
    csv_path, md_path = tmp_path / "tables" / "main.csv", tmp_path / "tables" / "main.md"
    write_table(table, csv_path, md_path, notes=[SIMULATED_NOTE])

    markdown = md_path.read_text()
    table_part, _, notes_part = markdown.partition("\n\n")
    assert table_part.splitlines()[0].startswith("| family | variant | val ppl |")
    assert len(table_part.splitlines()) == 2 + len(DESCRIPTIONS)
    assert f"- {SIMULATED_NOTE}" in notes_part.splitlines()
    assert read_markdown_notes(md_path) == [SIMULATED_NOTE, *table.attrs["notes"]]
    assert "| 40.0 |" in markdown and "| 30.00 |" in markdown
    assert "nan" not in table_part.lower() and "inf" not in table_part.lower()

    back = pd.read_csv(csv_path)
    assert list(back.columns) == list(table.columns)
    assert back[AVERAGE].tolist()[:5] == pytest.approx(table[AVERAGE].tolist()[:5])
    assert back[AVERAGE].isna().tolist()[5]
    assert list(tmp_path.joinpath("tables").iterdir()) and not any(
        p.name.endswith(".tmp") for p in tmp_path.joinpath("tables").iterdir()
    )


def test_perplexity_by_source_has_both_splits_and_known_source_order(results):
    perplexity, _ = results
    table = perplexity_by_source_table(DESCRIPTIONS, {**perplexity, "proxy_001": None})
    assert list(table.columns) == [
        "split",
        "family",
        "variant",
        "CommonCrawl",
        "Wikipedia",
        "MysterySource",
        "all",
    ]
    assert list(table["split"]) == ["validation"] * 6 + ["test"] * 6
    assert table.loc[("validation", "dsir_wiki"), "Wikipedia"] == pytest.approx(15.0)
    assert table.loc[("test", "uniform"), "all"] == pytest.approx(31.0)
    assert pd.isna(table.loc[("validation", "dsir_book"), "all"])
    assert table.loc[("test", "proxy_001"), ["CommonCrawl", "all"]].isna().all()
    assert any("Proxy 1 [test]" in n for n in table.attrs["notes"])


def test_icl_by_task_shows_score_and_stderr(results):
    perplexity, icl = results
    table = icl_by_task_table(DESCRIPTIONS, icl, ["commonsense", "reading comprehension"])
    assert list(table.columns) == ["family", "variant", "hellaswag", "arc_easy", "boolq"]
    assert table.at["uniform", "arc_easy"] == "40.0 ± 1.2"
    assert table.at["uniform", "boolq"] == "60.0 ± 1.2"
    assert table.at["edu_t2", "hellaswag"] == "36.0"
    assert pd.isna(table.at["proxy_001", "boolq"])
    notes = table.attrs["notes"]
    assert any("arc_easy = reading comprehension, 15-shot, acc_norm" in n for n in notes)
    assert any("Proxy 1" in n for n in notes)


def test_read_eval_results_returns_none_for_absent_files(tmp_path, results):
    perplexity, icl = results
    (tmp_path / "uniform").mkdir()
    (tmp_path / "uniform" / "perplexity.json").write_text(json.dumps(perplexity["uniform"]))
    (tmp_path / "uniform" / "icl.json").write_text(json.dumps(icl["uniform"]))
    loaded_ppl, loaded_icl = read_eval_results(tmp_path, ["uniform", "proxy_001"])
    assert loaded_ppl["uniform"] == perplexity["uniform"]
    assert loaded_icl["uniform"] == icl["uniform"]
    assert loaded_ppl["proxy_001"] is None and loaded_icl["proxy_001"] is None
