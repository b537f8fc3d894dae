"""The claims plan: before anything runs, whether a config can decide each claim of the ledger.

A claim is decided (reproduced or not reproduced) only when the 95% interval of a difference
excludes zero (`selectlab.papers.claims`), and the interval is over seeds: a comparison whose
two cells do not both have two or more replicates cannot be decided, however large its effect.
For each claim the plan says which of its comparisons the config's rows can run, the fewest
seeds behind them, the rows it lacks, and the smallest difference those seeds detect:

    detectable = (t_{0.975, df} + t_{0.80, df}) * sd * sqrt(1/n_left + 1/n_right)

the difference that Welch's interval excludes zero for in 80% of runs, with `sd` the spread of
one cell over seeds and df Welch's for equal spreads. `sd` is measured where an earlier run's
cells (`tables/paper_cells.csv`) have replicates of that table and column, else the stated
prior below; perplexity spreads are relative (a share of the cell's mean), accuracy spreads in
points. QuRating Table 6's cells are rater accuracies with a binomial interval over held-out
pairs, not over seeds: the plan says so and counts them as decidable by pairs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd
from scipy import stats

from selectlab.papers.claims import CellRef, Claim, Comparison
from selectlab.papers.estimates import REPLICATES
from selectlab.papers.plan import paper_plan
from selectlab.papers.rater_comparison import TABLE as RATER_TABLE

POWER = 0.80
LEVEL = 0.95
# Stated priors where no run has measured a cell's spread over seeds (our assumption, not a
# measurement): the ten-task average of a 1B model moves ~0.5 points between seeds, a single
# task ~1.5; perplexity ~1%.
PRIOR_SD = {"perplexity": 0.01, "average": 0.5, "task": 1.5}
PLAN_COLUMNS = ["id", "paper", "decidable", "comparisons", "seeds", "missing_rows",
                "detectable_effect", "spread"]


def column_kind(column: str) -> str:
    if column in ("val_ppl", "test_ppl", "all") or column.startswith("RedPajama"):
        return "perplexity"
    return "average" if column == "average" else "task"


@dataclass(frozen=True)
class Spread:
    """One cell's sd over seeds (relative for perplexity) and where it comes from."""

    sd: float
    source: str


def measured_spreads(cells: pd.DataFrame) -> dict[tuple[str, str], tuple[float, int]]:
    """(table, column) -> (pooled sd over seeds, cells pooled) from cells with replicates.
    Perplexity sds are divided by the cell's mean."""
    found: dict[tuple[str, str], list[float]] = {}
    for record in cells.itertuples(index=False):
        if record.basis != REPLICATES or record.table == RATER_TABLE:
            continue
        values = [float(v) for v in str(record.values).split(";") if v]
        if len(values) < 2:
            continue
        mean = sum(values) / len(values)
        variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
        if column_kind(record.column) == "perplexity":
            variance /= mean**2
        found.setdefault((record.table, record.column), []).append(variance)
    return {key: (math.sqrt(sum(v) / len(v)), len(v)) for key, v in found.items()}


class SpreadBook:
    """The spread each (table, column) is planned with: measured, or the stated prior."""

    def __init__(self, measured: dict[tuple[str, str], tuple[float, int]], source: str = ""):
        self.measured = measured
        self.source = source

    def spread(self, ref: CellRef) -> Spread:
        kind = column_kind(ref.column)
        if (ref.table, ref.column) in self.measured:
            sd, count = self.measured[(ref.table, ref.column)]
            return Spread(sd, f"measured ({count} cells of {self.source})")
        return Spread(PRIOR_SD[kind], "prior")


class RowBook:
    """Which cells a config's tables have and how many seeds each has."""

    def __init__(self, config: dict):
        plan = paper_plan(config)
        self.seeds = {v: len(names) for v, names in plan["replicates"].items()}
        by_paper_row = {row: v for v, row in plan["paper_rows"].items()}
        self.members: dict[str, dict[str, str]] = {}  # table -> {name or paper row: variant}
        self.blocks: dict[str, set[str]] = {}
        for table in plan["tables"]:
            rows = list(table["rows"])
            for block in table.get("blocks", []):
                rows += block["rows"]
                self.blocks.setdefault(table["name"], set()).add(block["domain"])
            self.blocks.setdefault(table["name"], set()).update(table.get("fractions", []))
            names = {v: v for v in rows} | {r: v for r, v in by_paper_row.items() if v in rows}
            self.members[table["name"]] = names
        self.rater_rows = {key for t in plan["rater_tables"] for key in t["trained"]}

    def variant(self, ref: CellRef) -> str | None:
        """The config's variant behind a cell, or None when its table lacks the row."""
        if ref.table == RATER_TABLE:
            return ref.variant if ref.variant in self.rater_rows else None
        if ref.block and ref.block not in self.blocks.get(ref.table, set()):
            return None
        return self.members.get(ref.table, {}).get(ref.variant)

    def seeds_of(self, ref: CellRef) -> int:
        return self.seeds.get(self.variant(ref) or "", 0)


