"""QuRater: Bradley-Terry loss, confident pairs, pair-level split, learning a known ranking."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from selectlab.raters import qurater
from selectlab.raters.heads import RaterHeads
from selectlab.raters.spec import heads
from selectlab.raters.train import TrainSettings, fit_frozen, split_validation


def test_bradley_terry_loss_is_bce_of_the_score_gap():
    loss = qurater.bradley_terry_loss(torch.tensor([0.0]), torch.tensor([1.0]),
                                      torch.tensor([0.8]))
    sigma = 1 / (1 + math.exp(-1.0))
    assert float(loss) == pytest.approx(-(0.8 * math.log(sigma) + 0.2 * math.log(1 - sigma)))


def test_swapping_sides_and_label_leaves_the_loss_unchanged():
    a, b = torch.tensor([0.3, -1.2, 2.0]), torch.tensor([1.1, 0.4, -0.5])
    p = torch.tensor([0.9, 0.2, 0.65])
    forward = qurater.bradley_terry_loss(a, b, p)
    swapped = qurater.bradley_terry_loss(b, a, 1 - p)
    assert float(forward) == pytest.approx(float(swapped), abs=1e-6)


def test_confident_pairs_are_those_far_enough_from_one_half():
    p = np.array([0.5, 0.74, 0.75, 0.2, 1.0])
    assert qurater.confident(p, 0.25).tolist() == [False, False, True, True, True]
    assert qurater.confident(p, 0.0).all()


def labels_table() -> pd.DataFrame:
    rows = []
    for pair, (a, b) in enumerate([("d1", "d2"), ("d2", "d3"), ("d1", "d3"), ("d3", "d4")]):
        for criterion in ("writing_style", "educational_value"):
            rows.append({"criterion": criterion, "doc_a": a, "doc_b": b, "text_a": f"text {a}",
                         "text_b": f"text {b}", "p_b_better": 0.9 if pair % 2 else 0.1,
                         "n_orders": 2})
    rows[-1]["p_b_better"] = None
    return pd.DataFrame(rows)


def test_pair_data_indexes_each_text_once_and_counts_what_it_drops():
    data, dropped = qurater.pair_data(labels_table(), ("writing_style", "educational_value"))
    assert len(data.texts) == 4
    assert len(data) == 7 and dropped["null_probability"] == 1
    assert data.texts[data.text_a[0]] == "text d1" and data.texts[data.text_b[0]] == "text d2"
    with pytest.raises(ValueError, match="lack columns"):
        qurater.pair_data(labels_table().drop(columns="text_a"), ("writing_style",))


def test_split_keeps_every_criterion_of_a_pair_on_one_side():
    data, _ = qurater.pair_data(labels_table(), ("writing_style", "educational_value"))
    train, held = qurater.split_pairs(data, 0.5, seed=3)
    assert set(data.pair_key[train]).isdisjoint(data.pair_key[held])
    assert len(train) + len(held) == len(data) and len(held) > 0


def synthetic_pairs(n_texts: int, n_pairs: int, seed: int):
    """Texts with a hidden quality (the first feature); the judge prefers the better text."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_texts, 8)).astype(np.float32)
    quality = features[:, 0]
    rows = []
    for _ in range(n_pairs):
        a, b = rng.choice(n_texts, size=2, replace=False)
        p = 1 / (1 + math.exp(-(quality[b] - quality[a]) * 3))
        rows.append({"criterion": "educational_value", "doc_a": f"d{a}", "doc_b": f"d{b}",
                     "text_a": f"t{a}", "text_b": f"t{b}", "p_b_better": p})
    labels = pd.DataFrame(rows)
    data, _ = qurater.pair_data(labels, ("educational_value",))
    order = [int(t[1:]) for t in data.texts]
    return data, torch.tensor(features[order])


def test_heads_learn_a_ranking_that_generalises_to_held_out_pairs():
    data, features = synthetic_pairs(120, 600, seed=0)
    train, held = qurater.split_pairs(data, 0.2, seed=0)
    torch.manual_seed(0)
    module = RaterHeads(features.shape[1], heads("qurater", ("educational_value",)))
    sure = train[qurater.confident(data.p_b_better[train], 0.25)]
    objective = qurater.PairwiseObjective(data)
    fit, validation = split_validation(sure, objective.units_of(sure), 0.1, seed=0)
    fit_frozen(features, module, objective, fit, validation,
               TrainSettings(epochs=200, lr=0.05, batch_size=64, patience=20))
    with torch.no_grad():
        scores = {k: v.numpy() for k, v in module(features).items()}
    result = qurater.evaluate(scores, data, held, margin=0.25)["educational_value"]
    assert result["pairs"] > 20
    assert result["pairwise_accuracy"] >= 0.9
    assert result["pairwise_accuracy_all"] >= result["pairwise_accuracy"] - 0.2
