"""The data-influence model learns influence from text, is checked on held-out probes, loads as
a rater, and its family scores a shard with earlier stages' documents left out."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from selectlab.mates.influence import fit_influence_model
from selectlab.raters import load_rater

PARAMS = {"backbone": "minilm", "train_backbone": False, "window": 128, "pool_layers": [4],
          "dtype": "bfloat16", "forward_batch_size": 32, "batch_size": 16, "epochs": 100,
          "lr": 3e-3, "weight_decay": 1.0, "validation_fraction": 0.1, "patience": 20,
          "seed": 3, "heldout_fraction": 0.25, "unit_tokens": 64}
CLEAN = ["The committee published its annual report on regional water quality.",
         "A short history of the printing press and its effect on literacy.",
         "Photosynthesis converts light energy into chemical energy in plants.",
         "The orchestra rehearsed the symphony twice before the evening concert."]
NOISY = ["BUY NOW!!! cheap pills click here $$$ best offer best offer",
         "x9#k l0r3m zz qq ##@@ 12 4 $ %% ^^ &&& *** ((( )))",
         "click click click subscribe subscribe win win win free free",
         "asdf qwer zxcv uiop hjkl asdf qwer zxcv uiop hjkl"]


@pytest.fixture(scope="module")
def probes(tmp_path_factory) -> list:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(64):
        helpful = i % 2 == 0
        text = (CLEAN if helpful else NOISY)[i % 4] + f" Item {i}."
        rows.append({"shard": "shard_00000", "row": i, "id": f"d{i}", "set_name": "x",
                     "unit_tokens": 20, "text": text,
                     "influence": (0.01 if helpful else -0.01) + rng.normal(0, 0.004)})
    frame = pd.DataFrame(rows)
    directory = tmp_path_factory.mktemp("probes")
    paths = [directory / f"part{p}.parquet" for p in range(2)]
    for part, path in enumerate(paths):
        frame.iloc[part::2].to_parquet(path)
    return paths


def test_the_influence_model_predicts_held_out_probes_and_loads_as_a_rater(probes, tmp_path):
    record = fit_influence_model(probes, PARAMS, tmp_path / "model")
    heldout = record["metrics"]["heldout"]
    assert heldout["n"] == 16 and heldout["spearman"] > 0.6
    assert record["training"]["train_probes"] == 48
    card = json.loads((tmp_path / "model" / "rater_card.json").read_text())
    assert card["rater"] == "mates" and card["columns"] == ["influence"]
    assert card["cost"]["flops"] > 0 and card["cost"]["kind"] == "inference"
    rater = load_rater(tmp_path / "model")
    scores = rater.score([CLEAN[0], NOISY[0], ""])
    assert scores["influence"][0] > scores["influence"][1]
    assert np.isnan(scores["influence"][2]) and scores["missing_reason"][2]


def test_overlapping_probe_parts_are_an_error(probes, tmp_path):
    with pytest.raises(ValueError, match="probed twice"):
        fit_influence_model([probes[0], probes[0]], PARAMS, tmp_path / "model")


def test_the_family_scores_units_and_leaves_earlier_stages_out(probes, tmp_path,
                                                              tiny_tokenizer_dir):
    from selectlab.annotate.registry import build_annotator
    from selectlab.shards import Document

    fit_influence_model(probes, PARAMS, tmp_path / "model")
    earlier = tmp_path / "stage1.parquet"
    pd.DataFrame({"id": ["b"]}).to_parquet(earlier)
    # Units long enough to hold each whole text (the run tokenizer here is the fixture's tiny one).
    params = {"kind": "mates_influence", "variant": "mates", "stage": 2, "unit_tokens": 4096,
              "forward_batch_size": 8}
    fitted = [str(tmp_path / "model" / "rater_card.json"), str(tmp_path / "model" / "model"),
              str(tiny_tokenizer_dir), str(earlier)]
    annotator = build_annotator(params, fitted)
    annotator.setup()
    docs = [Document("a", CLEAN[0] + " Item 0.", "x"), Document("b", CLEAN[2], "x"),
            Document("c", NOISY[1] + " Item 1.", "x")]
    columns = annotator.annotate_batch(docs)
    assert columns["influence"][1] is None
    assert columns["missing_reason"][1] == "trained on in an earlier MATES stage"
    assert columns["influence"][0] > columns["influence"][2]
    # FLOPs count the layers that run: MiniLM up to the pooled layer 4.
    assert annotator.input_tokens > 0 and annotator.model_shape().layers == 4
