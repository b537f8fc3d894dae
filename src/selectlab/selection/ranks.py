"""Percentile ranks of scores over the whole pool, computed once and stored as sidecars.

Meta-rater, its proxies, Mean and Intersection combine scores on percentile ranks
(selection.scores.percentile_ranks). A rank depends on the whole pool, so computing it inside
every selection re-sorts the pool per score and proxy (1,280 proxies x 25 scores). Instead a
pool-level step ranks each score once: `attributes/ranks/{family}/{shard}.parquet` holds, per
ranked column, every document's mid-rank numerator L = (present values below it) + (present
values at or below it) - 1 as an integer (-1 where the score is missing), row-aligned with the
meta sidecar; `ranks.json` beside them names the pool (shards, rows) and each column's number
of present values n. A selection turns L into the rank L / (2(n - 1)) exactly as
`percentile_ranks` does, and a negated reference ('-family.column') into 2n - 2 - L, the
numerator of the negated score's rank. Non-finite values (NaN, +-inf) count as missing.

Memory: values are ranked in batches of consecutive key ranges that fit `capacity` values
(one histogram pass finds the ranges; each batch is collected, sorted, and looked up); the
numerators live in a `UnitStore`, spilled to disk when the pool is large.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from selectlab.selection.keys import ascending32
from selectlab.selection.pool import Pool, meta_rows, numeric_values, read_sidecar_column
from selectlab.selection.scores import ScoreRef, midrank_percentiles
from selectlab.selection.store import UnitStore
from selectlab.shards import atomic_path, write_json

RANKS_DIR = "ranks"
SUMMARY = "ranks.json"
BINS = 1 << 16


def rank_dir(attributes_dir: str | Path, family: str) -> Path:
    return Path(attributes_dir) / RANKS_DIR / family


@dataclass
class Batch:
    """Present values whose 32-bit keys lie in [low, high]; `below` present values precede."""

    low: int
    high: int
    count: int
    below: int


def key_batches(counts: np.ndarray, capacity: int, shift: int) -> list[tuple[int, int, int]]:
    """Consecutive non-empty bins grouped into (low key, high key, values) of at most `capacity`
    values; a bin over capacity stands alone."""
    batches: list[list[int]] = []
    for b in np.flatnonzero(counts):
        low, high, count = int(b) << shift, ((int(b) + 1) << shift) - 1, int(counts[b])
        if batches and batches[-1][2] + count <= capacity:
            batches[-1][1:] = [high, batches[-1][2] + count]
        else:
            batches.append([low, high, count])
    return [tuple(batch) for batch in batches]


def key_histogram(values: UnitStore, inside_bin: int | None = None) -> np.ndarray:
    """Present values per top 16 key bits, or per low 16 bits inside one top bin."""
    counts = np.zeros(BINS, np.int64)
    for _, chunk in values.walk(["values"]):
        keys = ascending32(chunk["values"][np.isfinite(chunk["values"])])
        if inside_bin is None:
            counts += np.bincount(keys >> 16, minlength=BINS)
        else:
            counts += np.bincount(keys[(keys >> 16) == inside_bin] & 0xFFFF, minlength=BINS)
    return counts


def column_batches(values: UnitStore, capacity: int) -> list[Batch]:
    """Key ranges of the present values in order, each of at most `capacity` values or of a
    single key (ties, ranked without sorting)."""
    ranges = []
    for low, high, count in key_batches(key_histogram(values), capacity, 16):
        if count <= capacity:
            ranges.append((low, high, count))
        else:  # one 16-bit bin over capacity: split it on the low 16 bits
            ranges += [(low + a, low + b, n) for a, b, n in
                       key_batches(key_histogram(values, low >> 16), capacity, 0)]
    batches, below = [], 0
    for low, high, count in ranges:
        batches.append(Batch(low, high, count, below))
        below += count
    return batches


def store_midranks(values: UnitStore, capacity: int, out: UnitStore, name: str) -> int:
    """Put the mid-rank numerators of `values` (-1 where missing) into `out` as column
    `name`; return the number of present values."""
    batches = column_batches(values, capacity)
    present = sum(batch.count for batch in batches)
    dtype = np.int32 if 2 * present < np.iinfo(np.int32).max else np.int64
    out.put(name, (np.full(rows, -1, dtype=dtype) for rows in values.chunk_rows))
    for batch in batches:
        rank_batch(values, out, name, batch)
    return present


def rank_batch(values: UnitStore, out: UnitStore, name: str, batch: Batch) -> None:
    """Fill in the numerators of one batch's values."""
    ties = batch.low == batch.high
    if not ties:
        parts = [chunk["values"][in_batch(chunk["values"], batch)]
                 for _, chunk in values.walk(["values"])]
        ordered = np.concatenate(parts)
        del parts
        ordered.sort()

    def updated():
        for index, chunk in values.walk(["values"]):
            numerators = out.chunk(name, index).copy()
            inside = in_batch(chunk["values"], batch)
            if ties:
                numerators[inside] = 2 * batch.below + batch.count - 1
            else:
                found = chunk["values"][inside]
                # Looked up in sorted order: the binary searches then walk memory in order.
                order = np.argsort(found)
                found = found[order]
                midrank = (2 * batch.below - 1 + np.searchsorted(ordered, found, side="left")
                           + np.searchsorted(ordered, found, side="right"))
                in_order = np.empty_like(midrank)
                in_order[order] = midrank
                numerators[inside] = in_order
            yield numerators

    out.put(name, updated())


