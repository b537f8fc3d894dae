"""Score references (`family.column`, `-family.column`) and the scalings methods put scores on.

A reference names one sidecar column; a leading minus negates it, so that "higher is better"
holds for every score a method reads (`-refppl.ref_nll` = low perplexity first; `-qurater.x`
= QuRating's inverse sampling). Missing values are NaN and never chosen; callers count them.

Scalings:
- `z_scores`: (x - mean) / std over the pool's non-missing values, QuRating's normalisation
  (its temperatures are in units of one standard deviation).
- `percentile_ranks`: each value's mid-rank among the pool's non-missing values, scaled to
  [0, 1] (ties share their average rank). Meta-rater, Mean and Intersection combine scores
  whose ranges differ by orders of magnitude (word counts, fractions, log importance weights,
  1-5 ratings); ranks put them on one scale, are untouched by heavy tails and outliers, and keep
  each score's own order, so the top-k of a single score is the same on either scale.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

REF_PATTERN = re.compile(r"^(-?)([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z0-9_]+)$")
# Mid-ranks are computed in slices of this many documents to bound the index temporaries.
RANK_CHUNK = 1 << 16


@dataclass(frozen=True)
class ScoreRef:
    family: str
    column: str
    negate: bool = False

    @classmethod
    def parse(cls, text: str) -> ScoreRef:
        match = REF_PATTERN.match(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"score reference {text!r} is not of the form family.column "
                             "(optionally with a leading '-')")
        return cls(match.group(2), match.group(3), bool(match.group(1)))

    def __str__(self) -> str:
        return f"{'-' if self.negate else ''}{self.family}.{self.column}"


def oriented(values: np.ndarray, ref: ScoreRef) -> np.ndarray:
    """float32 values, negated for a '-' reference."""
    values = values.astype(np.float32, copy=False)
    return -values if ref.negate else values


def missing_count(values: np.ndarray) -> int:
    return int(np.isnan(values).sum())


def z_scores(values: np.ndarray) -> np.ndarray:
    """(x - mean) / std over the non-missing values, as float32; NaN stays NaN."""
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        raise ValueError("no document has this score")
    mean = float(finite.mean(dtype=np.float64))
    std = float(finite.std(dtype=np.float64))
    out = values.astype(np.float32, copy=True)
    out -= np.float32(mean)
    if std > 0:
        out /= np.float32(std)
    return out


def percentile_ranks(values: np.ndarray) -> np.ndarray:
    """Mid-rank of every value among the non-missing ones, in [0, 1]; NaN stays NaN.

    One argsort (NaN sorts last), then each value's tie group is found by binary search in the
    sorted values, slice by slice in sorted order (so the searches walk memory in order).
    """
    order = np.argsort(values)
    count = int(np.isfinite(values).sum())
    if count == 0:
        raise ValueError("no document has this score")
    ordered = values[order[:count]]
    out = np.full(len(values), np.nan, dtype=np.float32)
    half_step = 0.5 / (count - 1) if count > 1 else 0.0
    for start in range(0, count, RANK_CHUNK):
        chunk = ordered[start:start + RANK_CHUNK]
        left = np.searchsorted(ordered, chunk, side="left")
        left += np.searchsorted(ordered, chunk, side="right")
        ranks = (left - 1) * half_step if count > 1 else np.full(len(chunk), 0.5)
        out[order[start:start + len(chunk)]] = ranks
    return out
