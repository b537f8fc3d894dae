"""Token-budgeted selection with stratum proportions preserved.

Every method reduces to a priority per document (higher = chosen earlier) and a set of strata
(the source, at full scale also source x domain). Each stratum s gets a token quota
q_s = budget * share_s, where share_s is its share of the pool's tokens. Inside a stratum,
documents are taken in priority order; across strata, documents are merged by *progress*: the
fraction of their stratum's quota filled at the document's midpoint, (tokens before it + half
its own) / q_s. Cutting the merged order where the running total first reaches the budget lands
within one document of the budget, and every stratum sits at the same progress level t, i.e.
within half of one of its documents of t * q_s (a stratum includes a document exactly when the
document is at least half inside its share), so each stratum keeps its share to within half a
document.

A stratum with fewer eligible tokens than its quota is exhausted early; its shortfall is spread
over the other strata in proportion to their quotas and reported in the manifest.

Memory: the merge never materialises the merged order of the whole pool. Each stratum keeps its
documents in priority order (a 4-byte position each) and twice their midpoints (8 bytes); the cut
is found by bisection on the common progress level, and only the chosen documents are put in
merged order.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

# A bisection on float64 progress reaches adjacent floats well within this many halvings.
BISECTION_STEPS = 200


@dataclass(frozen=True)
class StratumOutcome:
    stratum: str
    pool_documents: int
    pool_tokens: int
    quota_tokens: float
    selected_documents: int
    selected_tokens: int
    eligible_tokens: int | None = None  # tokens of documents the method allowed; None = all

    @property
    def short(self) -> bool:
        """The stratum could not fill its quota with the documents it was allowed to use."""
        available = self.pool_tokens if self.eligible_tokens is None else self.eligible_tokens
        return available < self.quota_tokens

    def to_dict(self) -> dict:
        return asdict(self) | {"short": self.short}


@dataclass(frozen=True)
class StratumRun:
    """One stratum's eligible documents, highest priority first.

    `midpoints` holds 2 x (tokens before the document + half its own) = running total before
    plus running total after: integer and strictly increasing along the run (non-decreasing
    with zero-token documents), so a progress level maps to a prefix by binary search.
    """

    code: int
    members: np.ndarray  # pool positions (uint32 when the pool allows, else int64)
    midpoints: np.ndarray  # int64, twice the token midpoint of each document
    quota: float
    n_tokens: np.ndarray  # the pool's token counts (shared, not copied)

    def count_within(self, progress: float) -> int:
        """How many leading documents have progress <= `progress`."""
        limit = math.floor(2 * progress * self.quota)
        return int(np.searchsorted(self.midpoints, np.int64(limit), side="right"))

    def tokens_in_first(self, count: int) -> int:
        if count == 0:
            return 0
        last = count - 1
        return (int(self.midpoints[last]) + int(self.n_tokens[self.members[last]])) // 2

    def progress(self, count: int) -> np.ndarray:
        """Progress of the first `count` documents (the merge key)."""
        return self.midpoints[:count] / max(2 * self.quota, 1e-9)


def stratum_quotas(stratum: np.ndarray, n_tokens: np.ndarray, n_strata: int,
                   budget: int) -> np.ndarray:
    """Token quota per stratum code, proportional to the stratum's tokens in the pool."""
    pool_tokens = np.bincount(stratum, weights=n_tokens, minlength=n_strata)
    total = pool_tokens.sum()
    if total == 0:
        raise ValueError("the pool has no tokens to select from")
    return budget * pool_tokens / total


def position_dtype(n: int) -> type:
    return np.uint32 if n < 2**32 else np.int64


def stratum_runs(stratum: np.ndarray, n_tokens: np.ndarray, priority: np.ndarray,
                 quotas: np.ndarray, tiebreak: np.ndarray | None = None) -> list[StratumRun]:
    """Eligible documents (finite priority) grouped by stratum, each group in priority order.

    Equal priorities are ordered by `tiebreak` (higher first) when given, else by pool position,
    so a method whose scores tie (ratings 1-5) passes random tiebreak keys to avoid favouring
    the first shards. Strata are sorted one at a time, so the sort's temporaries scale with the
    largest stratum, not the pool.
    """
    dtype = position_dtype(len(priority))
    positions = np.arange(len(priority), dtype=dtype)[np.isfinite(priority)]
    codes = stratum[positions]
    runs = []
    for code in np.flatnonzero(np.bincount(codes)) if len(codes) else []:
        members = positions[codes == code]
        keys = [-priority[members]] if tiebreak is None else [-tiebreak[members],
                                                               -priority[members]]
        members = members[np.lexsort(keys) if len(keys) > 1
                          else np.argsort(keys[0], kind="stable")]
        del keys
        midpoints = n_tokens[members].astype(np.int64)
        np.cumsum(midpoints, out=midpoints)
        midpoints[1:] += midpoints[:-1].copy()
        runs.append(StratumRun(int(code), members, midpoints, float(quotas[code]), n_tokens))
    return runs


