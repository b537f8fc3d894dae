"""Strata and eligibility filters built from the pool and categorical sidecar columns.

`strata` in a variant's params lists what a stratum is made of: `set_name` (the source, from the
meta sidecar) and/or categorical score references such as `dataman.domain`; `[]` is one stratum
for the whole pool. Codes are compact int32s in sorted-name order, named `a/b` for combinations.

`where` keeps only documents whose column takes one of the listed values: numbers compare with a
numeric score column, strings with a categorical one (missing values never match).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from selectlab.selection.pool import Pool
from selectlab.selection.scores import ScoreRef

SET_NAME = "set_name"
WHOLE_POOL = "all"
CategoryReader = Callable[[ScoreRef], tuple[np.ndarray, list[str]]]
ScoreReader = Callable[[ScoreRef], np.ndarray]


def stratum_codes(pool: Pool, keys: list[str],
                  read_category: CategoryReader) -> tuple[np.ndarray, list[str]]:
    """(int32 code per document, name per code) for the given stratum keys."""
    if not keys:
        return np.zeros(len(pool), dtype=np.int32), [WHOLE_POOL]
    codes = np.zeros(len(pool), dtype=np.int64)
    names: list[list[str]] = [[]]
    for key in keys:
        if key == SET_NAME:
            part, part_names = pool.source, pool.source_names
        else:
            ref = ScoreRef.parse(key)
            if ref.negate:
                raise ValueError(f"stratum key {key!r} cannot be negated")
            part, part_names = read_category(ref)
        codes = codes * len(part_names) + part
        names = [[*prefix, name] for prefix in names for name in part_names]
    present, compact = np.unique(codes, return_inverse=True)
    return compact.astype(np.int32), ["/".join(names[int(code)]) for code in present]


def where_mask(pool: Pool, where: dict, read_score: ScoreReader,
               read_category: CategoryReader) -> np.ndarray:
    """Boolean mask of documents passing every `where` condition."""
    keep = np.ones(len(pool), dtype=bool)
    for key, allowed in where.items():
        ref = ScoreRef.parse(key)
        if not isinstance(allowed, list) or not allowed:
            raise ValueError(f"where {key!r}: expected a non-empty list of values")
        if all(isinstance(value, (int, float)) and not isinstance(value, bool)
               for value in allowed):
            values = read_score(ref)
            keep &= np.isin(values, np.asarray(allowed, dtype=np.float32))
        elif all(isinstance(value, str) for value in allowed):
            codes, names = read_category(ref)
            wanted = [i for i, name in enumerate(names) if name in set(allowed)]
            keep &= np.isin(codes, wanted)
        else:
            raise ValueError(f"where {key!r}: values must be all numbers or all strings")
    return keep
