"""`selectlab config check`: the plan-time checks of a config file, run by hand."""

from __future__ import annotations

from pathlib import Path

from selectlab.commands import add_action

# Beside config.schema.yaml: what each variant a grid produces must be.
VARIANT_SET_SCHEMA = "variant_set.schema.yaml"


def check(args) -> dict:
    import yaml

    from selectlab.config_errors import validate
    from selectlab.crossref import check_config
    from selectlab.selection.grids import expand_variants, grid_variants

    # The checks the Snakefile makes, in its order: the file as written against the schema
    # (defaults filled in), the variants its grids produce, then the names and sizes the
    # expanded config refers to.
    with open(args.configfile) as handle:
        config = yaml.safe_load(handle)
    validate(config, args.schema)
    validate(grid_variants(config["variants"]), Path(args.schema).parent / VARIANT_SET_SCHEMA,
             "a variant of a grid")
    config["variants"] = expand_variants(config["variants"])
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