def tokens_within(runs: list[StratumRun], progress: float) -> int:
    return sum(run.tokens_in_first(run.count_within(progress)) for run in runs)


def merged_order(runs: list[StratumRun], counts: list[int]) -> np.ndarray:
    """The first `counts[i]` documents of every run, merged by progress (stable on ties)."""
    progress = np.concatenate([
        run.progress(count) for run, count in zip(runs, counts, strict=True)
    ]) if runs else np.zeros(0)
    chosen = np.concatenate([
        run.members[:count].astype(np.int64) for run, count in zip(runs, counts, strict=True)
    ]) if runs else np.zeros(0, np.int64)
    return chosen[np.argsort(progress, kind="stable")]


def budgeted_take(
    stratum: np.ndarray,
    n_tokens: np.ndarray,
    priority: np.ndarray,
    budget: int,
    quotas: np.ndarray,
    tiebreak: np.ndarray | None = None,
) -> np.ndarray:
    """Indices of the chosen documents, in merged-progress order.

    `priority` may hold -inf (or NaN) for documents that must never be chosen (missing scores,
    filtered out); they are dropped before the merge. The last index returned is the document
    whose inclusion first brings the total to the budget.
    """
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    runs = stratum_runs(stratum, n_tokens, priority, quotas, tiebreak)
    if not runs:
        return np.zeros(0, np.int64)
    top = max(float(run.progress(len(run.members))[-1]) for run in runs)
    if tokens_within(runs, top) < budget:
        return merged_order(runs, [len(run.members) for run in runs])
    # Invariant: fewer than `budget` tokens up to `low` (progress 0 holds only zero-token
    # documents), at least `budget` up to `high`.
    low, high = 0.0, top
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2
        if middle <= low or middle >= high:
            break
        if tokens_within(runs, middle) >= budget:
            high = middle
        else:
            low = middle
    return cut_at_budget(runs, low, high, budget)


def cut_at_budget(runs: list[StratumRun], low: float, high: float, budget: int) -> np.ndarray:
    """Everything up to progress `low`, then the documents between `low` and `high` one at a
    time (by progress, then stratum, then rank) until the budget is reached."""
    base = [run.count_within(low) for run in runs]
    total = sum(run.tokens_in_first(count) for run, count in zip(runs, base, strict=True))
    upper = [run.count_within(high) for run in runs]
    pending = sorted(
        (float(run.progress(j + 1)[j]), index, j)
        for index, run in enumerate(runs)
        for j in range(base[index], upper[index])
    )
    counts = list(base)
    for _, index, j in pending:
        if total >= budget:
            break
        counts[index] = j + 1
        total += int(runs[index].n_tokens[runs[index].members[j]])
    return merged_order(runs, counts)


def stratum_outcomes(
    stratum: np.ndarray, n_tokens: np.ndarray, chosen: np.ndarray, quotas: np.ndarray,
    names: list[str], eligible: np.ndarray | None = None,
) -> list[StratumOutcome]:
    """Pool, quota and chosen tokens per stratum; `eligible` (a boolean mask) makes a stratum
    short when its allowed documents hold fewer tokens than its quota."""
    n = len(names)

    def tokens(mask):
        return np.bincount(stratum[mask], weights=n_tokens[mask], minlength=n).astype(np.int64)

    return outcomes(names, np.bincount(stratum, minlength=n), tokens(slice(None)), quotas,
                    np.bincount(stratum[chosen], minlength=n), tokens(chosen),
                    None if eligible is None else tokens(eligible))


def outcomes(names: list[str], pool_documents: np.ndarray, pool_tokens: np.ndarray,
             quotas: np.ndarray, chosen_documents: np.ndarray, chosen_tokens: np.ndarray,
             eligible_tokens: np.ndarray | None) -> list[StratumOutcome]:
    """One `StratumOutcome` per stratum from its counts."""
    return [
        StratumOutcome(names[i], int(pool_documents[i]), int(pool_tokens[i]), float(quotas[i]),
                       int(chosen_documents[i]), int(chosen_tokens[i]),
                       None if eligible_tokens is None else int(eligible_tokens[i]))
        for i in range(len(names))
    ]
