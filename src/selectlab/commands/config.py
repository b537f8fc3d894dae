"""`selectlab config check`: the plan-time checks of a config file, run by hand."""

from __future__ import annotations

from pathlib import Path

from selectlab.commands import add_action


def check(args) -> dict:
    from selectlab.config import load_workflow_config
    from selectlab.crossref import check_config

    # The checks the Snakefile makes, in its order: the files as written against the schema
    # (defaults filled in), the variants their grids produce, a ladder rung's subset, then the
    # names and sizes the expanded config refers to.
    config = load_workflow_config(args.configfile, Path(args.schema).parent)
    check_config(config, args.run_dir)
    return {"config": args.configfile, "problems": 0}


def register(stages) -> None:
    parser = stages.add_parser("config", help="check a config file before running it")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "check", check,
                   "schema, names and sizes of a config, as the workflow checks them at plan time")
    p.add_argument("--configfile", nargs="+", required=True,
                   help="config files, later ones merged into earlier (as Snakemake does)")
    p.add_argument("--schema", default="config/schema/config.schema.yaml")
    p.add_argument("--run-dir", default=None,
                   help="results/<run>: also check budgets against the tokenised pool")
