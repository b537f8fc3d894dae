"""The README's table of the claims ledger, written from config/claims.yaml so it cannot drift.

One row per claim: its id, the paper and where it says so, what the run compares (cells of the
per-paper tables, `variant op other` per column) and how the verdict is decided (every or any
comparison, the 95% interval of each difference; `selectlab.papers.claims`).
tests/unit/test_papers_ledger_doc.py checks README.md's block against it; after editing the
ledger, rewrite the block with `python -m selectlab.papers.ledger_doc README.md`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from selectlab.papers.claims import CellRef, Claim, Comparison, load_claims

BEGIN = "<!-- claims table: written by `python -m selectlab.papers.ledger_doc README.md` -->"
END = "<!-- end of claims table -->"
HEADER = ("| claim | paper, where | what the run checks | verdict |\n"
          "|---|---|---|---|")


def side_text(ref: CellRef | float) -> str:
    return f"{ref:g}" if isinstance(ref, float) else ref.variant


def where(ref: CellRef) -> str:
    return f"{ref.table}[{ref.block}]" if ref.block else ref.table


def comparison_texts(comparisons: tuple[Comparison, ...]) -> list[str]:
    """`a, b > c on x, y (table)`: comparisons of the same column on both sides grouped by their
    left variants and their columns; any other comparison written out."""
    by_left: dict[tuple, list[str]] = {}
    within_row: dict[tuple, list[str]] = {}  # one variant's column against its other columns
    texts = []
    for c in comparisons:
        left, right = c.left, c.right
        if isinstance(right, float) or (right.table, right.column, right.block) == (
                left.table, left.column, left.block):
            key = (where(left), left.variant, c.op, side_text(right))
            by_left.setdefault(key, []).append(left.column)
        elif (right.table, right.variant, right.block) == (left.table, left.variant, left.block):
            key = (where(left), left.variant, left.column, c.op)
            within_row.setdefault(key, []).append(right.column)
        else:
            texts.append(f"{cell_text(left)} {c.op} {cell_text(right)} ({left.table})")
    by_columns: dict[tuple, list[str]] = {}
    for (table, variant, op, right), columns in by_left.items():
        by_columns.setdefault((table, op, right, tuple(columns)), []).append(variant)
    grouped = [f"{', '.join(variants)} {op} {right} on {', '.join(columns)} ({table})"
               for (table, op, right, columns), variants in by_columns.items()]
    grouped += [f"{variant}: {column} {op} each of {', '.join(others)} ({table})"
                for (table, variant, column, op), others in within_row.items()]
    return grouped + texts


def cell_text(ref: CellRef) -> str:
    block = f"[{ref.block}]" if ref.block else ""
    return f"{ref.variant}{block}.{ref.column}"


def checks(claim: Claim) -> str:
    texts = comparison_texts(claim.comparisons)
    texts += [f"{f' {chain.op} '.join(r.variant for r in chain.cells)} on {chain.cells[0].column}"
              f" ({where(chain.cells[0])})" for chain in claim.chains]
    return "; ".join(texts)


def verdict_rule(claim: Claim) -> str:
    ops = {c.op for c in claim.comparisons} | {chain.op for chain in claim.chains}
    tolerance = next((c.tolerance for c in (*claim.comparisons, *claim.chains)), None)
    size = claim.size()
    if claim.chains:
        scope = f"every neighbouring pair the run has (up to {size})"
    elif claim.holds == "any":
        scope = f"any one of {size} differences" if size > 1 else "the difference"
    else:
        scope = f"all {size} differences" if size > 1 else "the difference"
    if ops == {"~"}:
        return f"{scope}: 95% interval within ±{tolerance:g}"
    if "~" in ops:
        return f"{scope}: 95% interval on the claimed side of 0, or within ±{tolerance:g} for ~"
    return f"{scope}: 95% interval on the claimed side of 0"


def escape(text: str) -> str:
    return text.replace("|", "\\|")


def claims_table(claims: list[Claim]) -> str:
    rows = [f"| `{c.id}` | {escape(c.source)} | {escape(checks(c))} | {escape(verdict_rule(c))} |"
            for c in claims]
    return "\n".join([HEADER, *rows])


def ledger_claims(repo: Path) -> list[Claim]:
    return load_claims(repo / "config" / "claims.yaml",
                       repo / "config" / "schema" / "claims.schema.yaml")


def readme_block(text: str, begin: str = BEGIN, end: str = END) -> str:
    """The README's current block between two markers; an error if they are absent."""
    if begin not in text or end not in text:
        raise ValueError(f"README.md lacks the markers {begin!r} ... {end!r}")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def replace_block(readme: Path, body: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace what lies between the markers of `readme` by `body`."""
    text = readme.read_text(encoding="utf-8")
    readme_block(text, begin, end)  # the markers are there
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    readme.write_text(f"{head}{begin}\n{body}\n{end}{tail}", encoding="utf-8")


def rewrite(readme: Path) -> None:
    """Replace the claims table of `readme` (the repository's README.md) from the ledger."""
    replace_block(readme, claims_table(ledger_claims(readme.resolve().parent)))


if __name__ == "__main__":
    rewrite(Path(sys.argv[1]))
