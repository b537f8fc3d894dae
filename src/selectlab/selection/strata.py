"""Strata and eligibility filters built from the pool and categorical sidecar columns.

`strata` in a variant's params lists what a stratum is made of: `set_name` (the source, from the
meta sidecar) and/or categorical score references such as `dataman.domain`; `[]` is one stratum
for the whole pool. Codes are compact, in sorted-name order, named `a/b` for combinations; they
are written to the store's `stratum` column shard by shard.

`where` keeps only documents whose column takes one of the listed values: numbers compare with a
numeric score column, strings with a categorical one (missing values never match).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from selectlab.selection.columns import ScoreColumn
from selectlab.selection.pool import (
    MISSING_CATEGORY,
    CategoryCodes,
    Pool,
    read_sidecar_column,
)
from selectlab.selection.scores import ScoreRef
from selectlab.selection.store import UnitStore, smallest_uint, sorted_unique

SET_NAME = "set_name"
WHOLE_POOL = "all"


@dataclass
class Strata:
    names: list[str]
    pool_documents: np.ndarray  # int64 per stratum
    pool_tokens: np.ndarray  # int64 per stratum

    def quotas(self, budget: int) -> np.ndarray:
        """Token quota per stratum, proportional to the stratum's tokens in the pool."""
        tokens = self.pool_tokens.astype(np.float64)
        total = tokens.sum()
        if total == 0:
            raise ValueError("the pool has no tokens to select from")
        return budget * tokens / total


def category_codes(pool: Pool, store: UnitStore, key: str, column: str) -> tuple[str, list[str]]:
    """(store column holding one stratum key's codes into its sorted names, the names).

    `set_name` is the pool's `source` column; any other key is read and stored as `column`.
    """
    if key == SET_NAME:
        return "source", pool.source_names
    ref = ScoreRef.parse(key)
    if ref.negate:
        raise ValueError(f"stratum key {key!r} cannot be negated")
    categories = CategoryCodes()
    store.put(column, (categories.add(read_sidecar_column(pool.attributes_dir, ref.family,
                                                          ref.column, shard, rows))
                       for shard, rows in zip(pool.shards, pool.rows, strict=True)))
    remap, names = categories.finish()
    store.put(column, (smallest_uint(remap[store.chunk(column, i)])
                       for i in range(len(pool.rows))))
    return column, names


def build_strata(pool: Pool, store: UnitStore, keys: list[str],
                 column: str = "stratum") -> Strata:
    """Write the stratum code of every document to the store's `column`."""
    parts = [category_codes(pool, store, key, f"{column}.key{i}") for i, key in enumerate(keys)]
    sizes = [len(names) for _, names in parts]

    def combined(index: int) -> np.ndarray:
        codes = np.zeros(pool.rows[index], dtype=np.int64)
        for (name, _), size in zip(parts, sizes, strict=True):
            codes = codes * size + store.chunk(name, index)
        return codes

    present = present_codes((combined(i) for i in range(len(pool.rows))),
                            int(np.prod(sizes, dtype=np.float64)))
    n = len(present)
    documents, tokens = np.zeros(n, np.int64), np.zeros(n, np.int64)

    def compact() -> Iterator[np.ndarray]:
        for index in range(len(pool.rows)):
            codes = np.searchsorted(present, combined(index))
            documents[:] += np.bincount(codes, minlength=n)
            tokens[:] += np.bincount(codes, weights=store.chunk("n_tokens", index),
                                     minlength=n).astype(np.int64)
            yield smallest_uint(codes)

    store.put(column, compact())
    for name, _ in parts:
        if name != "source":
            store.drop(name)
    names = [code_name(int(code), parts, sizes) for code in present] if keys \
        else [WHOLE_POOL] * min(n, 1)
    return Strata(names, documents, tokens)


def present_codes(chunks, bound: int) -> np.ndarray:
    """Sorted distinct codes over all chunks; codes lie in [0, bound)."""
    if bound <= 1 << 24:  # a presence table is cheaper than sorting every chunk
        seen = np.zeros(bound, dtype=bool)
        for codes in chunks:
            seen[codes] = True
        return np.flatnonzero(seen)
    found = np.zeros(0, np.int64)
    for codes in chunks:
        found = sorted_unique(np.concatenate([found, sorted_unique(codes)]))
    return found


def code_name(code: int, parts: list, sizes: list[int]) -> str:
    """`a/b` for a combined code (mixed radix over the keys' sorted names)."""
    names = []
    for (_, part_names), size in zip(reversed(parts), reversed(sizes), strict=True):
        code, digit = divmod(code, size)
        names.append(part_names[digit])
    return "/".join(reversed(names))


class WhereFilter:
    """Per shard, which documents pass every `where` condition."""

    def __init__(self, pool: Pool, where: dict, missing: dict[str, int]):
        self.pool, self.conditions = pool, []
        for key, allowed in where.items():
            ref = ScoreRef.parse(key)
            if not isinstance(allowed, list) or not allowed:
                raise ValueError(f"where {key!r}: expected a non-empty list of values")
            if all(isinstance(value, (int, float)) and not isinstance(value, bool)
                   for value in allowed):
                self.conditions.append((ScoreColumn(pool, ref, missing),
                                        np.asarray(allowed, dtype=np.float32)))
            elif all(isinstance(value, str) for value in allowed):
                self.conditions.append((ref, set(allowed)))
            else:
                raise ValueError(f"where {key!r}: values must be all numbers or all strings")

    def chunks(self) -> Iterator[np.ndarray]:
        walks = [condition.chunks() if isinstance(condition, ScoreColumn) else None
                 for condition, _ in self.conditions]
        for shard, rows in zip(self.pool.shards, self.pool.rows, strict=True):
            keep = np.ones(rows, dtype=bool)
            for (condition, allowed), walk in zip(self.conditions, walks, strict=True):
                if walk is not None:
                    keep &= np.isin(next(walk), allowed)
                else:
                    keep &= category_in(self.pool, condition, shard, rows, allowed)
            yield keep
        for walk in walks:  # finish the score walks, so their missing values are counted
            if walk is not None:
                next(walk, None)


def category_in(pool: Pool, ref: ScoreRef, shard: str, rows: int, allowed: set) -> np.ndarray:
    values = read_sidecar_column(pool.attributes_dir, ref.family, ref.column, shard, rows)
    categories = CategoryCodes()
    codes = categories.add(values)
    names = list(categories.names)
    wanted = np.array([name in allowed for name in names] + [False], dtype=bool)
    return wanted[codes] if len(names) else np.zeros(rows, dtype=bool)


__all__ = ["MISSING_CATEGORY", "SET_NAME", "WHOLE_POOL", "Strata", "WhereFilter",
           "build_strata"]
