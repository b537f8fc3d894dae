"""The selection pool: every document of the listed shards, read shard by shard.

A document is addressed by its pool position (shards in the given order, rows in order). No
per-document array of the whole pool is built here: `scan_pool` reads the meta sidecars one
shard at a time into a `UnitStore` (token counts and source codes in their smallest integer
types) that keeps them in memory or spills them to disk, and columns are read per shard
(`read_sidecar_column`) when a method walks the pool. Ids are read from the meta sidecars only
for the chosen documents, when the selection is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from selectlab.selection.store import UnitStore, smallest_uint

MISSING_CATEGORY = "(missing)"


@dataclass
class Pool:
    attributes_dir: Path
    shards: list[str]
    rows: list[int]  # documents per shard (rows of its meta sidecar)
    source_names: list[str]  # sorted; the store's `source` column codes into it

    def __len__(self) -> int:
        return sum(self.rows)

    @property
    def offsets(self) -> np.ndarray:
        """Pool position of each shard's first document (and the pool's size last)."""
        return np.r_[0, np.cumsum(self.rows)].astype(np.int64)


def sidecar_path(attributes_dir: str | Path, rater: str, shard: str) -> Path:
    return Path(attributes_dir) / rater / f"{shard}.parquet"


def meta_rows(attributes_dir: str | Path, shard: str) -> int:
    path = sidecar_path(attributes_dir, "meta", shard)
    if not path.exists():
        raise FileNotFoundError(f"meta sidecar {path} is missing")
    return pq.ParquetFile(path).metadata.num_rows


def scan_pool(attributes_dir: str | Path, shards: Sequence[str], rows: list[int], spill: bool,
              spill_dir: str | Path | None = None) -> tuple[Pool, UnitStore]:
    """The pool and a store holding `n_tokens` and `source` (codes into sorted set names);
    `rows` are the shards' meta rows (`meta_rows`)."""
    store = UnitStore(rows, spill=spill, spill_dir=spill_dir)
    sources = CategoryCodes()
    tokens, first_seen = store.writer("n_tokens"), store.writer("source_seen")
    for shard, expected in zip(shards, rows, strict=True):
        table = read_sidecar_columns(attributes_dir, "meta", ["n_tokens", "set_name"], shard,
                                     expected)
        tokens.append(smallest_uint(table.column("n_tokens").to_numpy()))
        first_seen.append(sources.add(table.column("set_name")))
    tokens.close()
    first_seen.close()
    remap, names = sources.finish()
    store.put("source", (smallest_uint(remap[store.chunk("source_seen", index)])
                         for index in range(len(rows))))
    store.drop("source_seen")
    return Pool(Path(attributes_dir), list(shards), rows, names), store


class CategoryCodes:
    """Codes a string column shard by shard without per-document strings (pyarrow
    dictionary-encodes each shard; only the distinct names are Python objects).

    `add` returns codes in first-seen order, the same for every shard; `finish` gives the remap
    from first-seen codes to codes into the sorted names, stable whatever the shard order.
    """

    def __init__(self):
        self.names: dict[str, int] = {}

    def add(self, values: pa.ChunkedArray) -> np.ndarray:
        encoded = values.combine_chunks()
        if not pa.types.is_dictionary(encoded.type):
            encoded = encoded.cast(pa.string()).dictionary_encode()
        dictionary = encoded.dictionary.to_pylist()
        missing = len(dictionary)
        index = np.asarray((encoded.indices.fill_null(missing) if encoded.null_count
                            else encoded.indices).to_numpy(zero_copy_only=False), np.int64)
        # Only values that occur get a name (a file's dictionary may hold unused ones).
        present = np.bincount(index, minlength=missing + 1) > 0
        lookup = np.full(missing + 1, -1, dtype=np.int32)
        for code in np.flatnonzero(present):
            name = MISSING_CATEGORY if code == missing else str(dictionary[code])
            lookup[code] = self.names.setdefault(name, len(self.names))
        return lookup[index]

    def finish(self) -> tuple[np.ndarray, list[str]]:
        """(first-seen code -> sorted code, sorted names)."""
        ordered = sorted(self.names)
        position = {name: i for i, name in enumerate(ordered)}
        return np.array([position[name] for name in self.names], dtype=np.int32), ordered


