"""What a selection method reads (`MethodContext`) and returns (`Choice`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from selectlab.selection.budget import budgeted_take
from selectlab.selection.pool import Pool
from selectlab.selection.scores import ScoreRef


@dataclass
class MethodContext:
    """What a method may read: the pool, its params, randomness, scores, strata and budget."""

    pool: Pool
    params: dict
    seed: int
    rng: np.random.Generator
    read_score: Callable[[ScoreRef], np.ndarray]  # oriented float32 over the pool
    # Per shard, in pool order: (shard, float32 matrix) of a fixed-size vector column.
    read_vectors: Callable[[ScoreRef], Iterator[tuple[str, np.ndarray]]]
    strata: np.ndarray  # int32 stratum code per document
    quotas: np.ndarray  # token quota per stratum code
    budget: int
    upstream: Path | None = None  # a fitted file or another variant's selection
    info: dict = field(default_factory=dict)  # method-specific manifest entries

    def score(self, text: str) -> np.ndarray:
        return self.read_score(ScoreRef.parse(text))

    def take(self, priority: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
        """The budgeted take a method's priorities would give (for methods built on others)."""
        return budgeted_take(self.strata, self.pool.n_tokens, priority, self.budget, self.quotas,
                             tiebreak)


@dataclass
class Choice:
    priority: np.ndarray | None = None
    tiebreak: np.ndarray | None = None  # orders equal priorities (higher first)
    chosen: np.ndarray | None = None  # an exact set in a given order, bypassing the budget


Method = Callable[[MethodContext], Choice]


def uniform_keys(n: int, seed: int) -> np.ndarray:
    """The uniform method's keys for a seed: the reference every manifest's overlap uses."""
    return np.random.default_rng(seed).random(n, dtype=np.float32)


def random_tiebreak(context: MethodContext) -> np.ndarray:
    return context.rng.random(len(context.pool), dtype=np.float32)

