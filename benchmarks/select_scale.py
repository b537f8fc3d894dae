"""How selection scales with the pool: time and peak memory for 10^5, 10^6, 10^7 documents.

Measures the in-memory core that every `select` job runs after reading its sidecar columns
(reading is one column at a time, shard by shard, and not timed here): for a synthetic pool of
7 sources,
  rating_sample  z-normalise one rating, Gumbel keys at tau = 2, budgeted take (QuRating);
  weighted_topk  percentile ranks of 4 scores, weighted sum, random tiebreak, budgeted take
                 (a Meta-rater proxy / Mean / Meta-rater selection).
Peak memory is tracemalloc's peak of what the step allocates (numpy buffers are traced), on top
of the pool arrays and input scores that exist before it starts. "key arrays" = the pool's
per-document arrays (20 bytes) plus the float32 sort keys the step must hold (rating_sample:
one key; weighted_topk: the weighted sum and a random tiebreak, since ranks tie): the least the
selection could keep. Target: time near-linear (x ~10 per 10x documents; sorting adds a log
factor) and (pool arrays + step peak) within 2x of the key arrays.

Usage: python benchmarks/select_scale.py [--sizes 100000 1000000 10000000]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from selectlab.selection.budget import budgeted_take, stratum_quotas
from selectlab.selection.gumbel import gumbel_keys, tempered_logits
from selectlab.selection.scores import percentile_ranks, z_scores
from selectlab.selection.synthetic import synthetic_pool_arrays

BUDGET_FRACTION = 0.1  # the papers select 30B of 260-627B tokens


def rating_sample_step(pool: dict, scores: list[np.ndarray], budget: int,
                       rng: np.random.Generator) -> np.ndarray:
    quotas = stratum_quotas(pool["source"], pool["n_tokens"], 7, budget)
    keys = gumbel_keys(tempered_logits(z_scores(scores[0]), 2.0), rng)
    return budgeted_take(pool["source"], pool["n_tokens"], keys, budget, quotas)


def weighted_topk_step(pool: dict, scores: list[np.ndarray], budget: int,
                       rng: np.random.Generator) -> np.ndarray:
    quotas = stratum_quotas(pool["source"], pool["n_tokens"], 7, budget)
    total = np.zeros(len(pool["row"]), dtype=np.float32)
    for score, weight in zip(scores, (0.4, 0.3, 0.2, 0.1), strict=True):
        ranks = percentile_ranks(score)
        ranks *= np.float32(weight)
        total += ranks
        del ranks
    tiebreak = rng.random(len(total), dtype=np.float32)
    return budgeted_take(pool["source"], pool["n_tokens"], total, budget, quotas, tiebreak)


def measure(step, pool: dict, scores: list[np.ndarray], budget: int) -> tuple[float, int, int]:
    """(seconds, peak bytes the step allocated, documents chosen)."""
    rng = np.random.default_rng(1)
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    chosen = step(pool, scores, budget, rng)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak, len(chosen)


def pool_bytes(pool: dict) -> int:
    return sum(pool[key].nbytes for key in ("shard_index", "row", "n_tokens", "source"))


def main(sizes: list[int]) -> None:
    steps = {"rating_sample": rating_sample_step, "weighted_topk": weighted_topk_step}
    sort_keys = {"rating_sample": 1, "weighted_topk": 2}
    results: dict[str, list[tuple[int, float, int]]] = {name: [] for name in steps}
    print(f"{'step':14s} {'documents':>11s} {'seconds':>8s} {'peak MB':>8s} {'B/doc':>6s} "
          f"{'(pool+peak)/keys':>16s} {'chosen':>9s}")
    for n in sizes:
        rng = np.random.default_rng(0)
        pool = synthetic_pool_arrays(n, rng)
        scores = [rng.normal(size=n).astype(np.float32) for _ in range(4)]
        budget = int(pool["n_tokens"].sum() * BUDGET_FRACTION)
        for name, step in steps.items():
            key_bytes = pool_bytes(pool) + 4 * n * sort_keys[name]
            seconds, peak, chosen = measure(step, pool, scores, budget)
            results[name].append((n, seconds, peak))
            ratio = (pool_bytes(pool) + peak) / key_bytes
            print(f"{name:14s} {n:11,d} {seconds:8.2f} {peak / 2**20:8.1f} {peak / n:6.1f} "
                  f"{ratio:16.2f} {chosen:9,d}")
        del pool, scores
    print("\ngrowth per 10x documents (time, peak memory):")
    for name, rows in results.items():
        for (n0, t0, m0), (n1, t1, m1) in zip(rows, rows[1:], strict=False):
            factor = n1 / n0
            print(f"  {name:14s} {n0:>11,d} -> {n1:<11,d} time x{t1 / t0:5.1f}  "
                  f"memory x{m1 / m0:5.1f}  (documents x{factor:.0f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    main(parser.parse_args().sizes)
