"""Token-budgeted selection with stratum proportions preserved.

Every method reduces to a priority per document (higher = chosen earlier) and a set of strata
(the source, at full scale also source x domain). Each stratum s gets a token quota
q_s = budget * share_s, where share_s is its share of the pool's tokens. Inside a stratum,
documents are taken in priority order; across strata, documents are merged by *progress*, the
fraction of their stratum's quota that is filled once they are included. Cutting the merged order
where the running total first reaches the budget therefore lands within one document of the
budget, and every stratum sits at the same progress, i.e. within one document of its share.

A stratum with fewer tokens than its quota is exhausted early; its shortfall is spread over the
other strata in proportion to their quotas and reported in the manifest.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class StratumOutcome:
    stratum: str
    pool_documents: int
    pool_tokens: int
    quota_tokens: float
    selected_documents: int
    selected_tokens: int

    @property
    def short(self) -> bool:
        return self.pool_tokens < self.quota_tokens

    def to_dict(self) -> dict:
        return asdict(self) | {"short": self.short}


def stratum_quotas(stratum: np.ndarray, n_tokens: np.ndarray, n_strata: int,
                   budget: int) -> np.ndarray:
    """Token quota per stratum code, proportional to the stratum's tokens in the pool."""
    pool_tokens = np.bincount(stratum, weights=n_tokens, minlength=n_strata)
    total = pool_tokens.sum()
    if total == 0:
        raise ValueError("the pool has no tokens to select from")
    return budget * pool_tokens / total


def budgeted_take(
    stratum: np.ndarray,
    n_tokens: np.ndarray,
    priority: np.ndarray,
    budget: int,
    quotas: np.ndarray,
) -> np.ndarray:
    """Indices of the chosen documents, in merged-progress order.

    `priority` may hold -inf for documents that must never be chosen (missing scores, filtered
    out); they are dropped before the merge.
    """
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    eligible = np.flatnonzero(np.isfinite(priority))
    if len(eligible) == 0:
        return eligible
    # Group by stratum, highest priority first; lexsort is stable, so ties keep pool order.
    order = eligible[np.lexsort((-priority[eligible], stratum[eligible]))]
    tokens = n_tokens[order].astype(np.float64)
    codes = stratum[order]
    running = np.cumsum(tokens)
    group_start = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    before_group = np.repeat(running[group_start] - tokens[group_start],
                             np.diff(np.r_[group_start, len(order)]))
    progress = (running - before_group) / np.maximum(quotas[codes], 1e-9)
    merged = order[np.argsort(progress, kind="stable")]
    total = np.cumsum(n_tokens[merged].astype(np.int64))
    cut = int(np.searchsorted(total, budget, side="left"))
    return merged[: cut + 1]


def stratum_outcomes(
    stratum: np.ndarray, n_tokens: np.ndarray, chosen: np.ndarray, quotas: np.ndarray,
    names: list[str],
) -> list[StratumOutcome]:
    n = len(names)
    pool_docs = np.bincount(stratum, minlength=n)
    pool_tokens = np.bincount(stratum, weights=n_tokens, minlength=n)
    chosen_docs = np.bincount(stratum[chosen], minlength=n)
    chosen_tokens = np.bincount(stratum[chosen], weights=n_tokens[chosen], minlength=n)
    return [
        StratumOutcome(names[i], int(pool_docs[i]), int(pool_tokens[i]), float(quotas[i]),
                       int(chosen_docs[i]), int(chosen_tokens[i]))
        for i in range(n)
    ]
