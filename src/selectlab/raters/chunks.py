"""Documents longer than a rater's window: scored per chunk, averaged by chunk length.

QuRating annotates a document by cutting it into segments of at most 512 tokens, rating each
and averaging the ratings weighted by segment length; every rater here does the same with its
configured window. A chunk's weight is its number of content tokens (special tokens such as
[CLS] do not count). A document without any token has no chunk and gets no score: the rater
reports it as missing instead of inventing a value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def split_into_chunks(token_ids: Sequence[int], size: int) -> list[list[int]]:
    """Consecutive pieces of at most `size` tokens covering `token_ids` in order."""
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    ids = list(token_ids)
    return [ids[start:start + size] for start in range(0, len(ids), size)]


@dataclass(frozen=True)
class ChunkPlan:
    """All chunks of a batch of documents, flattened, with the document each belongs to."""

    chunks: list[list[int]]
    owner: np.ndarray  # int64, document index of each chunk
    weight: np.ndarray  # float64, content tokens of each chunk
    n_docs: int

    @property
    def has_chunks(self) -> np.ndarray:
        """Per document: whether it has at least one chunk (i.e. at least one token)."""
        return np.bincount(self.owner, minlength=self.n_docs) > 0


def plan_chunks(documents: Sequence[Sequence[int]], size: int) -> ChunkPlan:
    chunks: list[list[int]] = []
    owner: list[int] = []
    for index, token_ids in enumerate(documents):
        pieces = split_into_chunks(token_ids, size)
        chunks += pieces
        owner += [index] * len(pieces)
    weight = np.array([len(c) for c in chunks], dtype=np.float64)
    return ChunkPlan(chunks, np.array(owner, dtype=np.int64), weight, len(documents))


def weighted_mean(values: np.ndarray, plan: ChunkPlan) -> np.ndarray:
    """Per document, the mean of its chunks' `values` rows weighted by chunk length.

    `values` has one row per chunk (any trailing shape); documents without chunks get NaN.
    """
    values = np.asarray(values, dtype=np.float64)
    if len(values) != len(plan.chunks):
        raise ValueError(f"{len(values)} rows for {len(plan.chunks)} chunks")
    tail = values.shape[1:]
    weights = plan.weight.reshape((-1,) + (1,) * len(tail))
    sums = np.zeros((plan.n_docs, *tail))
    np.add.at(sums, plan.owner, values * weights)
    totals = np.zeros(plan.n_docs)
    np.add.at(totals, plan.owner, plan.weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / totals.reshape((-1,) + (1,) * len(tail))
