"""Writing result tables: CSV with blank empty cells, Markdown with the table's notes as
bullets under it, and reading those notes back for the HTML report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from selectlab.shards import atomic_write_bytes


def finite_or_none(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def format_cell(value: object, decimals: int | None = None) -> str:
    """How a table cell prints in Markdown and HTML: empty when missing, fixed decimals if known."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        number = finite_or_none(value)
        if number is None:
            return ""
        if decimals is not None:
            return f"{number:.{decimals}f}"
        return repr(value) if isinstance(value, float) else str(value)
    return "" if value is None or value is pd.NA else str(value)


def is_numeric_column(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def markdown_table(frame: pd.DataFrame) -> str:
    decimals: Mapping[str, int] = frame.attrs.get("decimals", {})
    header = [str(c) for c in frame.columns]
    align = ["---:" if is_numeric_column(frame[c]) else "---" for c in frame.columns]
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in header) + " |"]
    lines.append("| " + " | ".join(align) + " |")
    for values in frame.itertuples(index=False, name=None):
        cells = [
            format_cell(value, decimals.get(column)).replace("|", "\\|")
            for column, value in zip(frame.columns, values, strict=True)
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def table_notes(frame: pd.DataFrame, notes: Sequence[str] = ()) -> list[str]:
    """The caller's notes first, then the table's own (empty-cell explanations), no repeats."""
    merged: list[str] = []
    for note in [*notes, *frame.attrs.get("notes", [])]:
        if note not in merged:
            merged.append(note)
    return merged


def write_table(df: pd.DataFrame, csv_path: Path, md_path: Path, notes: Sequence[str] = ()) -> None:
    """CSV (empty cells blank) and Markdown with every note as a bullet line under the table."""
    decimals: Mapping[str, int] = df.attrs.get("decimals", {})
    printable = df.copy()
    for column, places in decimals.items():
        if column in printable.columns:
            printable[column] = [format_cell(v, places) for v in printable[column]]
    csv_text = printable.to_csv(index=False, na_rep="", lineterminator="\n")
    atomic_write_bytes(Path(csv_path), csv_text.encode("utf-8"))
    markdown = markdown_table(df)
    lines = table_notes(df, notes)
    if lines:
        markdown += "\n" + "".join(f"- {line}\n" for line in lines)
    atomic_write_bytes(Path(md_path), markdown.encode("utf-8"))


def read_markdown_notes(md_path: Path) -> list[str]:
    """The bullet lines `write_table` put under the table (for the HTML report)."""
    lines = Path(md_path).read_text(encoding="utf-8").splitlines()
    return [line[2:] for line in lines if line.startswith("- ")]
