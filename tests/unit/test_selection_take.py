"""The streaming take equals the in-memory budgeted take, whatever the memory it is allowed."""

from __future__ import annotations

import numpy as np
import pytest

from selectlab.selection.budget import budgeted_take, stratum_quotas
from selectlab.selection.keys import order_key
from selectlab.selection.store import UnitStore
from selectlab.selection.take import Limits, streaming_take
from selectlab.selection.upsample import upsampled_take


def random_pool(seed: int, n: int = 6000, strata: int = 5, levels: int | None = 6):
    """Priorities with many ties (or none), zero-token documents, ineligible documents."""
    rng = np.random.default_rng(seed)
    stratum = rng.choice(strata, size=n, p=np.arange(1, strata + 1) / np.arange(1, strata + 1)
                         .sum())
    n_tokens = rng.integers(0, 900, size=n)
    priority = (rng.integers(0, levels, size=n) if levels else rng.normal(size=n)) \
        .astype(np.float32)
    priority[rng.random(n) < 0.1] = -np.inf
    priority[rng.random(n) < 0.02] = np.nan
    return stratum, n_tokens, priority, rng.random(n).astype(np.float32)


def stored(stratum, n_tokens, priority, tiebreak, chunk_rows, spill, tmp_path):
    store = UnitStore(chunk_rows, spill=spill, spill_dir=tmp_path)
    edges = np.r_[0, np.cumsum(chunk_rows)]

    def chunks(values):
        return (values[a:b] for a, b in zip(edges, edges[1:], strict=False))

    store.put("stratum", chunks(stratum.astype(np.uint8)))
    store.put("n_tokens", chunks(n_tokens.astype(np.uint16)))
    store.put("priority", chunks(priority))
    if tiebreak is not None:
        store.put("tiebreak", chunks(tiebreak))
    return store


CHUNKS = [1000, 0, 2500, 7, 2493]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fraction", [0.01, 0.3, 0.95, 1.2])
@pytest.mark.parametrize("use_tiebreak", [False, True])
@pytest.mark.parametrize("levels", [6, None])
def test_streaming_take_is_the_in_memory_take(seed, fraction, use_tiebreak, levels, tmp_path):
    stratum, n_tokens, priority, tiebreak = random_pool(seed, levels=levels)
    tiebreak = tiebreak if use_tiebreak else None
    budget = max(1, int(n_tokens.sum() * fraction))
    quotas = stratum_quotas(stratum, n_tokens, 5, budget)
    expected = budgeted_take(stratum, n_tokens, priority, budget, quotas, tiebreak)
    eligible = int(np.isfinite(priority).sum())
    # From room for everything down to little more than the selection: 4-bit histograms then
    # need several refinement passes (ties resolve on tiebreak bits, then on positions).
    for units, bits, spill in ((eligible, 16, False), (len(expected) + 40, 4, True),
                               (len(expected) + 12, 2, False)):
        with stored(stratum, n_tokens, priority, tiebreak, CHUNKS, spill, tmp_path) as store:
            taken = streaming_take(store, "stratum", quotas, budget, Limits(units, bits),
                                   use_tiebreak)
        assert taken.chosen.tolist() == expected.tolist()
        assert taken.n_tokens.tolist() == n_tokens[expected].tolist()
        assert taken.stratum.tolist() == stratum[expected].tolist()
        assert taken.collected <= max(units, len(expected))


def test_a_small_ceiling_takes_several_passes_and_holds_little(tmp_path):
    stratum, n_tokens, priority, tiebreak = random_pool(7, n=20_000, levels=3)
    budget = int(n_tokens.sum() * 0.05)
    quotas = stratum_quotas(stratum, n_tokens, 5, budget)
    expected = budgeted_take(stratum, n_tokens, priority, budget, quotas, tiebreak)
    with stored(stratum, n_tokens, priority, tiebreak, [5000] * 4, True, tmp_path) as store:
        taken = streaming_take(store, "stratum", quotas, budget, Limits(len(expected) + 12, 3),
                               True)
    assert taken.chosen.tolist() == expected.tolist()
    # Three priority levels tie 1/3 of each stratum: the cut resolves on the tiebreak's bits.
    assert taken.walks >= 4 and taken.collected <= len(expected) + 12


def test_a_selection_beyond_the_ceiling_is_an_error(tmp_path):
    stratum, n_tokens, priority, tiebreak = random_pool(1)
    budget = int(n_tokens.sum() * 0.5)
    quotas = stratum_quotas(stratum, n_tokens, 5, budget)
    with stored(stratum, n_tokens, priority, tiebreak, CHUNKS, False, tmp_path) as store, \
            pytest.raises(MemoryError, match="raise selection.memory_mb"):
        streaming_take(store, "stratum", quotas, budget, Limits(100, 8), True)


@pytest.mark.parametrize("seed", range(3))
def test_upsampled_streaming_take_is_the_in_memory_one(seed, tmp_path):
    stratum, n_tokens, priority, tiebreak = random_pool(seed)
    priority[(stratum == 4) & (np.arange(len(stratum)) % 5 != 0)] = -np.inf  # stratum 4 short
    budget = int(n_tokens.sum() * 0.4)
    quotas = stratum_quotas(stratum, n_tokens, 5, budget)
    expected, passes = upsampled_take(stratum, n_tokens, priority, budget, quotas, tiebreak)
    assert passes
    with stored(stratum, n_tokens, priority, tiebreak, CHUNKS, True, tmp_path) as store:
        taken = streaming_take(store, "stratum", quotas, budget, Limits(len(expected) + 50, 3),
                               True, upsample=True)
    assert taken.chosen.tolist() == expected.tolist() and taken.passes == passes


def test_order_keys_follow_priority_then_tiebreak_descending():
    priority = np.array([1.0, -0.0, 0.0, 2.5, -3.0, 1.0, 1e-30, -1e-30], np.float32)
    tiebreak = np.array([0.1, 0.5, 0.2, 0.0, 0.9, 0.7, 0.3, 0.3], np.float32)
    keys = order_key(priority, tiebreak)
    walk = np.lexsort((np.arange(8), -tiebreak, -priority))
    assert np.argsort(keys, kind="stable").tolist() == walk.tolist()
    assert order_key(np.array([-0.0], np.float32), None) == order_key(
        np.array([0.0], np.float32), None)


def test_the_memory_ceiling_sets_spilling_and_candidates():
    from selectlab.selection.memory import plan_memory, resident_bytes

    used_mb = resident_bytes() / 2**20
    small = plan_memory(used_mb + 600, 1_000_000, 10_000)
    assert not small.spill and small.take.solve_units > 1_000_000
    large = plan_memory(used_mb + 600, 100_000_000, 1_000_000)
    assert large.spill  # 16 bytes a document would take most of the ceiling
    assert large.take.solve_units < small.take.solve_units
    with pytest.raises(MemoryError, match="leaves no room"):
        plan_memory(used_mb + 10, 1000, 10)
