"""QuRating Table 6's other QuRater trainings (appendix B.2): `raters.qurater.setups` resolves to
`qurater_<setup>` jobs; separate models train one complete rater per criterion on the multi-task
rater's held-out pairs; from scratch keeps the backbone's architecture with random weights."""

from __future__ import annotations

import argparse
import copy
import json

import numpy as np
import pytest
import torch

from selectlab.commands.raters import train as train_command
from selectlab.config import load_config
from selectlab.raters import resolve
from selectlab.raters.build import train_head_rater
from selectlab.raters.load import load_rater
from tests.conftest import REPO
from tests.unit.test_raters_io import TINY, pair_labels, texts

EMBEDDED = load_config(REPO / "config" / "config.yaml")
CRITERIA = ["writing_style", "facts_and_trivia", "educational_value", "required_expertise"]
SCRATCH = {"train_backbone": True, "epochs": 2, "lr": 1.0e-4}


def with_setups(setups: dict, **qurater) -> dict:
    config = copy.deepcopy(EMBEDDED)
    config["raters"]["qurater"] |= qurater | {"setups": setups}
    return config


def test_setups_train_as_their_own_raters_over_the_qurater_entry():
    config = with_setups({"separate_pretrained": None, "multitask_scratch": SCRATCH,
                          "separate_scratch": SCRATCH | {"lr": 3.0e-4}})
    names = resolve.configured_raters(config)
    assert names[:4] == ["qurater", "qurater_separate_pretrained", "qurater_multitask_scratch",
                         "qurater_separate_scratch"]
    plain = resolve.rater_params(EMBEDDED, "qurater")
    # Listing setups changes nothing the annotating QuRater learns (no rerun).
    assert resolve.rater_params(config, "qurater") == plain
    separate = resolve.rater_params(config, "qurater_separate_pretrained")
    assert separate == plain | {"separate": True}
    scratch = resolve.rater_params(config, "qurater_separate_scratch")
    assert scratch == plain | SCRATCH | {"lr": 3.0e-4, "separate": True, "from_scratch": True}
    assert resolve.labels_input(config, "r", "qurater_multitask_scratch") == [
        "r/judgments/qurating/labels.parquet"]
    assert not resolve.needs_tokenizer(config, "qurater_multitask_scratch")  # MiniLM's own
    assert resolve.qurater_setup(scratch) == "separate_scratch"


def test_paper_config_trains_every_table6_setup_with_its_own_job_shape():
    paper = load_config(REPO / "config" / "paper.yaml")
    assert [n for n in resolve.configured_raters(paper) if n.startswith("qurater")] == [
        "qurater", "qurater_separate_pretrained", "qurater_multitask_scratch",
        "qurater_separate_scratch"]
    shape = resolve.resources(paper, "qurater_separate_scratch")
    # four 1.3B models in one job: twice the multi-task job's time, its GPU and memory
    assert shape["runtime"] == 2 * resolve.resources(paper, "qurater")["runtime"]
    assert (shape["gpu"], shape["mem_mb"]) == (1, 128000)
    assert resolve.rater_params(paper, "qurater_multitask_scratch")["from_scratch"]


@pytest.mark.parametrize(("setups", "qurater", "message"), [
    ({"multitask_scratch": {}}, {}, "needs train_backbone: true"),
    ({"separate_pretrained": {}}, {"backbone": "random_encoder"}, "other than random_encoder"),
    ({"multitask_pretrained": {}}, {}, "leave it out of `setups`"),
    ({"multitask_scratch": SCRATCH}, {"backbone": "random_encoder"}, "leave it out"),
])
def test_setups_that_cannot_be_what_their_name_says_are_errors(setups, qurater, message):
    with pytest.raises(ValueError, match=message):
        for name in resolve.configured_raters(with_setups(setups, **qurater)):
            resolve.rater_params(with_setups(setups, **qurater), name)


