"""One self-contained HTML page: tables, figures inlined as base64 PNG, captions from `.rst` files.

The page depends only on its inputs (no timestamps, no external links or scripts), so rebuilding
it from the same files gives the same bytes. Captions are the same reStructuredText files the
Snakemake rules hand to `report(..., caption=...)`; only the small subset of reST that captions
use is rendered (paragraphs, bullet lists, inline literals, emphasis, roles, links).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from selectlab.report.table_files import (
    format_cell,
    is_numeric_column,
    read_markdown_notes,
)
from selectlab.shards import atomic_write_bytes


@dataclass(frozen=True)
class ReportSection:
    heading: str
    caption_file: Path | None = None
    table: pd.DataFrame | None = None
    figure_png: Path | None = None
    notes: Sequence[str] = field(default_factory=tuple)


def table_section(
    heading: str, csv_path: Path, md_path: Path | None, caption_file: Path | None
) -> ReportSection:
    """A section for a `write_table` table: cells as in the CSV, notes from the Markdown."""
    frame = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    notes = tuple(read_markdown_notes(md_path)) if md_path else ()
    return ReportSection(heading=heading, caption_file=caption_file, table=frame, notes=notes)


_INLINE = re.compile(
    r"``(?P<literal>.+?)``"
    r"|:[\w-]+:`(?P<role>[^`]+)`"
    r"|`(?P<link_text>[^`<]+?)\s*<(?P<link_url>[^>`]+)>`__?"
    r"|\*\*(?P<strong>[^*]+)\*\*"
    r"|\*(?P<em>[^*]+)\*"
    r"|`(?P<interpreted>[^`]+)`"
)


def rst_inline(text: str) -> str:
    parts: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        parts.append(html.escape(text[position : match.start()]))
        kind = match.lastgroup
        if kind == "link_url":
            url = match.group("link_url")
            label = html.escape(match.group("link_text"))
            parts.append(f'<a href="{html.escape(url, quote=True)}">{label}</a>')
        elif kind in ("literal", "role", "interpreted"):
            parts.append(f"<code>{html.escape(match.group(kind))}</code>")
        elif kind == "strong":
            parts.append(f"<strong>{html.escape(match.group(kind))}</strong>")
        elif kind == "em":
            parts.append(f"<em>{html.escape(match.group(kind))}</em>")
        position = match.end()
    parts.append(html.escape(text[position:]))
    return "".join(parts)


def _blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            blocks[-1].append(line.rstrip())
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def rst_to_html(text: str) -> str:
    """Paragraphs and '- ' / '* ' bullet lists (indented lines continue an item)."""
    out: list[str] = []
    for block in _blocks(text):
        if block[0].lstrip()[:2] in ("- ", "* "):
            items: list[str] = []
            for line in block:
                stripped = line.strip()
                if stripped[:2] in ("- ", "* ") and not line.startswith("  "):
                    items.append(stripped[2:])
                elif items:
                    items[-1] += " " + stripped
            rendered = "".join(f"<li>{rst_inline(item)}</li>" for item in items)
            out.append(f"<ul>{rendered}</ul>")
        else:
            paragraph = " ".join(line.strip() for line in block)
            out.append(f"<p>{rst_inline(paragraph)}</p>")
    return "\n".join(out)


def _looks_numeric(series: pd.Series) -> bool:
    if is_numeric_column(series):
        return True
    cells = [str(v) for v in series if format_cell(v) != ""]
    return bool(cells) and all(re.fullmatch(r"[-+]?\d+(\.\d+)?", c) for c in cells)


def table_html(frame: pd.DataFrame) -> str:
    decimals = frame.attrs.get("decimals", {})
    numeric = {column: _looks_numeric(frame[column]) for column in frame.columns}
    header = "".join(f"<th>{html.escape(str(column))}</th>" for column in frame.columns)
    body: list[str] = []
    for values in frame.itertuples(index=False, name=None):
        cells = []
        for column, value in zip(frame.columns, values, strict=True):
            css = ' class="num"' if numeric[column] else ""
            text = html.escape(format_cell(value, decimals.get(column)))
            cells.append(f"<td{css}>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    rows = "\n".join(body)
    return f"<table>\n<thead><tr>{header}</tr></thead>\n<tbody>\n{rows}\n</tbody>\n</table>"


def png_data_uri(path: Path) -> str:
    encoded = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"data:image/png;base64,{encoded}"


def anchor(heading: str, taken: set[str]) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") or "section"
    candidate, n = slug, 2
    while candidate in taken:
        candidate, n = f"{slug}-{n}", n + 1
    taken.add(candidate)
    return candidate


STYLE = """
body { font-family: sans-serif; max-width: 80em; margin: 2em auto; padding: 0 1em; color: #222; }
nav ul { columns: 2; }
section { margin-bottom: 3em; }
.caption { background: #f6f6f6; border-left: 3px solid #888; padding: 0.3em 1em; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; white-space: nowrap; }
th { background: #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
ul.notes { font-size: 0.85em; color: #444; }
img { max-width: 100%; }
"""


def section_html(section: ReportSection, section_id: str) -> str:
    parts = [f'<section id="{section_id}">', f"<h2>{html.escape(section.heading)}</h2>"]
    if section.caption_file is not None:
        caption = Path(section.caption_file).read_text(encoding="utf-8")
        parts.append(f'<div class="caption">\n{rst_to_html(caption)}\n</div>')
    if section.figure_png is not None:
        alt = html.escape(section.heading, quote=True)
        parts.append(f'<img src="{png_data_uri(section.figure_png)}" alt="{alt}">')
    if section.table is not None:
        parts.append(f'<div class="scroll">\n{table_html(section.table)}\n</div>')
    if section.notes:
        items = "".join(f"<li>{html.escape(note)}</li>" for note in section.notes)
        parts.append(f'<ul class="notes">{items}</ul>')
    parts.append("</section>")
    return "\n".join(parts)


def render_html_report(title: str, sections: Sequence[ReportSection], out_path: Path) -> Path:
    """Write the page to `out_path` (atomically) and return the path."""
    taken: set[str] = set()
    ids = [anchor(section.heading, taken) for section in sections]
    nav = "".join(
        f'<li><a href="#{sid}">{html.escape(s.heading)}</a></li>'
        for sid, s in zip(ids, sections, strict=True)
    )
    body = "\n".join(section_html(s, sid) for s, sid in zip(sections, ids, strict=True))
    page = (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n<nav><ul>{nav}</ul></nav>\n{body}\n</body>\n</html>\n"
    )
    atomic_write_bytes(Path(out_path), page.encode("utf-8"))
    return Path(out_path)
