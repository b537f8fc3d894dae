"""What the per-paper tables, the comparison with published numbers and the claims need from
the config, resolved once into plain JSON (the rules pass it as one parameter): each table's
rows, each paper task's evaluated setting, every row's replicates, labels and the run's scale.
"""

from __future__ import annotations

from selectlab import layout
from selectlab.papers import protocols as P
from selectlab.papers.rater_comparison import compared_raters, comparison_plan
from selectlab.plugins.rows import variant_label
from selectlab.replicates import replicate_names
from selectlab.selection.resolve import resolve_selection

SAME_SCALE = "same scale"
DIFFERENT_SCALE = "different scale"


def run_scale(config: dict) -> str:
    """The papers' scale means their corpus and their benchmarks; anything else is labelled
    as a different scale wherever it meets a published number."""
    at_scale = config["corpus"]["mode"] == "slimpajama" and not P.uses_local_tasks(config)
    return SAME_SCALE if at_scale else DIFFERENT_SCALE


def table_plan(config: dict, table: P.PaperTable) -> dict:
    plan = {"name": table.name, "protocol": table.protocol.name, "rows": list(table.rows)}
    if table.layout.kind == "domain":
        plan["blocks"] = [{"domain": b.domain.key, "rows": list(b.rows)}
                          for b in P.domain_blocks(config, table)]
    if table.layout.kind == "curve":
        fractions = sorted(float(f) for f in table.spec.get("fractions", []))
        plan["fractions"] = [P.fraction_key(f) for f in [*fractions, 1.0]]
        plan["tokens"] = {v: resolve_selection(config, v)["budget_tokens"]
                          for v in table.rows}
    return plan


def curve_runs(config: dict) -> list[tuple[str, str]]:
    """(run, fraction) of every snapshot a curve figure evaluates (the final model aside)."""
    tables = P.paper_tables(config)
    return sorted({(run, P.fraction_key(f)) for variant in config["variants"]
                   for f in P.curve_fractions(config, variant, tables)
                   for run in replicate_names(config, variant)})


def paper_plan(config: dict) -> dict:
    tables = P.paper_tables(config)
    specs = config["evaluation"].get("protocols", {})
    used = {table.protocol.name for table in tables}
    members = {v for table in tables for v in P.table_members(config, table)}
    stand = P.stand_ins(config)
    return {
        "protocols": {name: specs[name] for name in specs if name in used},
        "tables": [table_plan(config, table) for table in tables],
        "rater_tables": comparison_plan(config),
        "settings": {
            name: {task: P.task_setting(config, spec).key for task, spec in protocol.tasks.items()
                   if not P.uses_local_tasks(config) or task in stand.tasks}
            for name, protocol in P.protocols(config).items() if name in used
        },
        "stand_ins": P.uses_local_tasks(config),
        "curve_runs": [list(pair) for pair in curve_runs(config)],
        "replicates": {v: replicate_names(config, v) for v in sorted(members)},
        "labels": {v: variant_label(config, v) for v in sorted(members)},
        "paper_rows": {v: config["variants"][v]["rerun_of"] for v in sorted(members)
                       if "rerun_of" in config["variants"][v]},
        "scale": run_scale(config),
    }


def plan_runs(plan: dict) -> list[str]:
    """Every run (replicates included) whose results a paper plan's tables read."""
    return sorted({name for names in plan["replicates"].values() for name in names})


def table_rows(plan: dict) -> list[str]:
    """Every variant that is a row of a paper plan's tables, once each, by name."""
    return sorted({row for table in plan["tables"] for row in table["rows"]})


def evaluated_variants(config: dict) -> list[str]:
    return plan_runs(paper_plan(config))


def result_inputs(plan: dict, root: str) -> list[str]:
    """The files the per-paper tables read: each run's perplexity and ICL results, the ICL
    results of every training snapshot on a curve, then the metrics of every rater a rater
    table compares."""
    return ([path(root, run) for run in plan_runs(plan) for path in (layout.perplexity, layout.icl)]
            + [layout.curve_icl(root, run, fraction) for run, fraction in plan["curve_runs"]]
            + [layout.rater_metrics(root, rater) for t in plan.get("rater_tables", [])
               for rater in compared_raters(t)])
