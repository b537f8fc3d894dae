"""The selection pool: a few numeric arrays per document, never the text or the ids.

A document is addressed by (shard number, row in shard); per document the pool holds about 14
bytes plus whatever score columns a method asks for, so that a pool of 10^9 documents fits in
memory on one node. Ids are looked up from the meta sidecars only for the chosen documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


@dataclass
class Pool:
    shards: list[str]
    shard_index: np.ndarray  # uint32, index into `shards`
    row: np.ndarray  # uint32, row within the shard's sidecars
    n_tokens: np.ndarray  # int64
    source: np.ndarray  # int32 code into `source_names`
    source_names: list[str]

    def __len__(self) -> int:
        return len(self.row)


def sidecar_path(attributes_dir: str | Path, rater: str, shard: str) -> Path:
    return Path(attributes_dir) / rater / f"{shard}.parquet"


def load_pool(attributes_dir: str | Path, shards: Sequence[str]) -> Pool:
    """Read `n_tokens` and `set_name` from every shard's meta sidecar."""
    indices, rows, lengths = [], [], []
    categories = CategoryCodes()
    for number, shard in enumerate(shards):
        table = pq.read_table(sidecar_path(attributes_dir, "meta", shard),
                              columns=["n_tokens", "set_name"])
        n = table.num_rows
        indices.append(np.full(n, number, dtype=np.uint32))
        rows.append(np.arange(n, dtype=np.uint32))
        lengths.append(table.column("n_tokens").to_numpy().astype(np.int64))
        categories.add(table.column("set_name"))
    codes, names = categories.finish()
    return Pool(
        shards=list(shards),
        shard_index=np.concatenate(indices) if indices else np.zeros(0, np.uint32),
        row=np.concatenate(rows) if rows else np.zeros(0, np.uint32),
        n_tokens=np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
        source=codes,
        source_names=names,
    )


class CategoryCodes:
    """Builds int32 codes for a string column shard by shard, without per-document strings
    (pyarrow dictionary-encodes each shard; only the distinct names are Python objects)."""

    def __init__(self):
        self.names: dict[str, int] = {}
        self.parts: list[np.ndarray] = []

    def add(self, values: pa.ChunkedArray) -> None:
        encoded = values.combine_chunks().cast(pa.string()).dictionary_encode()
        local = [self.names.setdefault(str(name), len(self.names))
                 for name in encoded.dictionary.to_pylist()]
        if encoded.null_count:
            local.append(self.names.setdefault(MISSING_CATEGORY, len(self.names)))
        lookup = np.array(local, dtype=np.int32)
        index = encoded.indices.fill_null(len(local) - 1) if encoded.null_count \
            else encoded.indices
        self.parts.append(lookup[np.asarray(index.to_numpy(zero_copy_only=False),
                                            dtype=np.int64)] if len(encoded) else
                          np.zeros(0, np.int32))

    def finish(self) -> tuple[np.ndarray, list[str]]:
        """(codes into the sorted names, sorted names): stable whatever the shard order."""
        codes = np.concatenate(self.parts) if self.parts else np.zeros(0, np.int32)
        ordered = sorted(self.names)
        position = {name: i for i, name in enumerate(ordered)}
        remap = np.array([position[name] for name in self.names], dtype=np.int32)
        return (remap[codes] if len(codes) else codes.astype(np.int32)), ordered


def load_score(attributes_dir: str | Path, rater: str, column: str,
               shards: Sequence[str], expected_rows: Sequence[int]) -> np.ndarray:
    """One score column over the whole pool as float32 (missing values become NaN).

    Sidecars must have exactly as many rows as the meta sidecar of the same shard.
    """
    parts = []
    for shard, expected in zip(shards, expected_rows, strict=True):
        values = read_sidecar_column(attributes_dir, rater, column, shard, expected)
        if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
                or pa.types.is_boolean(values.type) or pa.types.is_null(values.type)):
            raise ValueError(f"{rater}.{column} is of type {values.type}, not a numeric score")
        parts.append(np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float32))
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)


MISSING_CATEGORY = "(missing)"


def read_sidecar_column(attributes_dir: str | Path, rater: str, column: str, shard: str,
                        expected: int) -> pa.ChunkedArray:
    """One column of one shard's sidecar, checked to align with the shard's meta sidecar."""
    path = sidecar_path(attributes_dir, rater, shard)
    if not path.exists():
        raise FileNotFoundError(f"sidecar {path} is missing: annotate {rater} for {shard}")
    table = pq.read_table(path, columns=[column])
    if table.num_rows != expected:
        raise ValueError(f"sidecar {rater}/{shard} has {table.num_rows} rows, "
                         f"meta has {expected}: re-run annotation for this shard")
    return table.column(column)


def load_category(attributes_dir: str | Path, rater: str, column: str, shards: Sequence[str],
                  expected_rows: Sequence[int]) -> tuple[np.ndarray, list[str]]:
    """A categorical column (e.g. `dataman.domain`) as int32 codes into sorted names.

    Missing values get their own category, MISSING_CATEGORY, so no document is dropped.
    """
    categories = CategoryCodes()
    for shard, expected in zip(shards, expected_rows, strict=True):
        categories.add(read_sidecar_column(attributes_dir, rater, column, shard, expected))
    return categories.finish()


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


def rows_per_shard(pool: Pool) -> list[int]:
    return np.bincount(pool.shard_index, minlength=len(pool.shards)).tolist()


def pool_positions(pool: Pool, shards: Sequence[str], rows: np.ndarray) -> np.ndarray:
    """Pool positions of documents given as (shard name, row in shard)."""
    offsets = np.r_[0, np.cumsum(rows_per_shard(pool))].astype(np.int64)
    number = {name: i for i, name in enumerate(pool.shards)}
    unknown = sorted(set(shards) - set(number))
    if unknown:
        raise ValueError(f"shards {unknown[:5]} are not in the pool")
    shard_numbers = np.array([number[name] for name in shards], dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    counts = np.asarray(rows_per_shard(pool), dtype=np.int64)[shard_numbers]
    if len(rows) and ((rows < 0) | (rows >= counts)).any():
        raise ValueError("a (shard, row) pair lies outside its shard")
    return offsets[shard_numbers] + rows


def chosen_documents(attributes_dir: str | Path, pool: Pool, chosen: np.ndarray) -> pd.DataFrame:
    """The chosen documents in the given order, with ids and token offsets from the sidecars."""
    frames = []
    for number in np.unique(pool.shard_index[chosen]):
        shard = pool.shards[number]
        positions = np.flatnonzero(pool.shard_index[chosen] == number)
        rows = pool.row[chosen[positions]]
        meta = pq.read_table(sidecar_path(attributes_dir, "meta", shard),
                             columns=["id", "set_name", "n_tokens", "token_offset"]).to_pandas()
        part = meta.iloc[rows].reset_index(drop=True)
        part.insert(0, "shard", shard)
        part.insert(1, "row", rows.astype(np.int64))
        part["rank"] = positions
        frames.append(part)
    if not frames:
        return pd.DataFrame(columns=["shard", "row", "id", "set_name", "n_tokens", "token_offset",
                                     "rank"])
    return pd.concat(frames).sort_values("rank").reset_index(drop=True)
