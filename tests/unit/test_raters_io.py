"""Saved raters load with one call and score exactly as before saving; cards say what they are."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from selectlab.judge import dataman, prrc, wanjuan
from selectlab.raters.build import train_head_rater
from selectlab.raters.io import NO_TOKENS
from selectlab.raters.load import load_rater
from selectlab.raters.pretrained import wrap_pretrained

TINY = {"backbone": "random_encoder", "train_backbone": False, "window": 16, "pool_layers": [-1],
        "dtype": "float32", "random_encoder": {"hidden_size": 16, "num_layers": 1,
                                               "num_heads": 2, "intermediate_size": 32},
        "forward_batch_size": 16, "batch_size": 16, "epochs": 5, "lr": 1e-2,
        "weight_decay": 0.0, "validation_fraction": 0.2, "patience": 3,
        "heldout_fraction": 0.25, "seed": 0, "confident_margin": 0.25,
        "upsample_low_scores": 2}


def texts(n: int) -> list[str]:
    words = "owl fox zebra judge boxing quick lazy dog wizard vexed daft hop".split()
    return [" ".join(words[(i * 5 + j) % len(words)] for j in range(4 + i % 9)) for i in range(n)]


def pointwise_labels(rater: str, n: int = 24) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n)], "text": texts(n),
                          "set_name": "RedPajamaWikipedia"})
    if rater == "dataman":
        for key in dataman.CRITERIA:
            frame[key] = rng.integers(1, 6, n)
        frame["domain"] = rng.choice(list("AHJO"), n)
    elif rater == "prrc":
        for dim in prrc.DIMENSIONS:
            frame[dim] = pd.array(rng.integers(0, 6, n), dtype="Int64")
        frame.loc[3, "reasoning"] = pd.NA  # a failed judgment: null for that head only
    elif rater == "fineweb_edu":
        frame["edu_score"] = rng.integers(0, 6, n)
    else:
        for criterion in wanjuan.CRITERIA:
            frame[criterion] = pd.array(rng.integers(0, 2, n), dtype="Int64")
    return frame


def pair_labels(n_pairs: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    pool = texts(20)
    rows = []
    for _ in range(n_pairs):
        a, b = rng.choice(20, 2, replace=False)
        for criterion in ("writing_style", "facts_and_trivia", "educational_value",
                          "required_expertise"):
            rows.append({"criterion": criterion, "doc_a": f"d{a}", "doc_b": f"d{b}",
                         "text_a": pool[a], "text_b": pool[b],
                         "p_b_better": float(rng.choice([0.05, 0.4, 0.95])), "n_orders": 2})
    return pd.DataFrame(rows)


def train(tmp_path, rater: str, tokenizer_dir, labels: pd.DataFrame, **overrides) -> dict:
    path = tmp_path / f"{rater}.parquet"
    labels.to_parquet(path)
    return train_head_rater(rater, path, TINY | overrides, tmp_path / rater,
                            tokenizer_dir=tokenizer_dir, judge_notes=["simulated"],
                            config_hash="abc")


@pytest.mark.parametrize("rater", ["dataman", "prrc", "fineweb_edu", "wanjuan"])
def test_pointwise_rater_roundtrip_scores_identically(tmp_path, tiny_tokenizer_dir, rater):
    record = train(tmp_path, rater, tiny_tokenizer_dir, pointwise_labels(rater))
    loaded = load_rater(tmp_path / rater)
    probe = texts(7)[::-1] + [""]
    first, second = loaded.score(probe), load_rater(tmp_path / rater).score(probe)
    assert list(first) == loaded.columns + ["missing_reason"]
    for column in loaded.columns:
        assert pd.Series(first[column]).equals(pd.Series(second[column])), column
    assert first["missing_reason"][-1] == NO_TOKENS
    assert all(reason is None for reason in first["missing_reason"][:-1])
    card = json.loads((tmp_path / rater / "rater_card.json").read_text())
    assert card["config_hash"] == "abc" and card["judge"]["simulated"]
    assert card["training"]["documents"] == 24 and card["training"]["heldout_documents"] == 6
    assert card["backbone"]["window"] == 16 and card["backbone"]["saved"]
    assert record["metrics"] == card["metrics"]


def test_columns_follow_the_sidecar_families(tmp_path, tiny_tokenizer_dir):
    train(tmp_path, "dataman", tiny_tokenizer_dir, pointwise_labels("dataman"))
    train(tmp_path, "prrc", tiny_tokenizer_dir, pointwise_labels("prrc"))
    scored = load_rater(tmp_path / "dataman").score(texts(3))
    assert load_rater(tmp_path / "dataman").columns == [*dataman.QUALITY_COLUMNS,
                                                        "overall_score", "domain", "status"]
    assert set(scored["overall_score"].tolist()) <= {1, 2, 3, 4, 5}
    assert set(scored["domain"]) <= set(dataman.DOMAINS)
    assert list(scored["status"]) == ["ok"] * 3
    prrc_scores = load_rater(tmp_path / "prrc").score(texts(3))
    probabilities = np.stack([prrc_scores[f"readability_p{k}"] for k in range(6)], axis=1)
    assert np.allclose(probabilities.sum(axis=1), 1.0)
    assert (probabilities.argmax(axis=1) == np.asarray(prrc_scores["readability"])).all()


def test_prrc_null_targets_are_skipped_and_counted(tmp_path, tiny_tokenizer_dir):
    train(tmp_path, "prrc", tiny_tokenizer_dir, pointwise_labels("prrc"))
    card = json.loads((tmp_path / "prrc" / "rater_card.json").read_text())
    assert card["training"]["missing_targets"]["reasoning"] == 1
    assert card["training"]["missing_targets"]["readability"] == 0


def test_dataman_upsampling_is_recorded(tmp_path, tiny_tokenizer_dir):
    labels = pointwise_labels("dataman")
    train(tmp_path, "dataman", tiny_tokenizer_dir, labels)
    card = json.loads((tmp_path / "dataman" / "rater_card.json").read_text())
    from selectlab.raters.build import split_documents
    from selectlab.raters.train import split_validation

    train_docs, _ = split_documents(len(labels), 0.25, 0)
    fit, validation = split_validation(train_docs, train_docs, 0.2, 0)
    low = int((labels["overall_score"].to_numpy()[fit] < 3).sum())
    assert card["training"]["train_examples_upsampled"] == len(fit) + low
    assert card["training"]["validation_documents"] == len(validation) > 0


def test_qurater_roundtrip_and_card(tmp_path, tiny_tokenizer_dir):
    record = train(tmp_path, "qurater", tiny_tokenizer_dir, pair_labels())
    rater = load_rater(tmp_path / "qurater")
    assert rater.columns == ["writing_style", "facts_and_trivia", "educational_value",
                             "required_expertise"]
    probe = texts(5)
    again = load_rater(tmp_path / "qurater").score(probe)
    for column in rater.columns:
        assert np.array_equal(rater.score(probe)[column], again[column])
    assert set(record["metrics"]) == set(rater.columns)
    training = record["training"]
    assert training["train_rows_confident"] < training["train_rows"]  # p = 0.4 pairs dropped


def test_frozen_public_backbone_is_named_not_copied(tmp_path):
    labels = pointwise_labels("fineweb_edu", 12)
    minilm = {"backbone": "minilm", "window": 32, "random_encoder": {}, "epochs": 2}
    train(tmp_path, "fineweb_edu", None, labels, **minilm)
    card = json.loads((tmp_path / "fineweb_edu" / "rater_card.json").read_text())
    assert not card["backbone"]["saved"] and card["backbone"]["label"] == "all-MiniLM-L6-v2"
    assert not (tmp_path / "fineweb_edu" / "model" / "backbone").exists()
    rater = load_rater(tmp_path / "fineweb_edu")
    assert rater.feature_key is not None
    features, has_tokens = rater.features(texts(2))
    assert np.array_equal(rater.score_features(features, has_tokens)["edu_score"],
                          rater.score(texts(2))["edu_score"])


def test_unknown_class_labels_are_an_error(tmp_path, tiny_tokenizer_dir):
    labels = pointwise_labels("prrc")
    labels.loc[0, "cleanliness"] = 9
    with pytest.raises(ValueError, match="cleanliness"):
        train(tmp_path, "prrc", tiny_tokenizer_dir, labels)


@pytest.fixture
def tiny_classifiers(tmp_path, tiny_tokenizer_dir):
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    paths = {}
    for name, labels in (("edu", 1), ("ads", 2)):
        torch.manual_seed(0)
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1,
                            num_attention_heads=2, intermediate_size=32,
                            max_position_embeddings=64, num_labels=labels,
                            pad_token_id=tokenizer.pad_token_id)
        BertForSequenceClassification(config).save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
        paths[name] = str(tmp_path / name)
    return paths


def test_public_classifiers_are_wrapped_into_the_same_loader(tmp_path, tiny_classifiers):
    params = {"window": 16, "forward_batch_size": 4,
              "pretrained": {"advertisement": {"path": tiny_classifiers["ads"]},
                             "fluency": {"path": tiny_classifiers["ads"], "positive_index": 0}}}
    record = wrap_pretrained("wanjuan", params, tmp_path / "wanjuan", config_hash="h")
    assert record["kind"] == "pretrained_classifier" and record["metrics"] == {}
    rater = load_rater(tmp_path / "wanjuan")
    scored = rater.score(texts(3) + [""])
    assert rater.columns == ["advertisement", "fluency"]
    # the two columns read the same model, one the probability of class 1, one of class 0
    assert np.allclose(scored["advertisement"][:3] + scored["fluency"][:3], 1.0)
    assert np.isnan(scored["advertisement"][3]) and scored["missing_reason"][3] == NO_TOKENS
    edu = wrap_pretrained("fineweb_edu", {"window": 16, "forward_batch_size": 4,
                                          "pretrained": {"edu_score": {
                                              "path": tiny_classifiers["edu"]}}},
                          tmp_path / "edu")
    assert edu["rater"] == "fineweb_edu"
    assert np.isfinite(load_rater(tmp_path / "edu").score(texts(2))["edu_score"]).all()


def test_wrapping_checks_the_classifier_columns_and_paths(tmp_path, tiny_classifiers):
    with pytest.raises(ValueError, match="advertisement"):
        wrap_pretrained("wanjuan", {"window": 16, "pretrained": {
            "advertisement": {"path": tiny_classifiers["ads"]}}}, tmp_path / "w")
    with pytest.raises(FileNotFoundError):
        wrap_pretrained("fineweb_edu", {"window": 16, "pretrained": {
            "edu_score": {"path": str(tmp_path / "nowhere")}}}, tmp_path / "f")


def test_a_directory_without_a_card_is_not_a_rater(tmp_path):
    with pytest.raises(FileNotFoundError, match="rater_card.json"):
        load_rater(tmp_path)
