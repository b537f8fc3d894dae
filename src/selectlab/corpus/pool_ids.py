"""Document ids must be unique across the whole pool, not only within a shard.

Selections, sidecars, judgments and their cache are all keyed by id, so two documents sharing
one would get each other's scores and texts. Each tokenisation job already skips a repeated id
within its shard; this check runs once over every shard's meta sidecar. Ids are compared as
64-bit hashes first (8 bytes per document instead of the string), and only hash collisions are
looked up again as strings, so a pool of hundreds of millions of documents fits in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

EXAMPLES = 5


def _ids(path: str | Path) -> np.ndarray:
    return pq.read_table(path, columns=["id"]).column("id").to_numpy(zero_copy_only=False)


def repeated_ids(meta_paths: Sequence[str | Path]) -> dict[str, list[str]]:
    """Id -> the shards holding it, for every id found more than once (empty when unique)."""
    hashes = [pd.util.hash_array(_ids(path).astype(object)) for path in meta_paths]
    if not hashes:
        return {}
    values, counts = np.unique(np.concatenate(hashes), return_counts=True)
    suspects = values[counts > 1]
    if suspects.size == 0:
        return {}
    holders: dict[str, list[str]] = {}
    for path, shard_hashes in zip(meta_paths, hashes, strict=True):
        hits = np.isin(shard_hashes, suspects)
        if hits.any():
            shard = Path(path).name.removesuffix(".parquet")
            for doc_id in _ids(path)[hits]:
                holders.setdefault(str(doc_id), []).append(shard)
    return {doc_id: shards for doc_id, shards in holders.items() if len(shards) > 1}


def check_unique(meta_paths: Sequence[str | Path]) -> int:
    """The number of documents, after checking their ids are unique (StageError if not)."""
    from selectlab.errors import StageError

    repeated = repeated_ids(meta_paths)
    if repeated:
        shown = "; ".join(f"{doc_id!r} in {', '.join(shards)}"
                          for doc_id, shards in sorted(repeated.items())[:EXAMPLES])
        raise StageError(
            f"document ids are not unique in the pool: {len(repeated)} ids occur more than "
            f"once (e.g. {shown}). Records that carry an `id` must not repeat it across files; "
            "records without one are named by their path relative to the pool's root and "
            "their line, which cannot collide. Fix the ids in the raw files and rerun "
            "tokenize_shard for the shards named.")
    return sum(pq.ParquetFile(path).metadata.num_rows for path in meta_paths)
