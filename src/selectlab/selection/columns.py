"""What a method reads over the pool, one shard (chunk) at a time, in pool order.

- `ScoreColumn`: a sidecar column as float32, oriented ('-' references negated).
- `RankColumns`: scores' percentile ranks, from the pool-level rank sidecars (selection.ranks).
- `RandomStream`: uniform float32 draws, one per document, that come out the same however the
  pool is chunked and however often it is walked (numpy's generators give the same numbers
  drawn in pieces as drawn at once).

Each can be walked any number of times; missing values are counted on the first walk.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from queue import Full, Queue

import numpy as np

from selectlab.selection.pool import Pool, numeric_values, read_sidecar_column
from selectlab.selection.scores import ScoreRef, missing_count, oriented

# Draws per call when a stream only advances a generator.
ADVANCE_PIECE = 1 << 20


class ScoreColumn:
    def __init__(self, pool: Pool, ref: ScoreRef, missing: dict[str, int]):
        self.pool, self.ref, self.missing = pool, ref, missing

    def chunks(self) -> Iterator[np.ndarray]:
        return prefetched(self.read())

    def read(self) -> Iterator[np.ndarray]:
        ref, missing = self.ref, 0
        for shard, expected in zip(self.pool.shards, self.pool.rows, strict=True):
            values = numeric_values(read_sidecar_column(self.pool.attributes_dir, ref.family,
                                                        ref.column, shard, expected),
                                    f"{ref.family}.{ref.column}")
            missing += missing_count(values)
            yield oriented(values, ref)
        self.missing[f"{ref.family}.{ref.column}"] = missing


class RankColumns:
    """Percentile ranks in [0, 1] as float32 (NaN where the score is missing) of several
    scores, per shard: each family's rank sidecar is read once per shard for all its columns,
    in a background thread one shard ahead of the caller."""

    def __init__(self, pool: Pool, refs: list[ScoreRef], missing: dict[str, int]):
        from selectlab.selection.ranks import RankTable

        self.pool, self.refs, self.missing = pool, refs, missing
        self.tables = {ref: RankTable.open(pool, ref) for ref in refs}

    def read(self) -> Iterator[list[np.ndarray]]:
        from selectlab.selection.ranks import read_numerators

        families: dict[str, list[str]] = {}
        for ref in self.refs:
            families.setdefault(ref.family, [])
            if ref.column not in families[ref.family]:
                families[ref.family].append(ref.column)
        for shard, expected in zip(self.pool.shards, self.pool.rows, strict=True):
            numerators = {}
            for family, columns in families.items():
                numerators[family] = read_numerators(self.pool.attributes_dir, family, columns,
                                                     shard, expected)
            yield [self.tables[ref].ranks(numerators[ref.family][ref.column], ref.negate)
                   for ref in self.refs]

    def chunks(self) -> Iterator[list[np.ndarray]]:
        missing = dict.fromkeys((f"{ref.family}.{ref.column}" for ref in self.refs), 0)
        for ranks in prefetched(self.read()):
            for ref, values in zip(self.refs, ranks, strict=True):
                missing[f"{ref.family}.{ref.column}"] = \
                    missing[f"{ref.family}.{ref.column}"] + int(np.isnan(values).sum())
            yield ranks
        self.missing.update(missing)


def prefetched(items: Iterator, depth: int = 1) -> Iterator:
    """The items, produced by a background thread up to `depth` ahead of the consumer (reading
    parquet and numpy's array loops release the interpreter, so both cores work)."""
    queue: Queue = Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce():
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        queue.put((item, None), timeout=0.1)
                        break
                    except Full:
                        continue
                if stop.is_set():
                    return
            queue.put((done, None))
        except BaseException as error:  # handed to the consumer, raised there
            queue.put((done, error))

    worker = threading.Thread(target=produce, daemon=True)
    worker.start()
    try:
        while True:
            item, error = queue.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()


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
