"""Tokens selected and trained in the main table, read from manifests and training logs: a
selection short of its budget is marked, whether its model trained on less or on repeats."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from selectlab.cli import main
from selectlab.pack import count_sequences
from selectlab.report.table_files import read_markdown_notes, write_table
from selectlab.report.tables import main_table
from selectlab.report.training_tokens import (
    SHORT_OF_BUDGET,
    TOKENS_SELECTED,
    TOKENS_TRAINED,
    TrainingTokens,
    read_training_tokens,
    short_notes,
)
from selectlab.selection.run import SelectionSpec, select_variant
from selectlab.selection.synthetic import write_synthetic_sidecars
from tests.unit.test_report_tables import GROUPS, icl_result, ppl_result

SHARDS = ["shard_a", "shard_b"]
DESCRIPTIONS = {
    "uniform": {"family": "baseline", "method": "uniform", "label": "Uniform", "params": {}},
    "overall_l1": {"family": "dataman_level", "method": "score_level",
                   "label": "Overall Score l=1", "params": {}},
    "overall_l1_repeated": {"family": "dataman_level", "method": "score_level",
                            "label": "Overall Score l=1 up-sampled", "params": {}},
}
SEQ_LEN, BATCH = 64, 4  # tokens per optimiser step: 256


def write_train_log(path, selection: pd.DataFrame) -> int:
    """A log as the trainer writes it after packing the selection (every row, repeats included,
    one EOS each): one row per step over whole global batches of packed sequences, `tokens`
    counting steps x batch x sequence length; returns the last value."""
    steps = count_sequences(selection["n_tokens"].to_numpy(), SEQ_LEN) // BATCH
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"step": range(1, steps + 1),
                  "tokens": [(s + 1) * SEQ_LEN * BATCH for s in range(steps)],
                  "loss": 5.0, "lr": 1e-3}).to_csv(path, index=False)
    return steps * SEQ_LEN * BATCH


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Three real selections on synthetic sidecars (uniform fills its budget; Overall Score l=1
    cannot, once taken as it is and once up-sampled) and a training log for each."""
    root = tmp_path_factory.mktemp("run")
    attributes = root / "attributes"
    write_synthetic_sidecars(attributes, SHARDS, 1000, seed=3)
    level1 = {"score": "levels.overall_score", "level": 1}
    specs = {"uniform": ("uniform", 100_000, {}), "overall_l1": ("score_level", 400_000, level1),
             "overall_l1_repeated": ("score_level", 400_000, level1 | {"upsample_short": True})}
    for name, (method, budget, params) in specs.items():
        manifest = select_variant(SelectionSpec(name, method, budget, 7, params), attributes,
                                  SHARDS, root / "selections" / name)
        selection = pd.read_parquet(root / "selections" / name / "selection.parquet")
        assert selection["n_tokens"].sum() == manifest["selected_tokens"]
        write_train_log(root / "models" / name / "train_log.csv", selection)
        (root / "eval" / name).mkdir(parents=True)
        (root / "eval" / name / "perplexity.json").write_text(json.dumps(ppl_result(30, 31)))
        (root / "eval" / name / "icl.json").write_text(json.dumps(icl_result(0.4, 0.6, 0.3)))
    return root


def manifest_of(run_dir, name: str) -> dict:
    return json.loads((run_dir / "selections" / name / "manifest.json").read_text())


def tokens_of(run_dir) -> dict[str, TrainingTokens]:
    return read_training_tokens(sorted(run_dir.glob("selections/*/manifest.json")),
                                sorted(run_dir.glob("models/*/train_log.csv")))


def last_logged(run_dir, name: str) -> int:
    return int(pd.read_csv(run_dir / "models" / name / "train_log.csv")["tokens"].iloc[-1])