def in_batch(values: np.ndarray, batch: Batch) -> np.ndarray:
    keys = ascending32(values).astype(np.int64)
    return np.isfinite(values) & (keys >= batch.low) & (keys <= batch.high)


def rank_family(attributes_dir: str | Path, family: str, columns: list[str],
                shards: list[str], capacity: int, spill: bool) -> dict:
    """Rank every listed column of a family over the pool; write the rank sidecars and the
    summary; return the summary."""
    if not columns:
        raise ValueError(f"no columns of {family!r} to rank")
    rows = [meta_rows(attributes_dir, shard) for shard in shards]
    summary = {"family": family, "shards": list(shards), "rows": rows, "columns": {}}
    out = rank_dir(attributes_dir, family)
    out.mkdir(parents=True, exist_ok=True)
    with UnitStore(rows, spill=spill) as values, UnitStore(rows, spill=spill) as numerators:
        for column in columns:
            values.put("values", (
                numeric_values(read_sidecar_column(attributes_dir, family, column, shard,
                                                   expected), f"{family}.{column}")
                for shard, expected in zip(shards, rows, strict=True)))
            present = store_midranks(values, capacity, numerators, column)
            summary["columns"][column] = {"present": present, "missing": sum(rows) - present}
            values.drop("values")
        for index, shard in enumerate(shards):
            table = pa.table({column: numerators.chunk(column, index) for column in columns})
            with atomic_path(out / f"{shard}.parquet") as tmp:
                # Numerators are all distinct-ish integers: dictionaries and compression only
                # slow reading down (every proxy reads 25 of these columns).
                pq.write_table(table, tmp, compression="none", use_dictionary=False)
    write_json(out / SUMMARY, summary)
    return summary


@dataclass
class RankTable:
    """Reads one ranked column back as percentile ranks."""

    directory: Path
    column: str
    present: int

    @classmethod
    def open(cls, pool: Pool, ref: ScoreRef) -> RankTable:
        directory = rank_dir(pool.attributes_dir, ref.family)
        summary_path = directory / SUMMARY
        if not summary_path.exists():
            raise FileNotFoundError(f"{summary_path} is missing: rank {ref.family} over the "
                                    "pool (selectlab select rank) before selecting on its ranks")
        summary = json.loads(summary_path.read_text())
        if summary["shards"] != list(pool.shards) or summary["rows"] != list(pool.rows):
            raise ValueError(f"{summary_path} ranks a different pool (shards or rows differ): "
                             f"rank {ref.family} again")
        if ref.column not in summary["columns"]:
            raise ValueError(f"{summary_path} has no ranks of {ref.column!r}: rank it with "
                             f"the family's other ranked columns")
        return cls(directory, ref.column, int(summary["columns"][ref.column]["present"]))

    def ranks(self, numerators: np.ndarray, negate: bool) -> np.ndarray:
        """float32 percentile ranks from one shard's stored numerators (NaN where missing)."""
        if negate:
            numerators = np.where(numerators < 0, -1,
                                  2 * self.present - 2 - numerators.astype(np.int64))
        return midrank_percentiles(numerators, self.present)


def read_numerators(attributes_dir: str | Path, family: str, columns: list[str], shard: str,
                    expected: int) -> dict[str, np.ndarray]:
    """One shard's stored mid-rank numerators of the given columns."""
    table = pq.read_table(rank_dir(attributes_dir, family) / f"{shard}.parquet",
                          columns=columns)
    if table.num_rows != expected:
        raise ValueError(f"rank sidecar {family}/{shard} has {table.num_rows} rows, meta has "
                         f"{expected}: rank {family} again")
    return {column: table.column(column).to_numpy() for column in columns}


def ranked_columns(refs: list[str]) -> dict[str, list[str]]:
    """Family -> the columns a set of score references needs ranked (sorted, no repeats)."""
    families: dict[str, set[str]] = {}
    for text in refs:
        ref = ScoreRef.parse(text)
        families.setdefault(ref.family, set()).add(ref.column)
    return {family: sorted(columns) for family, columns in sorted(families.items())}


def rank_scores(attributes_dir: str | Path, refs: list[str], shards: list[str],
                capacity: int = 1 << 26, spill: bool = False) -> dict[str, dict]:
    """Rank every family's columns that the references name; family -> summary."""
    return {family: rank_family(attributes_dir, family, columns, shards, capacity, spill)
            for family, columns in ranked_columns(refs).items()}
