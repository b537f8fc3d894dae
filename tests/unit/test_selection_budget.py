"""The memory-lean budgeted take equals the plain global progress merge; up-sampling."""

from __future__ import annotations

import numpy as np
import pytest

from selectlab.selection.budget import budgeted_take, stratum_outcomes, stratum_quotas
from selectlab.selection.upsample import upsampled_take


def reference_take(stratum, n_tokens, priority, budget, quotas, tiebreak=None):
    """The straightforward definition: sort everything by (stratum, priority), compute each
    document's progress (its token midpoint over its stratum's quota), merge all of them by
    progress, cut at the budget."""
    eligible = np.flatnonzero(np.isfinite(priority))
    keys = ([] if tiebreak is None else [-tiebreak[eligible]])
    order = eligible[np.lexsort(keys + [-priority[eligible], stratum[eligible]])]
    tokens = n_tokens[order].astype(np.float64)
    codes = stratum[order]
    running = np.cumsum(tokens)
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    before = np.repeat(running[starts] - tokens[starts], np.diff(np.r_[starts, len(order)]))
    progress = (running - before - tokens / 2) / np.maximum(quotas[codes], 1e-9)
    merged = order[np.argsort(progress, kind="stable")]
    total = np.cumsum(n_tokens[merged])
    return merged[: int(np.searchsorted(total, budget, side="left")) + 1]


def random_pool(seed: int, n: int = 4000, strata: int = 5):
    rng = np.random.default_rng(seed)
    stratum = rng.choice(strata, size=n, p=np.arange(1, strata + 1) / np.arange(1, strata + 1)
                         .sum())
    n_tokens = rng.integers(0, 900, size=n)  # zero-token documents included
    # Coarse priorities: many ties, resolved by the tiebreak or by pool order.
    priority = rng.integers(0, 6, size=n).astype(np.float32)
    priority[rng.random(n) < 0.1] = -np.inf
    return stratum, n_tokens, priority, rng.random(n).astype(np.float32)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fraction", [0.01, 0.3, 0.8])
@pytest.mark.parametrize("use_tiebreak", [False, True])
def test_lean_take_equals_the_global_merge(seed, fraction, use_tiebreak):
    stratum, n_tokens, priority, tiebreak = random_pool(seed)
    budget = max(1, int(n_tokens.sum() * fraction))
    quotas = stratum_quotas(stratum, n_tokens, 5, budget)
    tb = tiebreak if use_tiebreak else None
    lean = budgeted_take(stratum, n_tokens, priority, budget, quotas, tb)
    plain = reference_take(stratum, n_tokens, priority, budget, quotas, tb)
    assert lean.tolist() == plain.tolist()


def test_budget_beyond_the_eligible_tokens_takes_every_eligible_document():
    stratum, n_tokens, priority, _ = random_pool(3)
    budget = int(n_tokens.sum())
    chosen = budgeted_take(stratum, n_tokens, priority, budget,
                           stratum_quotas(stratum, n_tokens, 5, budget))
    assert sorted(chosen.tolist()) == np.flatnonzero(np.isfinite(priority)).tolist()


def test_short_strata_are_reported_against_eligible_tokens():
    stratum = np.array([0, 0, 0, 1, 1, 1])
    n_tokens = np.full(6, 10)
    priority = np.array([3.0, 2.0, 1.0, -np.inf, -np.inf, 5.0])
    quotas = stratum_quotas(stratum, n_tokens, 2, 40)
    chosen = budgeted_take(stratum, n_tokens, priority, 40, quotas)
    outcomes = stratum_outcomes(stratum, n_tokens, chosen, quotas, ["a", "b"],
                                np.isfinite(priority))
    assert [o.eligible_tokens for o in outcomes] == [30, 10]
    assert [o.short for o in outcomes] == [False, True]


def test_upsampling_repeats_a_short_stratum_in_priority_order_and_keeps_shares():
    rng = np.random.default_rng(4)
    stratum = np.repeat([0, 1], [300, 300])
    n_tokens = rng.integers(10, 50, size=600)
    priority = rng.random(600).astype(np.float32)
    priority[300:][priority[300:] < 0.9] = -np.inf  # stratum 1 keeps ~30 documents
    budget = int(n_tokens.sum() * 0.5)
    quotas = stratum_quotas(stratum, n_tokens, 2, budget)
    chosen, passes = upsampled_take(stratum, n_tokens, priority, budget, quotas)
    total = n_tokens[chosen].sum()
    assert budget <= total < budget + n_tokens.max()
    assert set(passes) == {1} and passes[1] >= 2
    taken = np.bincount(stratum[chosen], weights=n_tokens[chosen], minlength=2)
    assert np.all(np.abs(taken - quotas * total / budget) <= n_tokens.max())
    in_short = chosen[stratum[chosen] == 1]
    eligible = np.flatnonzero(np.isfinite(priority) & (stratum == 1))
    ranked = eligible[np.argsort(-priority[eligible])]
    # The stratum is walked in priority order, then again from its top: pass after pass.
    walk = in_short.tolist()
    cycle = ranked.tolist() * passes[1]
    assert walk == cycle[: len(walk)]
    assert len(walk) > len(ranked)
    assert not np.isin(chosen, np.flatnonzero(~np.isfinite(priority))).any()


def test_upsampling_without_short_strata_is_the_plain_take():
    stratum, n_tokens, priority, tiebreak = random_pool(1)
    priority = np.where(np.isfinite(priority), priority, 0.0).astype(np.float32)
    budget = int(n_tokens.sum() * 0.2)
    quotas = stratum_quotas(stratum, n_tokens, 5, budget)
    chosen, passes = upsampled_take(stratum, n_tokens, priority, budget, quotas, tiebreak)
    assert passes == {}
    assert chosen.tolist() == budgeted_take(stratum, n_tokens, priority, budget, quotas,
                                            tiebreak).tolist()


@pytest.mark.parametrize("seed", range(5))
def test_every_stratum_is_within_half_a_document_of_the_common_progress_level(seed):
    rng = np.random.default_rng(seed)
    stratum = rng.choice(4, size=3000, p=[0.5, 0.3, 0.15, 0.05])
    n_tokens = rng.integers(1, 3000, size=3000)
    priority = rng.random(3000).astype(np.float32)
    budget = int(n_tokens.sum() * 0.1)
    quotas = stratum_quotas(stratum, n_tokens, 4, budget)
    chosen = budgeted_take(stratum, n_tokens, priority, budget, quotas)
    last = chosen[-1]
    before_last = n_tokens[chosen[stratum[chosen] == stratum[last]]].sum() - n_tokens[last] / 2
    level = before_last / quotas[stratum[last]]  # the progress of the last document taken
    for s in range(4):
        taken = n_tokens[chosen[stratum[chosen] == s]].sum()
        assert abs(taken - level * quotas[s]) <= n_tokens[stratum == s].max() / 2 + 1e-6
