"""Selection methods: each turns the pool (and sidecar scores) into one priority per document.

A method is a function `(pool, params, rng, scores) -> priority` registered in `METHODS`, where
`scores(rater, column)` returns that sidecar column over the pool as float32. Higher priority is
chosen first; -inf means never chosen. The budget, the strata and the training order are handled
once for all methods in `selection.run`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from selectlab.selection.pool import Pool

ScoreReader = Callable[[str, str], np.ndarray]
Method = Callable[[Pool, dict, np.random.Generator, ScoreReader], np.ndarray]


def uniform_priority(pool: Pool, params: dict, rng: np.random.Generator,
                     scores: ScoreReader) -> np.ndarray:
    """Uniform sampling without replacement: a random priority per document."""
    return rng.random(len(pool))


METHODS: dict[str, Method] = {
    "uniform": uniform_priority,
}


def score_columns(params: dict) -> list[tuple[str, str]]:
    """The (rater, column) pairs a method's params refer to, written as "rater.column"."""
    refs = []
    for key in ("score", "order_by"):
        if isinstance(params.get(key), str):
            refs.append(params[key])
    refs.extend(params.get("scores", []))
    return [tuple(ref.split(".", 1)) for ref in refs]


def required_raters(params: dict) -> list[str]:
    """Sidecar families a variant reads besides `meta` (used by the workflow to wire inputs)."""
    return sorted({rater for rater, _ in score_columns(params)})
