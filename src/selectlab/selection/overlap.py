"""Comparing selections: pairwise overlap between variants, and how much damaged text a
selection holds (for the embedded corpus, whose damage `ground_truth.parquet` records).

A document is keyed by (shard, row) packed into one uint64 (shard number from the sorted union
of shard names), so comparing selections never holds ids or text: 8 bytes per selected document
per variant.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from selectlab.selection.store import sorted_unique


def selection_keys(selection: pd.DataFrame, shard_numbers: Mapping[str, int]) -> np.ndarray:
    """Sorted unique uint64 keys (shard number << 32 | row) of a selection's documents."""
    shards = selection["shard"].map(shard_numbers).to_numpy(dtype=np.uint64)
    rows = selection["row"].to_numpy(dtype=np.uint64)
    return sorted_unique((shards << np.uint64(32)) | rows)


def read_selection_keys(paths: Mapping[str, str | Path]) -> dict[str, np.ndarray]:
    frames = {name: pd.read_parquet(path, columns=["shard", "row"])
              for name, path in paths.items()}
    shards = sorted({shard for frame in frames.values() for shard in frame["shard"].unique()})
    numbers = {shard: i for i, shard in enumerate(shards)}
    return {name: selection_keys(frame, numbers) for name, frame in frames.items()}


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    shared = len(np.intersect1d(a, b, assume_unique=True))
    union = len(a) + len(b) - shared
    return shared / union if union else 1.0


def overlap_matrix(keys: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Pairwise Jaccard index of the variants' document sets (1 on the diagonal)."""
    names = list(keys)
    matrix = np.eye(len(names))
    for i, first in enumerate(names):
        for j in range(i + 1, len(names)):
            matrix[i, j] = matrix[j, i] = jaccard(keys[first], keys[names[j]])
    return pd.DataFrame(matrix, index=names, columns=names)


def corrupted_fraction(selection: pd.DataFrame, ground_truth: pd.DataFrame,
                       weight: str = "documents") -> float:
    """Share of a selection that the corpus builder damaged (operator != "none").

    `weight` = "documents" counts documents (repeats count again), "tokens" weighs them by
    `n_tokens`. Every selected id must appear in the ground truth.
    """
    truth = ground_truth.set_index("id")["operator"]
    missing = ~selection["id"].isin(truth.index)
    if missing.any():
        raise ValueError(f"{int(missing.sum())} selected ids are not in the ground truth, "
                         f"e.g. {selection.loc[missing, 'id'].iloc[0]!r}")
    damaged = (truth.loc[selection["id"]] != "none").to_numpy()
    if weight == "documents":
        return float(damaged.mean()) if len(damaged) else 0.0
    if weight == "tokens":
        tokens = selection["n_tokens"].to_numpy(dtype=np.float64)
        return float((damaged * tokens).sum() / tokens.sum()) if tokens.sum() else 0.0
    raise ValueError(f"weight must be 'documents' or 'tokens', got {weight!r}")
