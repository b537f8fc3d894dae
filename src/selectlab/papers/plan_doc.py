"""The README's claims plan: which config of the scale ladder can decide which claim.

For the laptop default, the claims demo, the ladder's rungs and the paper config, each claim's
cell says whether the config decides it over seeds and the smallest effect its seeds detect
(selectlab.papers.power), with the spread over seeds measured by the runs whose cells are given
(else the stated prior). Written between the markers of README.md:

    python -m selectlab.papers.plan_doc README.md --cells results/default/tables/paper_cells.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from selectlab.config import load_workflow_config
from selectlab.papers.claims import load_claims
from selectlab.papers.ledger_doc import escape, replace_block
from selectlab.papers.power import SpreadBook, measured_spreads, plan_claims

BEGIN = ("<!-- claims plan: written by `python -m selectlab.papers.plan_doc README.md "
         "--cells ...` -->")
END = "<!-- end of claims plan -->"
# Column -> the config files Snakemake would be given for it.
LADDER = {
    "laptop default": ["config/config.yaml"],
    "claims demo": ["config/claims_demo.yaml"],
    "ladder 178m": ["config/paper.yaml", "config/ladder/178m.yaml"],
    "ladder 407m": ["config/paper.yaml", "config/ladder/407m.yaml"],
    "paper": ["config/paper.yaml"],
}
# A laptop run's spread says nothing of a 178M model on the real benchmarks: the measured
# spread plans only the laptop columns, the others keep the prior.
LAPTOP = ("laptop default", "claims demo")


def cell_text(row) -> str:
    if row["decidable"] == "yes":
        return f"yes ({row['seeds']} seeds): {row['detectable_effect']}"
    if "pairs" in row["decidable"]:
        return "yes, over held-out pairs"
    return row["decidable"].removeprefix("no: ")


def plan_block(root: Path, cells: list[Path]) -> str:
    ledger = load_claims(root / "config" / "claims.yaml",
                         root / "config" / "schema" / "claims.schema.yaml")
    frames = [pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in cells]
    measured = SpreadBook(measured_spreads(pd.concat(frames)) if frames else {},
                          ", ".join(str(p) for p in cells))
    prior = SpreadBook({})
    plans = {name: plan_claims(ledger, load_workflow_config([root / f for f in files],
                                                            root / "config" / "schema"),
                               measured if name in LAPTOP else prior).set_index("id")
             for name, files in LADDER.items()}
    header = "| claim | " + " | ".join(LADDER) + " |\n|---|" + "---|" * len(LADDER)
    rows = [f"| `{claim.id}` | " + " | ".join(escape(cell_text(plans[name].loc[claim.id]))
                                             for name in LADDER) + " |" for claim in ledger]
    counts = ", ".join(f"{name} {int((plan['decidable'] == 'yes').sum())}"
                       for name, plan in plans.items())
    source = (f"for the laptop columns measured over the seeds of "
              f"{', '.join(str(p) for p in cells)} where that run has the table and column, "
              "else (and for the other columns) the stated prior of selectlab.papers.power"
              if cells else "the stated prior of selectlab.papers.power")
    notes = [f"- Claims decidable over seeds: {counts} (of {len(ledger)}).",
             "- Cells: whether the config decides the claim and the smallest true difference "
             "its seeds detect with 80% power (points of accuracy, or a share of perplexity); "
             f"spread {source}. A row with one seed decides nothing, whatever its effect."]
    return "\n".join([header, *rows, "", *notes])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", type=Path)
    parser.add_argument("--cells", nargs="*", type=Path, default=[],
                        help="tables/paper_cells.csv of finished runs: the measured spread")
    parser.add_argument("--root", type=Path, default=None,
                        help="the repository (default: the README's directory)")
    args = parser.parse_args(argv)
    root = args.root or args.readme.resolve().parent
    replace_block(args.readme, plan_block(root, args.cells), BEGIN, END)


if __name__ == "__main__":
    main()
