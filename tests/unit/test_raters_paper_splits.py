"""Rater training held to the papers: QuRater's held-out and validation splits by pair with early
stopping on the mean validation accuracy over criteria (QuRating appendix B.2); DataMan's
documents split before the fourfold up-sampling, and its three versions (all-rating,
score-only, domain-only; DataMan appendix B.2) trained in one run with Table 8-10 rows each."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import REPO
from test_raters_io import TINY, pair_labels, pointwise_labels

from selectlab.config import read_with_includes
from selectlab.raters import qurater
from selectlab.raters import resolve as raters_cfg
from selectlab.raters.build import prepare_pairs, prepare_points, train_head_rater
from selectlab.raters.spec import base_rater, dataman_version_heads, heads
from selectlab.raters.tables import rater_tables
from selectlab.raters.train import TrainSettings, _run_epochs

CRITERIA = ("writing_style", "facts_and_trivia", "educational_value", "required_expertise")


def both_orders(labels: pd.DataFrame) -> pd.DataFrame:
    """Every pair also drawn the other way round (a document pair sampled twice)."""
    swapped = labels.rename(columns={"doc_a": "doc_b", "doc_b": "doc_a", "text_a": "text_b",
                                     "text_b": "text_a"})
    swapped["p_b_better"] = 1.0 - swapped["p_b_better"]
    return pd.concat([labels, swapped], ignore_index=True)


def unordered(data, rows) -> set[frozenset]:
    return {frozenset(key.split("|")) for key in data.pair_key[rows]}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_pair_is_never_on_both_sides_in_either_order(seed):
    data, _ = qurater.pair_data(both_orders(pair_labels(40)), CRITERIA)
    assert data.pair_key[0] == "|".join(sorted(data.pair_key[0].split("|")))
    train, held = qurater.split_pairs(data, 0.25, seed)
    assert len(held) and len(train)
    assert not unordered(data, train) & unordered(data, held)


def test_the_validation_split_is_by_pair_confident_and_apart_from_the_heldout_pairs():
    labels = both_orders(pair_labels(60))
    params = TINY | {"validation_fraction": 0.1, "heldout_fraction": 0.2}
    prepared = prepare_pairs(labels, heads("qurater"), params)
    data = prepared.data
    fit, validation, held = prepared.train, prepared.validation, prepared.heldout
    assert len(validation) and len(fit)
    sides = [unordered(data, rows) for rows in (fit, validation, held)]
    assert not sides[0] & sides[1] and not sides[0] & sides[2] and not sides[1] & sides[2]
    # QuRating B.2: training and validation keep only confident judgments (margin 50%)
    for rows in (fit, validation):
        assert qurater.confident(data.p_b_better[rows], 0.25).all()
    # every confident row (any criterion, either order) of a validation pair is validation too
    sure = qurater.confident(data.p_b_better, 0.25)
    for key in set(data.pair_key[validation]):
        assert set(np.flatnonzero((data.pair_key == key) & sure)) == set(
            np.asarray(validation)[data.pair_key[validation] == key])


def test_the_validation_score_is_the_mean_of_the_per_criterion_accuracies():
    # writing style: 2 pairs, 1 ranked right (0.5); educational value: 4 pairs, all right (1.0)
    rows = []
    for i, (criterion, right) in enumerate([("writing_style", True), ("writing_style", False)]
                                           + [("educational_value", True)] * 4):
        rows.append({"criterion": criterion, "doc_a": f"a{i}", "doc_b": f"b{i}",
                     "text_a": f"ta{i}", "text_b": f"tb{i}",
                     "p_b_better": 0.9 if right else 0.1, "n_orders": 2})
    data, _ = qurater.pair_data(pd.DataFrame(rows), ("writing_style", "educational_value"))
    objective = qurater.PairwiseObjective(data)
    # every b text scores 1, every a text 0: the judge's "b better" rows are ranked right
    scores = torch.tensor([1.0 if text.startswith("tb") else 0.0 for text in data.texts])
    outputs = {"writing_style": scores, "educational_value": scores}
    rows_of = np.arange(len(data.texts))
    examples = np.arange(len(data))
    assert objective.validation_score(outputs, rows_of, examples) == pytest.approx(0.75)
    # not the accuracy pooled over all rows (5 of 6)
    assert objective.validation_score(outputs, rows_of, examples) != pytest.approx(5 / 6)


def test_early_stopping_keeps_the_state_with_the_best_score_not_the_lowest_loss():
    module = torch.nn.Linear(1, 1, bias=False)
    epoch = {"n": -1}

    def train_epoch() -> float:
        epoch["n"] += 1
        with torch.no_grad():
            module.weight.fill_(float(epoch["n"]))
        return 1.0

    # (validation loss, validation score) per epoch: the loss is lowest at epoch 1, the score
    # highest at epoch 2
    history_values = [(0.9, 0.60), (0.2, 0.70), (0.5, 0.90), (0.4, 0.80), (0.3, 0.85)]
    history = _run_epochs(module, train_epoch, lambda: history_values[epoch["n"]], True,
                          TrainSettings(epochs=5, patience=2))
    assert history.best_epoch == 2
    assert module.weight.item() == 2.0
    assert len(history.train_loss) == 5  # epochs 3 and 4 did not beat 0.90: patience 2 spent
    assert history.as_dict()["best_validation_score"] == 0.90


def test_dataman_documents_are_split_before_the_up_sampling():
    labels = pointwise_labels("dataman", n=60)
    params = TINY | {"validation_fraction": 0.2, "heldout_fraction": 0.2,
                     "upsample_low_scores": 4}
    prepared = prepare_points("dataman", labels, heads("dataman"), params)
    fit, validation, held = prepared.train, prepared.validation, prepared.heldout
    assert set(fit).isdisjoint(validation) and set(fit).isdisjoint(held)
    assert set(validation).isdisjoint(held)
    assert len(np.unique(validation)) == len(validation) and len(np.unique(held)) == len(held)
    low = labels["overall_score"].to_numpy() < 3
    counts = pd.Series(fit).value_counts()
    assert (counts[low[counts.index]] == 4).all() and (counts[~low[counts.index]] == 1).all()
    assert low[validation].any()  # low documents reach validation, once each
    assert len(set(fit)) + len(validation) + len(held) == len(labels)


def test_the_three_dataman_versions_are_instances_of_one_run():
    config = read_with_includes(REPO / "config" / "paper.yaml")
    names = raters_cfg.configured_raters(config)
    start = names.index("dataman")
    assert names[start:start + 3] == ["dataman", "dataman_score", "dataman_domain"]
    versions = {name: raters_cfg.rater_params(config, name)["version"]
                for name in ("dataman", "dataman_score", "dataman_domain")}
    assert versions == {"dataman": "all", "dataman_score": "score", "dataman_domain": "domain"}
    assert all("versions" not in raters_cfg.rater_params(config, n) for n in versions)
    assert {raters_cfg.labels_protocol(n) for n in versions} == {"dataman"}
    assert base_rater("dataman_domain") == "dataman"
    assert "rater_dataman_throughput" in raters_cfg.table_names(config)
    bad = copy.deepcopy(config)
    bad["raters"]["dataman"]["versions"] = ["score", "domain"]  # the annotating one is missing
    with pytest.raises(ValueError, match="not among the versions trained"):
        raters_cfg.configured_raters(bad)
    with pytest.raises(ValueError, match="not a trained DataMan version"):
        raters_cfg.rater_params(config, "dataman_all")


def test_each_dataman_version_trains_its_heads_and_gets_table_8_9_10_rows(tmp_path,
                                                                          tiny_tokenizer_dir):
    labels = pointwise_labels("dataman", n=40)
    path = tmp_path / "labels.parquet"
    labels.to_parquet(path)
    records = {}
    for name, version in (("dataman", "all"), ("dataman_score", "score"),
                          ("dataman_domain", "domain")):
        record = train_head_rater("dataman", path, TINY | {"version": version},
                                  tmp_path / name, name=name, tokenizer_dir=tiny_tokenizer_dir,
                                  judge_notes=["simulated"], config_hash="abc")
        assert record["name"] == name and record["version"] == version
        expected = {h.name for h in dataman_version_heads(version)}
        assert set(record["metrics"]) - {"overall_score_analysis"} == expected
        assert record["throughput"]["documents"] == 10 and record["throughput"]["seconds"] > 0
        records[name] = record
    tables = rater_tables(records)
    table8, _ = tables["rater_dataman"]
    by_version = {v: frame for v, frame in table8.groupby("version")}
    assert set(by_version) == {"All-rating", "Score-only", "Domain-only"}
    assert len(by_version["All-rating"]) == 14 + 1 + 1 + len(set(labels["domain"]))  # + avgs
    assert by_version["Score-only"]["item"].tolist() == ["Overall Score", "Quality avg."]
    assert (by_version["Domain-only"]["section"] == "domain").all()
    assert list(table8["version"].drop_duplicates()) == ["All-rating", "Domain-only",
                                                         "Score-only"]  # Table 8's order
    table9, _ = tables["rater_dataman_confusion"]
    assert table9["version"].tolist() == ["All-rating", "Score-only"]
    table10, _ = tables["rater_dataman_throughput"]
    assert table10["version"].tolist() == ["All-rating", "Domain-only", "Score-only"]
    assert (table10["Processing Speed (Docs/s)"] > 0).all()
    assert (table10["Output Speed (Tok/s)"] == 0).all()  # heads generate nothing
