"""Means and 95% intervals over replicates, and intervals of differences.

With two or more replicates (k seeds of one selection, each with its own selection and model
seed) a cell's interval is Student's t interval of the replicate mean, and a difference between
two cells uses Welch's t interval (replicates of different variants are independent runs). With
one run there is no spread over seeds; the interval then comes from lm-eval's standard error
(sampling over the benchmark's items, normal approximation) where the cell has one, and is
absent otherwise (perplexity). `basis` records which, so a reader knows what the interval
covers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

LEVEL = 0.95
REPLICATES = "replicates"
STDERR = "stderr"
NONE = "none"


@dataclass(frozen=True)
class Estimate:
    mean: float | None
    n: int = 0
    se: float | None = None  # standard error of the mean
    df: float | None = None  # t degrees of freedom; None = normal approximation
    basis: str = NONE
    values: tuple[float, ...] = ()

    @property
    def half_width(self) -> float | None:
        if self.se is None:
            return None
        if self.se == 0.0:
            return 0.0
        quantile = 0.5 + LEVEL / 2
        q = stats.norm.ppf(quantile) if self.df is None else stats.t.ppf(quantile, self.df)
        return float(q) * self.se

    @property
    def low(self) -> float | None:
        half = self.half_width
        return None if half is None or self.mean is None else self.mean - half

    @property
    def high(self) -> float | None:
        half = self.half_width
        return None if half is None or self.mean is None else self.mean + half


def estimate(values: Sequence[float | None], stderrs: Sequence[float | None] = ()) -> Estimate:
    """Summarise a cell's replicate values (None = a replicate without a value)."""
    present = [float(v) for v in values if v is not None]
    if not present:
        return Estimate(None)
    mean = sum(present) / len(present)
    n = len(present)
    if n >= 2:
        sd = math.sqrt(sum((v - mean) ** 2 for v in present) / (n - 1))
        return Estimate(mean, n, sd / math.sqrt(n), n - 1, REPLICATES, tuple(present))
    errors = [e for v, e in zip(values, stderrs, strict=False) if v is not None]
    if errors and errors[0] is not None:
        return Estimate(mean, 1, float(errors[0]), None, STDERR, tuple(present))
    return Estimate(mean, 1, None, None, NONE, tuple(present))


def difference(a: Estimate, b: Estimate) -> Estimate:
    """a - b with its interval: Welch's when both have replicates, else the normal one from
    whatever standard errors both carry; without them, a point with no interval."""
    if a.mean is None or b.mean is None:
        return Estimate(None)
    mean = a.mean - b.mean
    n = min(a.n, b.n)
    if a.basis == REPLICATES and b.basis == REPLICATES:
        se = math.sqrt(a.se**2 + b.se**2)  # type: ignore[operator]
        if se == 0.0:
            return Estimate(mean, n, 0.0, None, REPLICATES)
        df = se**4 / (a.se**4 / (a.n - 1) + b.se**4 / (b.n - 1))  # type: ignore[operator]
        return Estimate(mean, n, se, df, REPLICATES)
    if a.se is not None and b.se is not None:
        basis = STDERR if STDERR in (a.basis, b.basis) else REPLICATES
        return Estimate(mean, n, math.sqrt(a.se**2 + b.se**2), None, basis)
    return Estimate(mean, n, None, None, NONE)


# One cell of a paper table as the cells file stores it (selectlab.papers.cells.CELL_COLUMNS).
def cell_record(table: str, block: str, variant: str, column: str, est: Estimate,
                paper_row: str | None = None) -> dict:
    """`paper_row`: the row as the paper names it (a re-run row's original; default `variant`),
    which published numbers and claims use."""
    return {"table": table, "block": block, "variant": variant, "column": column,
            "paper_row": paper_row or variant,
            "mean": est.mean, "low": est.low, "high": est.high, "n": est.n, "se": est.se,
            "basis": est.basis, "values": ";".join(repr(v) for v in est.values)}