def test_columns_hold_the_manifests_and_the_logs_numbers(run_dir):
    table = main_table(DESCRIPTIONS, {}, {}, GROUPS, tokens=tokens_of(run_dir))
    assert list(table.columns)[-3:] == [TOKENS_SELECTED, TOKENS_TRAINED, SHORT_OF_BUDGET]
    for name in DESCRIPTIONS:
        assert table.at[name, TOKENS_SELECTED] == manifest_of(run_dir, name)["unique_tokens"]
        assert table.at[name, TOKENS_TRAINED] == last_logged(run_dir, name)
    uniform = manifest_of(run_dir, "uniform")
    assert uniform["unique_tokens"] >= uniform["budget_tokens"] == 100_000
    assert table.at["uniform", SHORT_OF_BUDGET] == 0.0
    # Packing adds an EOS per document and training drops the last part-batch: close, not equal.
    gap = table.at["uniform", TOKENS_TRAINED] - table.at["uniform", TOKENS_SELECTED]
    assert gap != 0 and -256 < gap <= uniform["selected_documents"]


def test_a_short_selection_is_marked_and_trains_on_what_it_found(run_dir):
    table = main_table(DESCRIPTIONS, {}, {}, GROUPS, tokens=tokens_of(run_dir))
    found = manifest_of(run_dir, "overall_l1")["unique_tokens"]
    assert found < 400_000
    assert table.at["overall_l1", SHORT_OF_BUDGET] == pytest.approx(1 - found / 400_000,
                                                                    abs=5e-4)
    assert table.at["overall_l1", SHORT_OF_BUDGET] > 0.1
    # One pass over what the level holds (and its EOS tokens): far below the budget.
    documents = manifest_of(run_dir, "overall_l1")["selected_documents"]
    assert abs(table.at["overall_l1", TOKENS_TRAINED] - found) <= documents + 256
    assert table.at["overall_l1", TOKENS_TRAINED] < 0.4 * 400_000
    note = next(n for n in table.attrs["notes"] if n.startswith("Overall Score l=1:"))
    assert f"{found:,} distinct tokens" in note and "400,000-token budget" in note
    assert "nothing was repeated" in note
    assert not any(n.startswith("Uniform:") for n in table.attrs["notes"])


def test_an_upsampled_selection_trains_on_more_tokens_than_it_found(run_dir):
    table = main_table(DESCRIPTIONS, {}, {}, GROUPS, tokens=tokens_of(run_dir))
    row = table.loc["overall_l1_repeated"]
    # The same level-1 documents, found once, read as often as the budget needs.
    assert row[TOKENS_SELECTED] == table.at["overall_l1", TOKENS_SELECTED]
    assert row[SHORT_OF_BUDGET] == table.at["overall_l1", SHORT_OF_BUDGET] > 0
    assert row[TOKENS_TRAINED] > 2 * row[TOKENS_SELECTED]
    assert row[TOKENS_TRAINED] > 400_000 - 256
    passes = max(manifest_of(run_dir, "overall_l1_repeated")["upsampled"].values())
    note = next(n for n in table.attrs["notes"] if n.startswith("Overall Score l=1 up-sampled:"))
    assert f"up to {passes} passes" in note and f"{int(row[TOKENS_TRAINED]):,} tokens" in note


def test_the_report_command_writes_the_columns_and_notes(run_dir, tmp_path):
    params = {"descriptions": {n: d | {"order": i} for i, (n, d) in
                               enumerate(DESCRIPTIONS.items())},
              "baseline": "uniform", "group_order": GROUPS, "notes": []}
    main(["report", "tables", "--params", json.dumps(params),
          "--eval-dir", str(run_dir / "eval"),
          "--selections", *map(str, sorted(run_dir.glob("selections/*/selection.parquet"))),
          "--manifests", *map(str, sorted(run_dir.glob("selections/*/manifest.json"))),
          "--train-logs", *map(str, sorted(run_dir.glob("models/*/train_log.csv"))),
          "--out-dir", str(tmp_path)])
    written = pd.read_csv(tmp_path / "main.csv").set_index("variant")
    assert written.at["Uniform", TOKENS_TRAINED] == last_logged(run_dir, "uniform")
    assert written.at["Overall Score l=1", TOKENS_SELECTED] == manifest_of(
        run_dir, "overall_l1")["unique_tokens"]
    assert written[SHORT_OF_BUDGET].tolist()[0] == 0.0
    markdown = (tmp_path / "main.md").read_text()
    header = markdown.splitlines()[0]
    assert header.endswith(f"| {TOKENS_SELECTED} | {TOKENS_TRAINED} | {SHORT_OF_BUDGET} |")
    assert f"| {last_logged(run_dir, 'uniform')} | 0.000 |" in markdown  # whole numbers
    assert sum(n.startswith("Overall Score l=1") for n in read_markdown_notes(
        tmp_path / "main.md")) == 2


