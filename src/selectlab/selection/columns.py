"""What a method reads over the pool, one shard (chunk) at a time, in pool order.

- `ScoreColumn`: a sidecar column as float32, oriented ('-' references negated).
- `RankColumn`: a score's percentile ranks, from the pool-level rank sidecars (selection.ranks).
- `RandomStream`: uniform float32 draws, one per document, that come out the same however the
  pool is chunked and however often it is walked (numpy's generators give the same numbers
  drawn in pieces as drawn at once).

Each can be walked any number of times; missing values are counted on the first walk.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from selectlab.selection.pool import Pool, numeric_values, read_sidecar_column
from selectlab.selection.scores import ScoreRef, missing_count, oriented

# Draws per call when a stream only advances a generator.
ADVANCE_PIECE = 1 << 20


class ScoreColumn:
    def __init__(self, pool: Pool, ref: ScoreRef, missing: dict[str, int]):
        self.pool, self.ref, self.missing = pool, ref, missing

    def chunks(self) -> Iterator[np.ndarray]:
        ref, missing = self.ref, 0
        for shard, expected in zip(self.pool.shards, self.pool.rows, strict=True):
            values = numeric_values(read_sidecar_column(self.pool.attributes_dir, ref.family,
                                                        ref.column, shard, expected),
                                    f"{ref.family}.{ref.column}")
            missing += missing_count(values)
            yield oriented(values, ref)
        self.missing[f"{ref.family}.{ref.column}"] = missing


class RankColumn:
    """Percentile ranks in [0, 1] as float32, NaN where the score is missing."""

    def __init__(self, pool: Pool, ref: ScoreRef, missing: dict[str, int]):
        from selectlab.selection.ranks import RankTable

        self.pool, self.ref, self.missing = pool, ref, missing
        self.table = RankTable.open(pool, ref)

    def chunks(self) -> Iterator[np.ndarray]:
        missing = 0
        for shard, expected in zip(self.pool.shards, self.pool.rows, strict=True):
            ranks, absent = self.table.ranks(shard, expected, self.ref.negate)
            missing += absent
            yield ranks
        self.missing[f"{self.ref.family}.{self.ref.column}"] = missing


class RandomStream:
    """One uniform float32 per document from a generator state captured at creation."""

    def __init__(self, state: dict, chunk_rows: list[int]):
        self.state, self.chunk_rows = state, chunk_rows

    @classmethod
    def fresh(cls, seed: int, chunk_rows: list[int]) -> RandomStream:
        return cls(np.random.default_rng(seed).bit_generator.state, chunk_rows)

    @classmethod
    def drawn_from(cls, rng: np.random.Generator, chunk_rows: list[int]) -> RandomStream:
        """The stream `rng.random(pool size)` would give; `rng` moves past it, as it would."""
        stream = cls(rng.bit_generator.state, chunk_rows)
        remaining = sum(chunk_rows)
        while remaining:
            piece = min(remaining, ADVANCE_PIECE)
            rng.random(piece, dtype=np.float32)
            remaining -= piece
        return stream

    def chunks(self) -> Iterator[np.ndarray]:
        generator = np.random.Generator(getattr(np.random, self.state["bit_generator"])())
        generator.bit_generator.state = self.state
        for rows in self.chunk_rows:
            yield generator.random(rows, dtype=np.float32)