def read_sidecar_columns(attributes_dir: str | Path, rater: str, columns: list[str],
                         shard: str, expected: int) -> pa.Table:
    """Columns of one shard's sidecar, checked to align with the shard's meta sidecar; string
    columns come dictionary-encoded (one Python string per distinct value)."""
    path = sidecar_path(attributes_dir, rater, shard)
    if not path.exists():
        raise FileNotFoundError(f"sidecar {path} is missing: annotate {rater} for {shard}")
    parquet = pq.ParquetFile(path)
    if parquet.metadata.num_rows != expected:
        raise ValueError(f"sidecar {rater}/{shard} has {parquet.metadata.num_rows} rows, "
                         f"meta has {expected}: re-run annotation for this shard")
    schema = parquet.schema_arrow
    absent = [column for column in columns if column not in schema.names]
    if absent:
        raise ValueError(f"sidecar {rater}/{shard} has no column {absent}")
    strings = [column for column in columns
               if pa.types.is_string(schema.field(column).type)
               or pa.types.is_large_string(schema.field(column).type)]
    return pq.read_table(path, columns=columns, read_dictionary=strings or None)


def read_sidecar_column(attributes_dir: str | Path, rater: str, column: str, shard: str,
                        expected: int) -> pa.ChunkedArray:
    return read_sidecar_columns(attributes_dir, rater, [column], shard, expected).column(column)


def numeric_values(values: pa.ChunkedArray, name: str) -> np.ndarray:
    """A numeric column as float32 (missing values become NaN)."""
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
            or pa.types.is_boolean(values.type) or pa.types.is_null(values.type)):
        raise ValueError(f"{name} is of type {values.type}, not a numeric score")
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float32)


def iter_vectors(attributes_dir: str | Path, rater: str, column: str, shards: Sequence[str],
                 expected_rows: Sequence[int]):
    """Per shard: a float32 (rows, dim) matrix of a fixed-size list column, NaN rows where null."""
    for shard, expected in zip(shards, expected_rows, strict=True):
        values = read_sidecar_column(attributes_dir, rater, column, shard, expected)
        if pa.types.is_fixed_size_list(values.type):
            yield shard, fixed_size_matrix(values.combine_chunks())
            continue
        rows = values.to_pylist()
        dim = next((len(v) for v in rows if v is not None), 0)
        matrix = np.full((len(rows), dim), np.nan, dtype=np.float32)
        for i, vector in enumerate(rows):
            if vector is not None:
                if len(vector) != dim:
                    raise ValueError(f"{rater}.{column} in {shard}: row {i} has {len(vector)} "
                                     f"values, expected {dim}")
                matrix[i] = vector
        yield shard, matrix


def fixed_size_matrix(values: pa.FixedSizeListArray) -> np.ndarray:
    """(rows, size) float32 matrix of a fixed-size list array; null rows become NaN."""
    size = values.type.list_size
    child = values.values.slice(values.offset * size, len(values) * size)
    matrix = np.asarray(child.to_numpy(zero_copy_only=False), dtype=np.float32)
    matrix = matrix.reshape(len(values), size).copy()
    matrix[np.asarray(values.is_null())] = np.nan
    return matrix


def pool_positions(pool: Pool, shards: Sequence[str], rows: np.ndarray) -> np.ndarray:
    """Pool positions of documents given as (shard name, row in shard)."""
    number = {name: i for i, name in enumerate(pool.shards)}
    unknown = sorted(set(shards) - set(number))
    if unknown:
        raise ValueError(f"shards {unknown[:5]} are not in the pool")
    shard_numbers = np.array([number[name] for name in shards], dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    counts = np.asarray(pool.rows, dtype=np.int64)[shard_numbers]
    if len(rows) and ((rows < 0) | (rows >= counts)).any():
        raise ValueError("a (shard, row) pair lies outside its shard")
    return pool.offsets[shard_numbers] + rows


def selection_positions(pool: Pool, path: str | Path) -> np.ndarray:
    """Pool positions of a written selection's documents, in its order (shard names are read
    dictionary-encoded: one Python string per shard, not per document)."""
    table = pq.read_table(path, columns=["shard", "row"], read_dictionary=["shard"])
    shards = table.column("shard").combine_chunks()
    if shards.null_count:
        raise ValueError(f"{path} has documents without a shard")
    codes = np.asarray(shards.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    names = shards.dictionary.to_pylist()
    rows = table.column("row").to_numpy()
    if not len(names):
        return np.zeros(0, np.int64)
    return pool_positions(pool, names, np.zeros(len(names), np.int64))[codes] + \
        check_rows(pool, names, codes, rows)


def check_rows(pool: Pool, names: list[str], codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rows, checked to lie inside their shards."""
    number = {name: i for i, name in enumerate(pool.shards)}
    sizes = np.array([pool.rows[number[name]] for name in names], dtype=np.int64)[codes]
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) and ((rows < 0) | (rows >= sizes)).any():
        raise ValueError("a (shard, row) pair lies outside its shard")
    return rows


def shard_of(pool: Pool, positions: np.ndarray) -> np.ndarray:
    """Shard number of each pool position."""
    return np.searchsorted(pool.offsets, positions, side="right") - 1
