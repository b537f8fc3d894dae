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
    """(x - mean) / std over the non-missing values, as float32; NaN stays NaN.

    Mean and std are computed exactly (`ExactMoments`), so a pool walked shard by shard gets
    the very same values.
    """
    moments = ExactMoments()
    moments.add(values)
    return z_normalised(values, *moments.mean_std())


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


def midrank_percentiles(midranks: np.ndarray, count: int) -> np.ndarray:
    """`percentile_ranks` from stored mid-rank numerators L = (values below) + (values at or
    below) - 1 over `count` present values; L < 0 marks a missing value (NaN)."""
    if count > 1:
        out = (midranks * (0.5 / (count - 1))).astype(np.float32)
    else:
        out = np.full(len(midranks), 0.5, dtype=np.float32)
    missing = midranks < 0
    if missing.any():
        out[missing] = np.nan
    return out


class ExactMoments:
    """Sum and sum of squares of float32 values, exactly, whatever the order they come in.

    A float32 is M * 2^(e - 24) with |M| < 2^24; sums of M (in 12-bit halves) and of M^2 (in
    three parts) per exponent stay exact in float64 for up to 2^28 values a call, and are
    accumulated as Python integers. The mean and standard deviation are then the correctly
    rounded float64 values, so chunked and whole-pool computations agree to the last bit.
    """

    EXPONENTS = 128 + 149  # frexp exponents of float32 run from -148 to 128
    PIECE = 1 << 26

    def __init__(self):
        self.count = 0
        self.sums = [0] * self.EXPONENTS
        self.squares = [0] * self.EXPONENTS

    def add(self, values: np.ndarray) -> None:
        values = values[np.isfinite(values)].astype(np.float32, copy=False)
        for start in range(0, len(values), self.PIECE):
            self.add_piece(values[start:start + self.PIECE])

    def add_piece(self, values: np.ndarray) -> None:
        mantissa, exponent = np.frexp(values)
        whole = (mantissa * np.float32(1 << 24)).astype(np.int64)
        bucket = exponent.astype(np.int64) + 148
        high, low = whole >> 12, whole & 0xFFF
        size = np.abs(whole)
        size_high, size_low = size >> 12, size & 0xFFF

        def per_exponent(weights):
            return np.bincount(bucket, weights=weights.astype(np.float64),
                               minlength=self.EXPONENTS)

        parts = (per_exponent(high), per_exponent(low), per_exponent(size_high * size_high),
                 per_exponent(size_high * size_low), per_exponent(size_low * size_low))
        for e in np.flatnonzero(np.bincount(bucket, minlength=self.EXPONENTS)):
            self.sums[e] += (int(parts[0][e]) << 12) + int(parts[1][e])
            self.squares[e] += ((int(parts[2][e]) << 24) + (int(parts[3][e]) << 13)
                                + int(parts[4][e]))
        self.count += len(values)

    def mean_std(self) -> tuple[float, float]:
        """(mean, population standard deviation) as float64, computed exactly then rounded."""
        from fractions import Fraction

        if self.count == 0:
            raise ValueError("no document has this score")
        total = sum(Fraction(s) * Fraction(2) ** (e - 148 - 24)
                    for e, s in enumerate(self.sums) if s)
        squares = sum(Fraction(s) * Fraction(2) ** (2 * (e - 148 - 24))
                      for e, s in enumerate(self.squares) if s)
        mean = float(total / self.count)
        m = Fraction(mean)
        variance = (squares - 2 * m * total + self.count * m * m) / self.count
        return mean, float(np.sqrt(float(variance)))


def z_normalised(values: np.ndarray, mean: float, std: float) -> np.ndarray:
    """(x - mean) / std as float32, the pool's mean and std given; NaN stays NaN."""
    out = values.astype(np.float32, copy=True)
    out -= np.float32(mean)
    if std > 0:
        out /= np.float32(std)
    return out
