"""What MATES probes and scores: a document's unit, and the documents already trained on.

MATES probes and selects fixed training sequences (1,024 tokens). The pool here is documents, so
a document's unit is its first `unit_tokens` tokens of the run's tokenizer: the probe job trains
one step on exactly those tokens, the influence model learns from their decoded text, and the
annotation scores every document by the same decoded prefix. A document shorter than the unit
is its own unit; a longer one is judged by its beginning.

Documents of earlier stages are excluded by id. Ids are compared as 64-bit hashes, so that a
full-scale stage (tens of millions of ids) fits in a few hundred MB.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

EARLIER_STAGE = "trained on in an earlier MATES stage"


def id_hashes(ids: Sequence[str]) -> np.ndarray:
    """uint64 hash of each id (pandas' stable object hash)."""
    return pd.util.hash_array(np.asarray(list(ids), dtype=object))


def earlier_ids(selection_paths: Sequence[str | Path]) -> np.ndarray:
    """Sorted unique hashes of the documents of the given selections."""
    parts = [id_hashes(pq.read_table(path, columns=["id"]).column("id").to_pylist())
             for path in selection_paths]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.uint64)


def is_excluded(ids: Sequence[str], excluded: np.ndarray) -> np.ndarray:
    if not len(excluded):
        return np.zeros(len(ids), dtype=bool)
    hashes = id_hashes(ids)
    where = np.searchsorted(excluded, hashes).clip(max=len(excluded) - 1)
    return excluded[where] == hashes


def unit_ids(token_ids: Sequence[int], unit_tokens: int) -> list[int]:
    return list(token_ids[:unit_tokens])


def unit_texts(tokenizer, texts: Sequence[str], unit_tokens: int) -> list[str]:
    """The decoded first `unit_tokens` tokens of each text (the run tokenizer, no specials)."""
    from selectlab.annotate.torch_models import clip_texts
    from selectlab.tokens import encode_texts

    encoded = encode_texts(tokenizer, clip_texts(texts, unit_tokens))
    return [tokenizer.decode(ids[:unit_tokens]) for ids in encoded]
