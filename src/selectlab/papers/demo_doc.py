"""The README's claims results of a laptop run (the default, the claims demo), written from it.

The issue that asked for the claims ledger asked that the README show the verdicts a laptop
reaches, labelled with their scale and judge. This writes them from the run's own
`tables/claims.{csv,md}` (the verdicts, their evidence and the table's notes: scale, judge), with
how long the run took and at which commit, between the markers of README.md:

    python -m selectlab.papers.demo_doc README.md results/claims_demo --minutes 83 --commit abc1234
    python -m selectlab.papers.demo_doc README.md results/default --minutes 44 --commit abc1234

Each run has its own block (`markers`).

tests/unit/test_papers_ledger_doc.py checks that every claim the block shows is still in the
ledger.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from selectlab.papers.ledger_doc import escape, replace_block
from selectlab.report.table_files import read_markdown_notes

BEGIN = ("<!-- claims demo: written by `python -m selectlab.papers.demo_doc README.md "
         "results/claims_demo --minutes M --commit C` -->")
END = "<!-- end of claims demo -->"
HEADER = "| claim | verdict | comparisons | evidence (run's mean, difference, 95% interval) |\n" \
         "|---|---|---|---|"


def markers(run: str) -> tuple[str, str]:
    """The README markers around one run's block."""
    if run == "claims_demo":
        return BEGIN, END
    return (f"<!-- claims of run {run}: written by `python -m selectlab.papers.demo_doc "
            f"README.md results/{run} --minutes M --commit C` -->",
            f"<!-- end of claims of run {run} -->")


def demo_block(run_dir: Path, minutes: float, commit: str) -> str:
    """The demo's verdicts as a Markdown block: a summary line, the table, the run's notes."""
    frame = pd.read_csv(run_dir / "tables" / "claims.csv", dtype=str, keep_default_na=False)
    counts = frame["verdict"].value_counts()
    scales = ", ".join(sorted(set(frame["scale"])))
    summary = (f"`{run_dir.name}` at commit {commit}, {minutes:.0f} minutes on 2 cores ({scales}): "
               + ", ".join(f"{verdict} {counts[verdict]}" for verdict in
                           ("reproduced", "not reproduced", "inconclusive", "not run")
                           if verdict in counts) + ".")
    rows = [f"| `{r.id}` | {r.verdict} | {escape(r.comparisons)} | {escape(r.evidence)} |"
            for r in frame.itertuples()]
    notes = [f"- {escape(note)}" for note in read_markdown_notes(run_dir / "tables" /
                                                                 "claims.md")]
    return "\n".join([summary, "", HEADER, *rows, "", *notes])


def block_claims(block: str) -> list[str]:
    """The claim ids a demo block shows, in order."""
    return [line.split("`")[1] for line in block.splitlines() if line.startswith("| `")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", type=Path)
    parser.add_argument("run_dir", type=Path, help="results/<run>, finished")
    parser.add_argument("--minutes", type=float, required=True, help="the run's wall time")
    parser.add_argument("--commit", required=True, help="the commit the run ran")
    args = parser.parse_args(argv)
    replace_block(args.readme, demo_block(args.run_dir, args.minutes, args.commit),
                  *markers(args.run_dir.name))


if __name__ == "__main__":
    main()
