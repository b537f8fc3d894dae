"""Selection methods written as plain functions of the pool's scores, run as `METHODS` entries.

The contract (docs/your_method.md): `method(units, **options) -> priorities`, one number per
unit, higher chosen first; -inf or NaN is never chosen. A boolean mask instead (the units the
method keeps) is sampled uniformly to the budget. `units.scores` holds the scores the
variant's `params.score` / `params.scores` name (float32, NaN where missing, a '-' reference
negated), keyed by the reference as written; `units.random` one uniform draw per unit from the
variant's seed; `units.n_tokens` each unit's length; `units.budget_tokens` the budget. The
other params (`tau`, `level`, ...) are the options. The strata, the `where` filter, the budget,
up-sampling and the training order are the harness's, the same for every row.

`per="pool"` (the default) calls the method once with the whole pool's arrays; `per="unit"`
once per pool shard, for methods whose priority of a unit depends on that unit alone (top-k,
a score level, importance weights), which never hold the pool in memory.
`ties="random"` orders equal priorities by the unit's random draw; `ties="none"` leaves them
in pool order (for priorities that already carry their randomness, e.g. Gumbel keys).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from selectlab.plugins.loading import MARK, PluginError, marker
from selectlab.selection.context import Choice, Keys, Method, MethodContext
from selectlab.selection.gumbel import gumbel_from_uniform

PER = ("pool", "unit")
TIES = ("random", "none")
# Params the harness applies to every method (variants.schema.yaml `common_params`).
HARNESS_PARAMS = ("strata", "where", "upsample_short", "order_by", "order")
SCORE_PARAMS = ("score", "scores")


@dataclass(frozen=True)
class MethodSpec:
    per: str
    ties: str
    kind: str = "method"


def selection_method(*, per: str = "pool", ties: str = "random"):
    """Mark a function `(units, **options) -> priorities` as a selection method."""
    if per not in PER or ties not in TIES:
        raise PluginError(f"selection_method: per must be one of {PER} and ties one of {TIES}; "
                          f"got per={per!r}, ties={ties!r}")
    return marker(MethodSpec(per, ties))


@dataclass
class Units:
    """What a selection method reads: a shard of the pool, or all of it."""

    scores: dict[str, np.ndarray]
    random: np.ndarray
    budget_tokens: int
    read_tokens: Callable[[], np.ndarray] = field(repr=False, default=None)

    def __len__(self) -> int:
        return len(self.random)

    @property
    def n_tokens(self) -> np.ndarray:
        return self.read_tokens()

    def gumbel(self) -> np.ndarray:
        """A standard Gumbel draw per unit from its random draw (Gumbel top-k sampling)."""
        return gumbel_from_uniform(self.random.copy())


def score_texts(params: dict) -> list[str]:
    """The score references a method reads, in order (`score`, then `scores`)."""
    texts = [params["score"]] if isinstance(params.get("score"), str) else []
    return texts + [t for t in params.get("scores", []) if t not in texts]


def method_options(params: dict) -> dict:
    return {k: v for k, v in params.items() if k not in HARNESS_PARAMS + SCORE_PARAMS}


def check_signature(function, params: dict, where: str) -> None:
    try:
        inspect.signature(function).bind(None, **method_options(params))
    except TypeError as error:
        raise PluginError(f"{where}: {function.__qualname__}{inspect.signature(function)} does "
                          f"not take the variant's options {sorted(method_options(params))} "
                          f"after the units (method(units, **options)): {error}") from error


def checked_priorities(values, units: Units, where: str) -> np.ndarray:
    """float32 priorities from what a method returned; a boolean mask (the units it keeps)
    becomes a uniform sample among them: their random draws, -inf elsewhere."""
    array = np.asarray(values)
    if array.ndim != 1 or len(array) != len(units):
        raise PluginError(f"{where}: returned priorities of shape {array.shape} for "
                          f"{len(units)} units; return one number per unit")
    if array.dtype.kind == "b":
        return np.where(array, units.random, np.float32(-np.inf))
    if array.dtype.kind not in "iuf":
        raise PluginError(f"{where}: returned {array.dtype} priorities; return numbers "
                          "(-inf: never chosen) or a boolean mask of the units to keep")
    return array.astype(np.float32, copy=False)


def as_method(function, where: str) -> Method:
    """The `METHODS` entry of a decorated function."""
    spec: MethodSpec = getattr(function, MARK)

    def method(context: MethodContext) -> Choice:
        options = method_options(context.params)
        texts = score_texts(context.params)
        columns = [context.column(text) for text in texts]
        stream = context.random_stream()

        def units_of(index: int | None, u, values) -> Units:
            read = ((lambda: context.store.chunk("n_tokens", index)) if index is not None
                    else lambda: np.concatenate([context.store.chunk("n_tokens", i)
                                                 for i in range(len(context.pool.rows))]))
            u.setflags(write=False)
            return Units(dict(zip(texts, values, strict=True)), u, context.budget, read)

        def scored(units: Units):
            priority = checked_priorities(function(units, **options), units, where)
            return priority, (units.random if spec.ties == "random" else None)

        def per_unit():
            for index, (u, *values) in enumerate(zip(stream.chunks(),
                                                     *(c.chunks() for c in columns),
                                                     strict=True)):
                yield scored(units_of(index, u, values))

        def per_pool():
            u = np.concatenate(list(stream.chunks()))
            values = [np.concatenate(list(c.chunks())) for c in columns]
            priority, tiebreak = scored(units_of(None, u, values))
            edges = np.r_[0, np.cumsum(context.pool.rows)]
            for a, b in zip(edges, edges[1:], strict=False):
                yield priority[a:b], None if tiebreak is None else tiebreak[a:b]

        chunks = per_unit if spec.per == "unit" else per_pool
        return Choice(keys=Keys(chunks, tiebreak=spec.ties == "random"))

    method.__doc__ = function.__doc__
    return method
