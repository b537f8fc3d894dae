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
    indices, rows, lengths, sources = [], [], [], []
    for number, shard in enumerate(shards):
        table = pq.read_table(sidecar_path(attributes_dir, "meta", shard),
                              columns=["n_tokens", "set_name"])
        n = table.num_rows
        indices.append(np.full(n, number, dtype=np.uint32))
        rows.append(np.arange(n, dtype=np.uint32))
        lengths.append(table.column("n_tokens").to_numpy().astype(np.int64))
        sources.append(table.column("set_name").to_numpy(zero_copy_only=False))
    names, codes = np.unique(np.concatenate(sources) if sources else np.array([], dtype=object),
                             return_inverse=True)
    return Pool(
        shards=list(shards),
        shard_index=np.concatenate(indices) if indices else np.zeros(0, np.uint32),
        row=np.concatenate(rows) if rows else np.zeros(0, np.uint32),
        n_tokens=np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
        source=codes.astype(np.int32),
        source_names=[str(name) for name in names],
    )


def load_score(attributes_dir: str | Path, rater: str, column: str,
               shards: Sequence[str], expected_rows: Sequence[int]) -> np.ndarray:
    """One score column over the whole pool as float32 (missing values become NaN).

    Sidecars must have exactly as many rows as the meta sidecar of the same shard.
    """
    parts = []
    for shard, expected in zip(shards, expected_rows, strict=True):
        table = pq.read_table(sidecar_path(attributes_dir, rater, shard), columns=[column])
        if table.num_rows != expected:
            raise ValueError(f"sidecar {rater}/{shard} has {table.num_rows} rows, "
                             f"meta has {expected}: re-run annotation for this shard")
        values = table.column(column).to_numpy(zero_copy_only=False)
        parts.append(np.asarray(values, dtype=np.float32))
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)


def rows_per_shard(pool: Pool) -> list[int]:
    return np.bincount(pool.shard_index, minlength=len(pool.shards)).tolist()


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
