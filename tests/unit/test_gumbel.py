"""Gumbel top-k is sequential sampling without replacement with p ~ exp(r / tau)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from selectlab.selection.gumbel import gumbel_keys, gumbel_noise, gumbel_topk, tempered_logits

RATINGS = np.array([1.2, 0.4, 0.0, -0.3, -1.5], dtype=np.float32)


def sequence_probability(weights: np.ndarray, sequence: tuple[int, ...]) -> float:
    """Probability that sequential draws without replacement yield exactly `sequence`."""
    left = weights.sum()
    probability = 1.0
    for item in sequence:
        probability *= weights[item] / left
        left -= weights[item]
    return probability


def exact_sequence_probabilities(weights: np.ndarray, k: int) -> dict[tuple[int, ...], float]:
    return {seq: sequence_probability(weights, seq)
            for seq in itertools.permutations(range(len(weights)), k)}


@pytest.mark.parametrize("tau", [0.5, 1.0, 2.0])
def test_ordered_draws_match_sequential_sampling_by_chi_square(tau):
    weights = np.exp(RATINGS.astype(np.float64) / tau)
    k, trials = 2, 20_000
    expected = exact_sequence_probabilities(weights, k)
    counts = dict.fromkeys(expected, 0)
    rng = np.random.default_rng(11)
    logits = tempered_logits(RATINGS, tau)
    for _ in range(trials):
        counts[tuple(gumbel_topk(logits, k, rng).tolist())] += 1
    sequences = list(expected)
    observed = np.array([counts[s] for s in sequences])
    # 20 ordered pairs, multinomial under the null: reject only at p < 0.001.
    result = chisquare(observed, trials * np.array([expected[s] for s in sequences]))
    assert result.pvalue > 1e-3, result


def test_inclusion_frequencies_match_exact_probabilities_within_four_sigma():
    tau, k, trials = 1.0, 3, 20_000
    weights = np.exp(RATINGS.astype(np.float64) / tau)
    inclusion = np.zeros(len(RATINGS))
    for sequence, probability in exact_sequence_probabilities(weights, k).items():
        inclusion[list(sequence)] += probability
    rng = np.random.default_rng(5)
    logits = tempered_logits(RATINGS, tau)
    hits = np.zeros(len(RATINGS))
    for _ in range(trials):
        hits[gumbel_topk(logits, k, rng)] += 1
    frequency = hits / trials
    sigma = np.sqrt(inclusion * (1 - inclusion) / trials)
    assert np.all(np.abs(frequency - inclusion) <= 4 * sigma + 1e-12), (frequency, inclusion)
    assert np.isclose(inclusion.sum(), k)


def test_small_temperature_is_exactly_top_k():
    ratings = np.random.default_rng(0).permutation(np.linspace(-3, 3, 200)).astype(np.float32)
    # Gaps of 0.03 / tau = 3e4 logits, while Gumbel noise stays within O(10): no reordering.
    for seed in range(20):
        drawn = gumbel_topk(tempered_logits(ratings, 1e-6), 25, np.random.default_rng(seed))
        assert drawn.tolist() == np.argsort(-ratings)[:25].tolist()


def test_excluded_items_are_never_drawn_and_keys_are_float32():
    logits = np.array([0.0, -np.inf, 1.0, -np.inf], dtype=np.float32)
    keys = gumbel_keys(logits, np.random.default_rng(1))
    assert keys.dtype == np.float32
    assert np.isneginf(keys[[1, 3]]).all() and np.isfinite(keys[[0, 2]]).all()
    assert sorted(gumbel_topk(logits, 4, np.random.default_rng(2)).tolist()) == [0, 2]
    assert np.isfinite(gumbel_noise(1_000_000, np.random.default_rng(3))).all()


def test_temperature_must_be_positive_for_sampling():
    with pytest.raises(ValueError, match="positive"):
        tempered_logits(RATINGS, 0.0)
