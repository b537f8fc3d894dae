"""`selectlab config check`: the plan-time checks of a config file, run by hand."""

from __future__ import annotations

from selectlab.commands import add_action


def check(args) -> dict:
    from selectlab.config import load_config
    from selectlab.config_errors import check_schema
    from selectlab.crossref import check_config

    config = load_config(args.configfile)
    check_schema(config, args.schema)
    check_config(config, args.run_dir)
    return {"config": args.configfile, "problems": 0}


def register(stages) -> None:
    parser = stages.add_parser("config", help="check a config file before running it")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "check", check,
                   "schema, names and sizes of a config, as the workflow checks them at plan time")
    p.add_argument("--configfile", required=True)
    p.add_argument("--schema", default="config/schema/config.schema.yaml")
    p.add_argument("--run-dir", default=None,
                   help="results/<run>: also check budgets against the tokenised pool")
