"""Budgeted proportional selection: budget within one document, shares kept, priorities honoured."""

from __future__ import annotations

import numpy as np
import pytest

from selectlab.selection.budget import budgeted_take, stratum_outcomes, stratum_quotas


def make_pool(seed: int = 0, n: int = 3000):
    rng = np.random.default_rng(seed)
    stratum = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    n_tokens = rng.integers(20, 2000, size=n) * np.array([1, 3, 1])[stratum]
    return stratum, n_tokens


@pytest.mark.parametrize("seed", range(5))
def test_budget_met_within_one_document_and_shares_kept(seed):
    stratum, n_tokens = make_pool(seed)
    budget = int(n_tokens.sum() * 0.2)
    quotas = stratum_quotas(stratum, n_tokens, 3, budget)
    chosen = budgeted_take(stratum, n_tokens, np.random.default_rng(seed).random(len(stratum)),
                           budget, quotas)
    total = n_tokens[chosen].sum()
    assert budget <= total < budget + n_tokens[chosen[-1]] + 1
    assert len(set(chosen.tolist())) == len(chosen)
    pool_share = np.bincount(stratum, weights=n_tokens) / n_tokens.sum()
    chosen_tokens = np.bincount(stratum[chosen], weights=n_tokens[chosen], minlength=3)
    # Each stratum is within one (of its own) largest document of its proportional quota.
    for s in range(3):
        assert abs(chosen_tokens[s] - pool_share[s] * total) <= n_tokens[stratum == s].max()


def test_highest_priority_documents_are_taken_first_in_each_stratum():
    stratum, n_tokens = make_pool(1)
    priority = np.random.default_rng(3).random(len(stratum))
    budget = int(n_tokens.sum() * 0.1)
    chosen = budgeted_take(stratum, n_tokens, priority, budget,
                           stratum_quotas(stratum, n_tokens, 3, budget))
    for s in range(3):
        in_s = np.flatnonzero(stratum == s)
        taken = np.intersect1d(chosen, in_s)
        left = np.setdiff1d(in_s, taken)
        assert priority[taken].min() >= priority[left].max()


def test_excluded_documents_are_never_chosen_and_short_strata_reported():
    stratum = np.array([0, 0, 0, 1, 1, 1])
    n_tokens = np.array([10, 10, 10, 10, 10, 10])
    priority = np.array([3.0, 2.0, 1.0, -np.inf, -np.inf, 5.0])
    quotas = stratum_quotas(stratum, n_tokens, 2, 40)
    chosen = budgeted_take(stratum, n_tokens, priority, 40, quotas)
    assert 3 not in chosen and 4 not in chosen
    # Stratum 1 has only one eligible document; stratum 0 makes up the difference.
    assert sorted(chosen.tolist()) == [0, 1, 2, 5]
    outcomes = stratum_outcomes(stratum, n_tokens, chosen, quotas, ["a", "b"])
    assert [o.selected_tokens for o in outcomes] == [30, 10]
    assert not any(o.short for o in outcomes)  # pools hold 30 tokens each, quota is 20


def test_budget_larger_than_pool_takes_everything():
    stratum = np.array([0, 1, 1])
    n_tokens = np.array([5, 5, 5])
    chosen = budgeted_take(stratum, n_tokens, np.ones(3), 100,
                           stratum_quotas(stratum, n_tokens, 2, 100))
    assert sorted(chosen.tolist()) == [0, 1, 2]
    with pytest.raises(ValueError, match="budget must be positive"):
        budgeted_take(stratum, n_tokens, np.ones(3), 0, np.ones(2))
