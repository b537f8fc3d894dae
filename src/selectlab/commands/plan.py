"""`selectlab plan`: what a config can show before it runs (its claims, from their seeds)."""

from __future__ import annotations

import sys
from pathlib import Path

from selectlab.commands import add_action, add_configfile_argument


def claims(args) -> dict:
    import pandas as pd

    from selectlab.config import load_workflow_config
    from selectlab.papers.claims import load_claims
    from selectlab.papers.power import SpreadBook, measured_spreads, plan_claims
    from selectlab.report.table_files import markdown_table, write_table

    config = load_workflow_config(args.configfile, args.schema_dir)
    ledger = load_claims(Path(args.claims), Path(args.schema_dir) / "claims.schema.yaml")
    cells = [pd.read_csv(path, keep_default_na=False, na_values=[""]) for path in args.cells]
    measured = measured_spreads(pd.concat(cells)) if cells else {}
    frame = plan_claims(ledger, config, SpreadBook(measured, ", ".join(args.cells)))
    decidable = int(frame["decidable"].str.startswith("yes").sum())
    partly = int(frame["decidable"].str.startswith("partly").sum())
    notes = [f"Claims plan of {' + '.join(args.configfile)} (selectlab.papers.power): a claim "
             "is decided only by a 95% interval over seeds, so rows with one seed decide "
             "nothing; detectable_effect is the smallest true difference found with 80% power "
             "(spread measured where named, else a stated prior).",
             f"Decidable: {decidable} of {len(frame)} claims, partly {partly}."]
    if args.out_csv:
        write_table(frame, Path(args.out_csv), Path(args.out_md or
                                                    Path(args.out_csv).with_suffix(".md")), notes)
    else:
        print(markdown_table(frame), *notes, sep="\n\n", file=sys.stdout)
    return {"config": args.configfile, "claims": len(frame), "decidable": decidable,
            "partly": partly}


def register(stages) -> None:
    parser = stages.add_parser("plan", help="what a config can decide, before it runs")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "claims", claims,
                   "for each claim: can this config decide it, with how many seeds, what it "
                   "lacks and the smallest effect its seeds detect")
    add_configfile_argument(p)
    p.add_argument("--cells", nargs="*", default=[],
                   help="earlier runs' tables/paper_cells.csv: the spread over seeds measured")
    p.add_argument("--claims", default="config/claims.yaml")
    p.add_argument("--schema-dir", default="config/schema")
    p.add_argument("--out-csv", default=None)
    p.add_argument("--out-md", default=None)
