"""A selection's training order and its `selection.parquet`, in memory bounded by the ceiling.

The file lists the chosen documents in training order with their ids and token offsets, which
only the meta sidecars hold. They are looked up shard by shard (one shard's meta in memory at a
time); when the selection is larger than `rows_per_bucket`, rows go to temporary bucket files by
training rank and each bucket is sorted and appended in turn (an external bucket sort), so
memory holds one bucket, not the selection's ids.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from selectlab.selection.pool import (
    Pool,
    numeric_values,
    read_sidecar_column,
    shard_of,
    sidecar_path,
)
from selectlab.selection.scores import ScoreRef, oriented
from selectlab.shards import atomic_path

META_COLUMNS = ["id", "set_name", "n_tokens", "token_offset"]
SCHEMA = pa.schema([("shard", pa.string()), ("row", pa.int64()), ("id", pa.string()),
                    ("set_name", pa.string()), ("n_tokens", pa.int64()),
                    ("token_offset", pa.int64()), ("rank", pa.int64())])


def gather_score(pool: Pool, positions: np.ndarray, text: str) -> np.ndarray:
    """A score (oriented) at the given pool positions, read shard by shard."""
    ref = ScoreRef.parse(text)
    values = np.empty(len(positions), dtype=np.float32)
    shard = shard_of(pool, positions)
    order = np.argsort(shard, kind="stable")
    edges = np.searchsorted(shard[order], np.arange(len(pool.shards) + 1))
    for number in np.flatnonzero(np.diff(edges)):
        index = order[edges[number]:edges[number + 1]]
        column = numeric_values(read_sidecar_column(pool.attributes_dir, ref.family, ref.column,
                                                    pool.shards[number], pool.rows[number]),
                                f"{ref.family}.{ref.column}")
        values[index] = oriented(column, ref)[positions[index] - pool.offsets[number]]
    return values


def training_order(chosen: np.ndarray, params: dict, rng: np.random.Generator,
                   pool: Pool) -> np.ndarray:
    """Shuffle the chosen documents, or sort them by a score for curriculum variants.

    Documents without the score go last in either direction.
    """
    order_by = params.get("order_by")
    if not order_by:
        return chosen[rng.permutation(len(chosen))]
    keys = gather_score(pool, chosen, order_by)
    if params.get("order", "ascending") == "descending":
        keys = -keys
    return chosen[np.argsort(keys, kind="stable")]


def shard_rows(pool: Pool, number: int, rows: np.ndarray, ranks: np.ndarray) -> pa.Table:
    """The selection's rows of one shard: meta columns of the given rows, with their ranks."""
    shard = pool.shards[number]
    path = sidecar_path(pool.attributes_dir, "meta", shard)
    meta = pq.read_table(path, columns=META_COLUMNS)
    if meta.num_rows != pool.rows[number]:
        raise ValueError(f"meta sidecar {shard} changed while selecting")
    meta = meta.take(pa.array(rows))
    return pa.table([
        pa.repeat(pa.scalar(shard, pa.string()), len(rows)), pa.array(rows, pa.int64()),
        meta.column("id").cast(pa.string()), meta.column("set_name").cast(pa.string()),
        meta.column("n_tokens").cast(pa.int64()), meta.column("token_offset").cast(pa.int64()),
        pa.array(ranks, pa.int64())], schema=SCHEMA)


def write_selection(pool: Pool, ordered: np.ndarray, path: str | Path, rows_per_bucket: int,
                    spill_dir: str | Path | None = None) -> None:
    """`selection.parquet`: the documents of `ordered` in that order (rank = index)."""
    rows_per_bucket = max(1, rows_per_bucket)
    buckets = max(1, -(-len(ordered) // rows_per_bucket))
    shard = shard_of(pool, ordered)
    by_shard = np.argsort(shard, kind="stable")  # ranks ascending inside each shard
    edges = np.searchsorted(shard[by_shard], np.arange(len(pool.shards) + 1))
    pieces: list[list] = [[] for _ in range(buckets)]
    scratch = Path(tempfile.mkdtemp(prefix="selectlab-out-", dir=spill_dir)) \
        if buckets > 1 else None
    try:
        for number in np.flatnonzero(np.diff(edges)):
            ranks = by_shard[edges[number]:edges[number + 1]]
            table = shard_rows(pool, number, ordered[ranks] - pool.offsets[number], ranks)
            cuts = np.searchsorted(ranks // rows_per_bucket, np.arange(buckets + 1))
            for bucket in np.flatnonzero(np.diff(cuts)):
                part = table.slice(cuts[bucket], cuts[bucket + 1] - cuts[bucket])
                if scratch is None:
                    pieces[bucket].append(part)
                else:
                    piece = scratch / f"{bucket}.{number}.parquet"
                    pq.write_table(part, piece)
                    pieces[bucket].append(piece)
            del table
        with atomic_path(path) as tmp, pq.ParquetWriter(tmp, SCHEMA) as writer:
            for parts in pieces:
                if not parts:
                    continue
                tables = [pq.read_table(p) if isinstance(p, Path) else p for p in parts]
                bucket = pa.concat_tables(tables)
                del tables
                writer.write_table(bucket.take(pc.sort_indices(bucket, [("rank", "ascending")])))
            if not len(ordered):
                writer.write_table(SCHEMA.empty_table())
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