@dataclass(frozen=True)
class ComparisonPlan:
    comparison: Comparison
    runs: bool
    seeds: int | None = None  # fewest of its two sides; None = decided by pairs, not seeds
    detectable: float | None = None  # in the column's units (relative for perplexity)
    spread: str = ""

    @property
    def decidable(self) -> bool:
        return self.runs and (self.seeds is None or self.seeds >= 2)


def detectable_difference(sd: float, n_left: int, n_right: int | None) -> float:
    """The smallest true difference whose Welch interval excludes zero with 80% power; a
    right side that is a number (n_right None) has no spread."""
    terms = [1 / n_left] + ([1 / n_right] if n_right else [])
    se = sd * math.sqrt(sum(terms))
    dof_terms = [1 / (n_left**2 * (n_left - 1))] + (
        [1 / (n_right**2 * (n_right - 1))] if n_right else [])
    df = sum(terms) ** 2 / sum(dof_terms)
    quantile = stats.t.ppf(0.5 + LEVEL / 2, df) + stats.t.ppf(POWER, df)
    return float(quantile * se)


def plan_comparison(comparison: Comparison, rows: RowBook, spreads: SpreadBook) -> ComparisonPlan:
    left, right = comparison.left, comparison.right
    sides = [left] + ([right] if isinstance(right, CellRef) else [])
    if any(rows.variant(ref) is None for ref in sides):
        return ComparisonPlan(comparison, runs=False)
    if left.table == RATER_TABLE:
        return ComparisonPlan(comparison, runs=True, seeds=None,
                              spread="binomial over held-out pairs")
    n_left = rows.seeds_of(left)
    n_right = rows.seeds_of(right) if isinstance(right, CellRef) else None
    fewest = min(n_left, n_right) if n_right is not None else n_left
    if fewest < 2:
        return ComparisonPlan(comparison, runs=True, seeds=fewest)
    spread = spreads.spread(left)
    return ComparisonPlan(comparison, True, fewest,
                          detectable_difference(spread.sd, n_left, n_right), spread.source)


def chain_candidates(claim: Claim, rows: RowBook) -> list[Comparison]:
    """Neighbouring pairs among a chain's cells the config has (as the verdict pairs them)."""
    out = []
    for chain in claim.chains:
        present = [ref for ref in chain.cells if rows.variant(ref) is not None]
        out += [Comparison(a, chain.op, b, chain.tolerance)
                for a, b in zip(present, present[1:], strict=False)]
    return out


def missing_rows(claim: Claim, rows: RowBook) -> list[str]:
    refs = [c.left for c in claim.comparisons] + [
        c.right for c in claim.comparisons if isinstance(c.right, CellRef)]
    refs += [ref for chain in claim.chains for ref in chain.cells]
    return sorted({ref.variant for ref in refs if rows.variant(ref) is None})


def effect_text(plans: Iterable[ComparisonPlan]) -> str:
    """The claim's weakest comparison: the largest detectable difference among them."""
    sized = [p for p in plans if p.detectable is not None]
    if not sized:
        return ""
    worst = max(sized, key=lambda p: p.detectable)  # type: ignore[arg-type, return-value]
    if column_kind(worst.comparison.left.column) == "perplexity":
        return f"{100 * worst.detectable:.1f}% of perplexity"  # type: ignore[operator]
    text = f"{worst.detectable:.2f} points"
    if worst.comparison.op == "~":
        text += f" (a match needs an interval inside +-{worst.comparison.tolerance:g})"
    return text


def decidability(plans: list[ComparisonPlan]) -> str:
    ran = [p for p in plans if p.runs]
    if not ran:
        return "no: rows missing"
    decidable = [p for p in ran if p.decidable]
    if not decidable:
        return "no: one seed"
    if all(p.seeds is None for p in decidable):
        return "yes, by held-out pairs (not seeds)"
    return "yes" if len(decidable) == len(ran) else "partly: some rows have one seed"


def plan_claims(claims: list[Claim], config: dict, spreads: SpreadBook) -> pd.DataFrame:
    """One row per claim: can this config decide it, with how many seeds, what it lacks and
    the smallest effect it detects."""
    rows = RowBook(config)
    records = []
    for claim in claims:
        plans = [plan_comparison(c, rows, spreads)
                 for c in [*claim.comparisons, *chain_candidates(claim, rows)]]
        seeds = [p.seeds for p in plans if p.runs and p.seeds is not None]
        records.append({
            "id": claim.id, "paper": claim.paper, "decidable": decidability(plans),
            "comparisons": f"{sum(p.runs for p in plans)} of {claim.size()} can run",
            "seeds": min(seeds) if seeds else "",
            "missing_rows": ", ".join(missing_rows(claim, rows)),
            "detectable_effect": effect_text(plans),
            "spread": "; ".join(sorted({p.spread for p in plans if p.spread})),
        })
    return pd.DataFrame(records, columns=PLAN_COLUMNS)
