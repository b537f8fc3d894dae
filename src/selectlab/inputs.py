"""Refusing upstream outputs that cannot be right: empty tables where rows are needed.

A job that receives an empty table from the job before it would otherwise fail deep inside
(an `IndexError` while splitting nothing) or, worse, succeed on nothing. These checks stop it
at the door with the file and the upstream job to look at.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from selectlab.errors import StageError


def require_rows(table: pd.DataFrame, path: str | Path, upstream: str,
                 minimum: int = 1) -> pd.DataFrame:
    """`table` itself when it has at least `minimum` rows; else a `StageError` naming `upstream`."""
    if len(table) >= minimum:
        return table
    raise StageError(f"{path} has {len(table)} rows, at least {minimum} needed: the upstream "
                     f"job {upstream} produced no usable output. Check its log, fix the cause "
                     "and rerun it (Snakemake reruns it once its output is removed).")


def require_parquet_rows(path: str | Path, upstream: str, minimum: int = 1) -> int:
    """The row count of a parquet file (read from its footer), refused below `minimum`."""
    import pyarrow.parquet as pq

    rows = pq.ParquetFile(path).metadata.num_rows
    require_rows(pd.DataFrame(index=range(rows)), path, upstream, minimum)
    return rows
