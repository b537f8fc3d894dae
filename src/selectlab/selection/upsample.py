"""Up-sampling short strata: repeat a stratum's eligible documents until it fills its quota.

Used only by variants that set `upsample_short: true` (see config/paper.yaml for the paper rows
that need it); everywhere else a short stratum's shortfall goes to the other strata and is
reported. A short stratum is walked in priority order, then again from its top, as many times
as its quota needs; the last pass is cut by the same budgeted merge as everything else, so the
budget still lands within one document. The selection then holds repeated documents, which the
manifest flags.

This path copies the arrays it is given once; the streaming take (selection.take) gives it the
short strata whole and only a candidate prefix of every other stratum.
"""

from __future__ import annotations

import math

import numpy as np

from selectlab.selection.budget import budgeted_take


def short_strata(stratum: np.ndarray, n_tokens: np.ndarray, priority: np.ndarray,
                 quotas: np.ndarray) -> np.ndarray:
    """Codes of strata whose eligible documents hold fewer tokens than their quota (but some)."""
    eligible = np.isfinite(priority)
    available = np.bincount(stratum[eligible], weights=n_tokens[eligible],
                            minlength=len(quotas))
    return np.flatnonzero((available < quotas) & (available > 0))


def upsampled_take(stratum: np.ndarray, n_tokens: np.ndarray, priority: np.ndarray,
                   budget: int, quotas: np.ndarray, tiebreak: np.ndarray | None = None,
                   short: np.ndarray | None = None) -> tuple[np.ndarray, dict[int, int]]:
    """(chosen pool positions, possibly repeated; passes per up-sampled stratum code).

    `short` gives the short strata when the arrays hold only part of the pool (the streaming
    take passes the whole short strata and a prefix of every other); by default they are found
    from the arrays.
    """
    if short is None:
        short = short_strata(stratum, n_tokens, priority, quotas)
    if len(short) == 0:
        return budgeted_take(stratum, n_tokens, priority, budget, quotas, tiebreak), {}
    in_short = np.isin(stratum, short)
    positions = [np.flatnonzero(~in_short)]
    keys = [priority[positions[0]].astype(np.float64)]
    passes: dict[int, int] = {}
    for code in short:
        members = np.flatnonzero((stratum == code) & np.isfinite(priority))
        order_keys = [-priority[members]] if tiebreak is None else [-tiebreak[members],
                                                                   -priority[members]]
        members = members[np.lexsort(order_keys)]
        count = math.ceil(quotas[code] / n_tokens[members].sum())
        passes[int(code)] = count
        positions.append(np.tile(members, count))
        # Pass p, rank j gets key -(p * m + j): every pass is used up before the next begins.
        keys.append(-np.arange(count * len(members), dtype=np.float64))
    expanded = np.concatenate(positions)
    # The copies' keys are all distinct, so only the other strata keep their tiebreak keys.
    expanded_tiebreak = None if tiebreak is None else np.concatenate(
        [tiebreak[positions[0]]] + [np.zeros(len(p), np.float32) for p in positions[1:]])
    local = budgeted_take(stratum[expanded], n_tokens[expanded], np.concatenate(keys), budget,
                          quotas, expanded_tiebreak)
    return expanded[local], passes
