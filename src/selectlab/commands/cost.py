"""`selectlab cost`: what a run's model jobs cost (measured), and what a config will cost
(planned, before anything runs)."""

from __future__ import annotations

from pathlib import Path

from selectlab.commands import add_action, json_arg


def table(args) -> dict:
    from selectlab.cost.measured import measured_costs
    from selectlab.cost.tables import (
        NOTES,
        metarater_table2,
        stage_table,
        variant_table,
        with_decimals,
    )
    from selectlab.report.table_files import write_table

    roles = args.params
    costs = measured_costs(models=args.models, evaluations=args.evaluations, raters=args.raters,
                           annotation=args.annotation, judgments=args.judgments,
                           mates=args.mates, sft=args.sft, generation=args.generation,
                           roles=roles)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    variants = list(roles["variants"])
    tables = {
        "cost": stage_table(costs),
        "cost_variants": variant_table(costs, variants, roles["variant_searches"]),
        "cost_metarater_table2": metarater_table2(costs, roles["models"], variants,
                                                  roles["main_preset"]),
    }
    for stem, frame in tables.items():
        write_table(with_decimals(frame), out / f"{stem}.csv", out / f"{stem}.md",
                    NOTES + list(roles.get("notes", [])))
    total = tables["cost"].iloc[-1]
    return {"jobs": int(total["jobs"]), "flops": float(total["flops"]),
            "gpu_hours": float(total["gpu_hours"])}


def plan(args) -> dict:
    import yaml

    from selectlab.config import load_workflow_config
    from selectlab.cost.plan import plan_frames
    from selectlab.cost.tables import with_decimals
    from selectlab.report.table_files import write_table

    config = (args.params if args.params is not None
              else load_workflow_config(args.config, args.schema_dir))
    source = " + ".join(args.config or []) or f"the config of run {config['run']}"
    throughput = yaml.safe_load(Path(args.throughput).read_text())
    frames = plan_frames(config, throughput)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    notes = [f"Estimated before running from {source} and the GPU throughput in "
             f"{args.throughput} (selectlab.cost.plan); token counts are upper bounds where "
             "the config gives caps."]
    for stem, frame in frames.items():
        write_table(with_decimals(frame), out / f"plan_{stem}.csv", out / f"plan_{stem}.md",
                    notes)
    total = frames["stages"].iloc[-1]
    return {"jobs": int(total["jobs"]), "flops": float(total["flops"]),
            "gpu_hours": float(total["gpu_hours"])}


def register(stages) -> None:
    parser = stages.add_parser("cost", help="FLOPs and GPU-hours: measured and planned")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "table", table, "the cost tables of a run from its jobs' records")
    p.add_argument("--params", type=json_arg, required=True,
                   help="roles of models and families (selectlab.cost.roles.table_roles)")
    p.add_argument("--models", nargs="*", default=[], help="models/*/final directories")
    p.add_argument("--evaluations", nargs="*", default=[], help="eval/*/{perplexity,icl}.json")
    p.add_argument("--raters", nargs="*", default=[], help="raters/*/metrics.json")
    p.add_argument("--annotation", nargs="*", default=[], help="throughput tables (CSV)")
    p.add_argument("--judgments", nargs="*", default=[], help="judgments/*/summary.csv")
    p.add_argument("--mates", nargs="*", default=[], help="MATES probe and fit metrics")
    p.add_argument("--sft", nargs="*", default=[], help="instruct/sft/*/model directories")
    p.add_argument("--generation", nargs="*", default=[],
                   help="instruct/answers/*.metrics.json")
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "plan", plan, "estimate a config's FLOPs and GPU-hours per job")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--config", nargs="+",
                       help="config files, later ones merged into earlier (by hand)")
    given.add_argument("--params", type=json_arg, help="the resolved config as JSON (workflow)")
    p.add_argument("--throughput", required=True, help="GPU throughput file of the profile")
    p.add_argument("--schema-dir", default="config/schema", help="with --config")
    p.add_argument("--out-dir", required=True)
