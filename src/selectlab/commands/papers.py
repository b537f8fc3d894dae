"""`selectlab papers`: the per-paper tables, the comparison with published numbers, the claims."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from selectlab.commands import add_action, json_arg

CELLS_HELP = "the run's tables/paper_cells.csv (selectlab.layout.paper_cells)"


def json_list(text: str) -> list[str]:
    """`--notes`: the notes every table carries, as a JSON list of strings."""
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise argparse.ArgumentTypeError("--notes must be a JSON list of strings")
    return value


def tables(args) -> dict:
    from selectlab import layout
    from selectlab.papers.cells import (
        build_cells,
        read_curve_results,
        read_rater_records,
        read_results,
    )
    from selectlab.papers.plan import plan_runs, table_rows
    from selectlab.papers.tables import all_paper_tables
    from selectlab.report.table_files import write_table
    from selectlab.report.training_tokens import read_training_tokens, short_notes
    from selectlab.shards import atomic_write_bytes

    plan, run_dir = args.params, args.run_dir
    perplexity, icl = read_results(run_dir, plan_runs(plan))
    curve_icl = read_curve_results(run_dir, plan.get("curve_runs", []))
    cells = build_cells(plan, perplexity, icl, curve_icl, read_rater_records(run_dir, plan))
    atomic_write_bytes(Path(layout.paper_cells(run_dir)),
                       cells.to_csv(index=False, lineterminator="\n").encode("utf-8"))
    frames = all_paper_tables(plan, cells)
    # A row whose selection fell short of its budget says so under each table it is in, with
    # the tokens its model trained on: the rows are then not compared at equal training length.
    rows = {table["name"]: table["rows"] for table in plan["tables"]}
    read = table_rows(plan)
    tokens = read_training_tokens(
        [p for p in (Path(layout.selection_manifest(run_dir, variant=v)) for v in read)
         if p.exists()],
        [p for p in (Path(layout.train_log(run_dir, variant=v)) for v in read) if p.exists()])
    for name, frame in frames.items():
        notes = [*args.notes, *short_notes(rows.get(name, []), plan["labels"], tokens)]
        write_table(frame, Path(layout.table(run_dir, name, "csv")),
                    Path(layout.table(run_dir, name, "md")), notes)
    return {"tables": sorted(frames), "cells": len(cells),
            "empty_cells": int(cells["mean"].isna().sum())}


def vs_published(args) -> dict:
    from selectlab.papers.cells import read_cells
    from selectlab.papers.plan import DIFFERENT_SCALE
    from selectlab.papers.published import read_published, tables_without_numbers
    from selectlab.papers.published import vs_published as compare
    from selectlab.report.table_files import write_table

    frame = compare(read_cells(Path(args.cells)), read_published(args.published), args.scale)
    frame.attrs["decimals"] = {c: 2 for c in ("run", "low", "high", "published", "difference")}
    notes = [f"Every cell that both the run and a paper's table hold ({len(frame)} cells); "
             "difference = run - published; low/high: the run's 95% interval."]
    notes += [f"Not compared, no published numbers: {name} ({why})."
              for name, why in tables_without_numbers(args.published).items()]
    if args.scale == DIFFERENT_SCALE:
        notes.append("DIFFERENT SCALE: this run's corpus, models and tasks are not the papers'; "
                     "the comparison shows the shape of the tables, not a reproduction.")
    write_table(frame, Path(args.out_csv), Path(args.out_md), notes + args.notes)
    return {"compared": len(frame), "scale": args.scale}


def claims(args) -> dict:
    from selectlab.papers.cells import read_cells
    from selectlab.papers.claims import judge_claims, load_claims
    from selectlab.report.table_files import write_table

    ledger = load_claims(Path(args.claims), Path(args.schema))
    frame = judge_claims(ledger, read_cells(Path(args.cells)), args.scale)
    counts = frame["verdict"].value_counts().to_dict()
    notes = ["Verdict by the 95% interval of each difference: over replicates when the run "
             "has them, else lm-eval's standard errors (column interval); not run = the "
             "configuration lacks the claim's variants.",
             "Verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + "."]
    write_table(frame, Path(args.out_csv), Path(args.out_md), notes + args.notes)
    return {"claims": len(frame), "verdicts": counts}


def figures(args) -> dict:
    from selectlab.papers.cells import read_cells
    from selectlab.papers.figures import draw_charts

    names = draw_charts(read_cells(Path(args.cells)), args.params, Path(args.out_dir))
    return {"figures": names}


def register(stages) -> None:
    parser = stages.add_parser("papers", help="per-paper tables, published numbers, claims")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "tables", tables, "each paper's tables and the cells behind them")
    p.add_argument("--params", type=json_arg, required=True,
                   help="selectlab.papers.plan.paper_plan(config) as JSON")
    p.add_argument("--run-dir", required=True,
                   help="results/{run}: reads eval/, writes tables/ (selectlab.layout)")
    p.add_argument("--notes", type=json_list, default=[], help="notes every table carries")
    p = add_action(actions, "figures", figures, "the papers' charts and the replicates' spread")
    p.add_argument("--params", type=json_arg, required=True, help="the paper plan as JSON")
    p.add_argument("--cells", required=True, help=CELLS_HELP)
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "vs-published", vs_published, "run vs published, cell by cell")
    p.add_argument("--cells", required=True, help=CELLS_HELP)
    p.add_argument("--published", nargs="+", required=True, help="config/published/*.csv")
    p.add_argument("--scale", required=True, choices=["same scale", "different scale"])
    p.add_argument("--notes", type=json_list, default=[])
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)
    p = add_action(actions, "claims", claims, "judge the claims ledger on the run's cells")
    p.add_argument("--cells", required=True, help=CELLS_HELP)
    p.add_argument("--claims", required=True, help="config/claims.yaml")
    p.add_argument("--schema", required=True, help="config/schema/claims.schema.yaml")
    p.add_argument("--scale", required=True, choices=["same scale", "different scale"])
    p.add_argument("--notes", type=json_list, default=[])
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)