def command_args(tmp_path, rater: str, params: dict, tokenizer=None) -> argparse.Namespace:
    labels = tmp_path / "judgments" / "qurating" / "labels.parquet"
    labels.parent.mkdir(parents=True, exist_ok=True)
    pair_labels(60).to_parquet(labels)
    out = tmp_path / "raters" / rater
    return argparse.Namespace(rater=rater, params=params, throughput={}, labels=str(labels),
                              tokenizer=tokenizer, judge_notes=["simulated"], gpus=0, threads=1,
                              out=str(out), metrics=str(out / "metrics.json"))


def test_separate_models_each_train_one_criterion_on_the_multitask_raters_pairs(
        tmp_path, tiny_tokenizer_dir):
    multitask = command_args(tmp_path, "qurater", TINY)
    train_command(multitask)
    separate = command_args(tmp_path, "qurater_separate_pretrained", TINY | {"separate": True})
    train_command(separate)
    joint = json.loads((tmp_path / "raters/qurater/metrics.json").read_text())
    record = json.loads((tmp_path / "raters/qurater_separate_pretrained/metrics.json").read_text())
    assert (record["kind"], record["name"]) == ("separate", "qurater_separate_pretrained")
    assert sorted(record["metrics"]) == sorted(CRITERIA)
    for criterion in CRITERIA:
        # the same held-out pairs, confident or not, for both setups
        for count in ("pairs", "pairs_all", "pairs_confidence80"):
            assert record["metrics"][criterion][count] == joint["metrics"][criterion][count]
        part = load_rater(tmp_path / "raters/qurater_separate_pretrained/model" / criterion)
        assert part.columns == [criterion]
        assert part.card["name"] == f"qurater_separate_pretrained/{criterion}"
        assert record["training"][criterion]["heldout_rows"] == (
            joint["training"]["heldout_rows"] / 4)
    parts = [json.loads((tmp_path / "raters/qurater_separate_pretrained/model" / c /
                         "rater_card.json").read_text())["cost"] for c in CRITERIA]
    assert record["cost"]["flops"] == pytest.approx(sum(p["flops"] for p in parts))
    assert record["cost"]["flops"] == pytest.approx(4 * joint["cost"]["flops"], rel=0.01)
    with pytest.raises(ValueError, match="separate models, one per criterion"):
        load_rater(tmp_path / "raters/qurater_separate_pretrained")


def test_from_scratch_keeps_the_architecture_and_learns_its_own_weights(tmp_path):
    params = TINY | {"backbone": "minilm", "window": 32, "random_encoder": {},
                     "train_backbone": True, "epochs": 1, "from_scratch": True,
                     "criteria": ["writing_style"]}
    path = tmp_path / "labels.parquet"
    pair_labels(20).to_parquet(path)
    train_head_rater("qurater", path, params, tmp_path / "scratch", config_hash="s")
    train_head_rater("qurater", path, params | {"from_scratch": False}, tmp_path / "pretrained",
                     config_hash="p")
    scratch = load_rater(tmp_path / "scratch")
    pretrained = load_rater(tmp_path / "pretrained")
    assert scratch.card["backbone"]["from_scratch"] and scratch.card["backbone"]["saved"]
    assert "random weights, seed 0" in scratch.card["backbone"]["label"]
    assert scratch.backbone.model.config.num_hidden_layers == (
        pretrained.backbone.model.config.num_hidden_layers)
    pairs = zip(scratch.backbone.model.named_parameters(),
                pretrained.backbone.model.named_parameters(), strict=True)
    # No tensor that reads a text is the pre-trained one (the unused pooler is zero in both).
    same = [n for (n, a), (_, b) in pairs if not n.startswith("pooler") and torch.equal(a, b)]
    assert same == []
    probe = texts(4)
    again = load_rater(tmp_path / "scratch").score(probe)
    assert np.array_equal(scratch.score(probe)["writing_style"], again["writing_style"])
