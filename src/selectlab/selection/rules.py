"""Built-in selection methods written on the plugin contract (`selectlab.plugins`), exactly as
a user writes one: a function of the units' scores that returns their priorities.

Each decides a unit's priority from that unit alone, so they run shard by shard (`per="unit"`)
and never hold the pool in memory; their keys are the ones the hand-written methods gave
(the same random stream, the same float32 arithmetic).
"""

from __future__ import annotations

import numpy as np

from selectlab.plugins import Units, selection_method


@selection_method(per="unit", ties="random")
def topk(units: Units) -> np.ndarray:
    """Highest score first (use a '-' reference for lowest first); ties in random order."""
    (score,) = units.scores.values()
    return score


@selection_method(per="unit", ties="none")
def score_level(units: Units, level: float) -> np.ndarray:
    """Uniform sampling among the units whose score equals `level` (DataMan's l): a random
    key where it does, never chosen elsewhere."""
    (score,) = units.scores.values()
    keys = units.random.copy()
    keys[score != np.float32(level)] = -np.inf
    return keys


@selection_method(per="unit", ties="none")
def dsir(units: Units) -> np.ndarray:
    """Importance resampling without replacement: Gumbel top-k on log importance weights.

    Several targets form an equal mixture: log w = logsumexp(log w_t) - log(T)."""
    log_weight = None
    for values in units.scores.values():
        values = values.astype(np.float32, copy=False)
        log_weight = values if log_weight is None else np.logaddexp(log_weight, values)
    keys = units.gumbel()
    keys += log_weight - np.float32(np.log(len(units.scores)))
    return keys
