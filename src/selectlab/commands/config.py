"""`selectlab config check`: the plan-time checks of a config file, run by hand; `selectlab config
show --variants`: every variant it trains, resolved (selectlab.variant_table)."""

from __future__ import annotations

from pathlib import Path

from selectlab.commands import add_action, add_configfile_argument


def check(args) -> dict:
    from selectlab.config import load_workflow_config
    from selectlab.crossref import check_config

    # The checks the Snakefile makes, in its order: the files as written against the schema
    # (defaults filled in), the variants their grids produce, a ladder rung's subset, then the
    # names and sizes the expanded config refers to.
    config = load_workflow_config(args.configfile, Path(args.schema).parent)
    check_config(config, args.run_dir)
    return {"config": args.configfile, "problems": 0}


def show(args) -> None:
    import sys

    from selectlab.config import load_workflow_config
    from selectlab.variant_table import records_jsonl, records_table, variant_records

    config = load_workflow_config(args.configfile, Path(args.schema).parent)
    records = variant_records(config)
    sys.stdout.write(records_jsonl(records) if args.format == "jsonl" else records_table(records))


def config_arguments(parser) -> None:
    add_configfile_argument(parser)
    parser.add_argument("--schema", default="config/schema/config.schema.yaml")


def register(stages) -> None:
    parser = stages.add_parser("config", help="check a config file, or show what it trains")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "check", check,
                   "schema, names and sizes of a config, as the workflow checks them at plan time")
    config_arguments(p)
    p.add_argument("--run-dir", default=None,
                   help="results/<run>: also check budgets against the tokenised pool")
    p = add_action(actions, "show", show, "every variant a config trains, resolved: pool, "
                   "selection and training settings")
    config_arguments(p)
    p.add_argument("--variants", action="store_true", required=True,
                   help="list the variants (the one thing shown so far)")
    p.add_argument("--format", choices=("table", "jsonl"), default="table",
                   help="an aligned table to read, or one JSON record per line to compare")
