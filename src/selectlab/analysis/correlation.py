"""Correlations between scores: DataMan's Pearson heatmap of its 14 ratings (Fig. 5),
Meta-rater's Spearman heatmap of all scores (Fig. 4), and each DataMan rating against the
reference LM's negative log-likelihood (DataMan Fig. 4).

Every coefficient uses the documents that have both values (pairwise complete), so a document
one rater could not score still counts for the others; pandas computes them (Spearman = Pearson
on average ranks).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from selectlab.analysis.sample import qualified, split_name
from selectlab.raters.spec import DATAMAN_RATINGS

RHO_DECIMALS = 3


def as_float(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return frame[list(columns)].astype("float64")


def correlation_matrix(frame: pd.DataFrame, columns: Sequence[str], method: str) -> pd.DataFrame:
    """Square matrix of `method` (pearson or spearman) correlations, rows and columns in order."""
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be pearson or spearman, got {method!r}")
    return as_float(frame, columns).corr(method=method)


def dataman_columns(frame: pd.DataFrame, family: str) -> list[str]:
    """The DataMan family's rating columns present in `frame`, in the paper's order."""
    return [qualified(family, r) for r in DATAMAN_RATINGS if qualified(family, r) in frame]


def paper_order(columns: Sequence[str], dataman: str | None) -> list[str]:
    """`columns` with the DataMan family's ratings in the paper's order (others as given)."""
    rank = {r: i for i, r in enumerate(DATAMAN_RATINGS)}
    ratings = sorted((c for c in columns if split_name(c)[0] == dataman),
                     key=lambda c: rank.get(split_name(c)[1], len(rank)))
    ordered, pending = [], iter(ratings)
    for column in columns:
        ordered.append(next(pending) if split_name(column)[0] == dataman else column)
    return ordered


def spearman_against(frame: pd.DataFrame, columns: Sequence[str], target: str) -> pd.DataFrame:
    """One row per column: documents with both values and Spearman's rho with `target`."""
    values = as_float(frame, [*columns, target])
    rows = []
    for column in columns:
        both = values[[column, target]].dropna()
        rho = both[column].corr(both[target], method="spearman") if len(both) > 2 else np.nan
        rows.append({"rating": split_name(column)[1], "documents": len(both),
                     "spearman": round(float(rho), RHO_DECIMALS) if np.isfinite(rho) else None})
    table = pd.DataFrame(rows, columns=["rating", "documents", "spearman"])
    table["spearman"] = table["spearman"].astype("float64")
    table.attrs["decimals"] = {"spearman": RHO_DECIMALS}
    undefined = table.loc[table["spearman"].isna(), "rating"].tolist()
    table.attrs["notes"] = ([f"No coefficient for {', '.join(undefined)}: fewer than three "
                             "documents with both values, or one of them constant."]
                            if undefined else [])
    return table
