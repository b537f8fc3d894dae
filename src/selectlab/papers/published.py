"""The papers' published numbers (config/published/*.csv) and the run's numbers beside them.

One CSV per published table, named `{paper}_table{number}.csv` after the table it transcribes:
columns `paper`, `table`, `variant` (the config's variant name for the paper's row), `row` (the
paper's own row label), optionally `block` (DataMan Table 2's domain) and `source` (where a
number comes from when not the paper's table itself), then one column per table column, named
as the run's per-paper tables name theirs. Empty = the paper gives no number there.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

KEYS = ("paper", "table", "block", "variant", "row", "source")
LONG_COLUMNS = ["table", "block", "variant", "row", "column", "published", "source"]


def read_published_table(path: Path) -> pd.DataFrame:
    """One published CSV in long form: one row per number it holds."""
    path = Path(path)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"paper", "table", "variant", "row"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    name = path.stem
    records = []
    for line, record in enumerate(frame.to_dict("records"), start=2):
        for column, text in record.items():
            if column in KEYS or text == "":
                continue
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{path}:{line}: {column} = {text!r} is not a number") from None
            records.append({"table": name, "block": record.get("block", ""),
                            "variant": record["variant"], "row": record["row"],
                            "column": column, "published": value,
                            "source": record.get("source", "") or "the paper's table"})
    # Typed even when empty (a table without numbers), so the tables concatenate as numbers.
    return pd.DataFrame(records, columns=LONG_COLUMNS).astype({"published": "float64"})


def tables_without_numbers(paths: Iterable[Path]) -> dict[str, str]:
    """Published tables whose CSV names rows but holds no number (the paper's numbers are not
    in our copy), each with its `source` column, which says why."""
    empty = {}
    for path in sorted(map(Path, paths)):
        if read_published_table(path).empty:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            sources = sorted(set(frame.get("source", pd.Series(dtype=str))) - {""})
            empty[path.stem] = "; ".join(sources) or "no numbers"
    return empty


def read_published(paths: Iterable[Path]) -> pd.DataFrame:
    frames = [read_published_table(Path(p)) for p in sorted(map(str, paths))]
    if not frames:
        return pd.DataFrame(columns=LONG_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def published_row(published: pd.DataFrame, table: str, variant: str,
                  block: str = "") -> dict[str, float]:
    """column -> published number for one row of one table."""
    rows = published[(published["table"] == table) & (published["variant"] == variant)
                     & (published["block"] == block)]
    return dict(zip(rows["column"], rows["published"], strict=True))


def vs_published(cells: pd.DataFrame, published: pd.DataFrame, scale: str) -> pd.DataFrame:
    """Every cell the run and a paper both have: run mean, published number, difference.

    `cells` is the run's long cell table (`selectlab.papers.cells`); `scale` says whether the
    run is at the papers' scale, and is repeated on every row so no reader of a single row
    mistakes an embedded-corpus number for a reproduction attempt.
    """
    # A re-run row (selectlab.selection.grids) meets the paper's numbers under the row it re-runs.
    run = cells[["table", "block", "variant", "paper_row", "column", "mean", "low", "high", "n"]]
    run = run.rename(columns={"variant": "run_variant", "paper_row": "variant"})
    joined = published.merge(run, on=["table", "block", "variant", "column"], how="inner")
    joined["variant"] = joined["run_variant"]
    joined = joined[joined["mean"].notna()].copy()
    joined["difference"] = joined["mean"] - joined["published"]
    joined["scale"] = scale
    joined = joined.rename(columns={"mean": "run"})
    columns = ["table", "block", "variant", "row", "column", "run", "low", "high", "n",
               "published", "difference", "scale", "source"]
    return joined[columns].reset_index(drop=True)