def test_missing_files_leave_explained_empty_cells(tmp_path):
    old = tmp_path / "selections" / "old" / "manifest.json"
    old.parent.mkdir(parents=True)
    # Written before `unique_tokens`, with repeats: the distinct tokens are not known.
    old.write_text(json.dumps({"budget_tokens": 1000, "selected_tokens": 1000,
                               "selected_documents": 12, "unique_documents": 9}))
    plain = tmp_path / "selections" / "plain" / "manifest.json"
    plain.parent.mkdir(parents=True)
    plain.write_text(json.dumps({"budget_tokens": 1000, "selected_tokens": 1010,
                                 "selected_documents": 9, "unique_documents": 9}))
    tokens = read_training_tokens([old, plain], [])
    descriptions = {name: {"family": "f", "label": name} for name in ("old", "plain", "none")}
    table = main_table(descriptions, {}, {}, GROUPS, tokens=tokens)
    assert pd.isna(table.at["old", TOKENS_SELECTED]) and pd.isna(table.at["old", SHORT_OF_BUDGET])
    assert table.at["plain", TOKENS_SELECTED] == 1010 and table.at["plain", SHORT_OF_BUDGET] == 0
    assert table[TOKENS_TRAINED].isna().all() and table.loc["none"].iloc[2:].isna().all()
    notes = table.attrs["notes"]
    assert any(n.startswith("Empty for old") and "predates `unique_tokens`" in n for n in notes)
    assert any(n.startswith("Empty for none") and "no selection manifest" in n for n in notes)
    assert any(TOKENS_TRAINED in n and "no training log" in n for n in notes)
    md = tmp_path / "main.md"
    write_table(table, tmp_path / "main.csv", md)
    assert "nan" not in md.read_text().split("\n\n")[0].lower()


def test_unreadable_token_records_are_errors(tmp_path):
    log = tmp_path / "models" / "v" / "train_log.csv"
    log.parent.mkdir(parents=True)
    log.write_text("step,tokens,loss,lr\n")
    with pytest.raises(ValueError, match="at least one step"):
        read_training_tokens([], [log])
    manifest = tmp_path / "selections" / "v" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"selected_tokens": 5}))
    with pytest.raises(ValueError, match="no budget_tokens"):
        read_training_tokens([manifest], [])


def test_a_papers_table_names_its_rows_short_of_budget_in_row_order():
    records = {"uniform": TrainingTokens(1000, 1000, 1024),
               "overall_l2": TrainingTokens(1000, 600, 512),
               "overall_l1": TrainingTokens(1000, 250, 256, {"l1/wiki": 4})}
    labels = {"overall_l1": "Overall Score l=1", "overall_l2": "Overall Score l=2"}
    notes = short_notes(["uniform", "overall_l1", "overall_l2", "not_run"], labels, records)
    assert notes == [
        "Overall Score l=1: its selection holds 250 distinct tokens, 75.0% short of its "
        "1,000-token budget; its short strata were repeated (up to 4 passes), so its model "
        "trained on 256 tokens.",
        "Overall Score l=2: its selection holds 600 distinct tokens, 40.0% short of its "
        "1,000-token budget; nothing was repeated: its model trained one pass over them, "
        "512 tokens."]
