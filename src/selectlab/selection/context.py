"""What a selection method reads (`MethodContext`) and returns (`Choice`).

A method never holds a whole-pool array: it describes its priorities as `Keys`, a function that
walks the pool shard by shard and yields each shard's priorities (and tiebreak keys), built from
columns (`context.column`, `context.ranks`) and random streams (`context.random_stream`). The
streaming take (selection.take) walks them once and keeps what it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from selectlab.selection.columns import RandomStream, RankColumns, ScoreColumn
from selectlab.selection.pool import Pool, iter_vectors
from selectlab.selection.scores import ScoreRef
from selectlab.selection.store import UnitStore
from selectlab.selection.take import Limits, streaming_take

KeyChunks = Iterator[tuple[np.ndarray, np.ndarray | None]]


@dataclass
class Keys:
    """Priorities (higher first; -inf/NaN never chosen) and, if `tiebreak`, keys that order
    equal priorities (higher first), walked shard by shard in pool order."""

    chunks: Callable[[], KeyChunks]
    tiebreak: bool = False

    @classmethod
    def of_array(cls, priority: np.ndarray, chunk_rows: list[int]) -> Keys:
        """Priorities already held in memory (SemDeDup's cluster ranks)."""
        edges = np.r_[0, np.cumsum(chunk_rows)]
        return cls(lambda: ((priority[a:b], None) for a, b in zip(edges, edges[1:],
                                                                  strict=False)))


@dataclass
class Choice:
    keys: Keys | None = None
    chosen: np.ndarray | None = None  # an exact set in a given order, bypassing the budget


Method = Callable[["MethodContext"], Choice]


@dataclass
class MethodContext:
    """What a method may read: the pool, its params, randomness, scores, strata and budget."""

    pool: Pool
    store: UnitStore  # the pool's per-document columns, `stratum` among them
    params: dict
    seed: int
    rng: np.random.Generator
    quotas: np.ndarray  # token quota per stratum code
    budget: int
    limits: Limits
    upstream: Path | None = None  # a fitted file or another variant's selection
    info: dict = field(default_factory=dict)  # method-specific manifest entries
    missing: dict = field(default_factory=dict)  # missing values per score read

    def column(self, text: str) -> ScoreColumn:
        return ScoreColumn(self.pool, ScoreRef.parse(text), self.missing)

    def ranks(self, texts: list[str]) -> RankColumns:
        """The scores' percentile ranks over the pool, from their rank sidecars."""
        return RankColumns(self.pool, [ScoreRef.parse(text) for text in texts], self.missing)

    def random_stream(self) -> RandomStream:
        """The next `rng.random(pool size, float32)` of the method's generator."""
        return RandomStream.drawn_from(self.rng, self.pool.rows)

    def read_vectors(self, ref: ScoreRef):
        return iter_vectors(self.pool.attributes_dir, ref.family, ref.column, self.pool.shards,
                            self.pool.rows)

    def take(self, keys: Keys) -> np.ndarray:
        """The budgeted take these keys would give (for methods built on others)."""
        put_keys(self.store, keys)
        return streaming_take(self.store, "stratum", self.quotas, self.budget, self.limits,
                              keys.tiebreak).chosen


def put_keys(store: UnitStore, keys: Keys, keep: Iterator[np.ndarray] | None = None) -> dict:
    """Write the keys to the store's `priority` (and `tiebreak`) columns, -inf where `keep`
    is False; return how many documents were filtered out and how many are eligible."""
    counts = {"filtered_out": 0, "eligible": 0}
    priorities = store.writer("priority")
    tiebreaks = store.writer("tiebreak") if keys.tiebreak else None
    for priority, tiebreak in keys.chunks():
        priority = np.asarray(priority, dtype=np.float32).copy()
        if keep is not None:
            passes = next(keep)
            counts["filtered_out"] += int((~passes).sum())
            priority[~passes] = -np.inf
        counts["eligible"] += int(np.isfinite(priority).sum())
        priorities.append(priority)
        if tiebreaks is not None:
            tiebreaks.append(np.asarray(tiebreak, dtype=np.float32))
    if keep is not None:
        next(keep, None)  # let the filter finish its walk (it counts missing values at the end)
    priorities.close()
    if tiebreaks is not None:
        tiebreaks.close()
    else:
        store.drop("tiebreak")
    return counts
