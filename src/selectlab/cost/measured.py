"""What every model job of a run cost, read from the metrics file each job wrote.

Each job records a `cost` entry (selectlab.flops.cost_record): FLOPs by the project's convention
and by Meta-rater's Appendix F, tokens, wall time, GPUs. GPU-hours are wall time x GPUs of jobs
that ran on GPUs; a CPU job counts wall hours only. Rows here are one per job (or per family or
protocol where a table already sums its jobs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from selectlab.cost.roles import ANNOTATION, JUDGING, MATES, RATER_TRAINING, SFT

COLUMNS = ["stage", "item", "variant", "job", "flops", "metarater_flops", "tokens", "gpu_hours",
           "wall_hours", "device"]


def cost_row(stage: str, item: str, variant: str, job: str, cost: Mapping | None) -> dict:
    cost = cost or {}
    return {"stage": stage, "item": item, "variant": variant, "job": job,
            "flops": float(cost.get("flops", 0.0)),
            "metarater_flops": float(cost.get("metarater_flops", 0.0)),
            "tokens": int(cost.get("tokens", 0)), "gpu_hours": float(cost.get("gpu_hours", 0.0)),
            "wall_hours": float(cost.get("wall_hours", 0.0)),
            "device": str(cost.get("device", ""))}


def read_json(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def model_rows(model_dirs: Sequence[str | Path], roles: Mapping[str, dict]) -> list[dict]:
    """Pre-training jobs (proxies and MATES stages included) from their training cards; a card
    without a cost (a MATES variant's assembled copy) adds nothing."""
    rows = []
    for directory in model_dirs:
        name = Path(directory).parent.name
        card = read_json(Path(directory) / "training_card.json")
        if name in roles and card.get("cost"):
            role = roles[name]
            rows.append(cost_row(role["stage"], role["item"], role["variant"],
                                 f"pretrain {name}", card["cost"]))
    return rows


def evaluation_rows(paths: Sequence[str | Path], roles: Mapping[str, dict]) -> list[dict]:
    """eval/{variant}/{perplexity,icl}.json."""
    rows = []
    for path in paths:
        name, kind = Path(path).parent.name, Path(path).stem
        role = roles[name]
        rows.append(cost_row(role["stage"], role["item"], role["variant"], f"{kind} {name}",
                             read_json(path).get("cost")))
    return rows


def rater_rows(paths: Sequence[str | Path]) -> list[dict]:
    """raters/{rater}/metrics.json (a wrapped public classifier trains nothing: no cost)."""
    rows = []
    for path in paths:
        record = read_json(path)
        name = record.get("name", record["rater"])  # dataman_score, qurater_separate_scratch
        rows.append(cost_row(RATER_TRAINING, name, "", f"train {name}", record.get("cost")))
    return rows


def annotation_rows(throughput_tables: Sequence[str | Path],
                    mates_families: Mapping[str, str]) -> list[dict]:
    """One row per family from the throughput tables (their jobs summed); a MATES family counts
    towards its variant's selection."""
    rows = []
    for path in throughput_tables:
        for family in pd.read_csv(path).to_dict("records"):
            name = family["family"]
            variant = mates_families.get(name, "")
            stage = MATES if variant else ANNOTATION
            rows.append(cost_row(stage, variant or name, variant, f"annotate {name}",
                                 family | {"tokens": family["input_tokens"],
                                           "device": family["device"]}))
    return rows


def judge_rows(summaries: Sequence[str | Path]) -> list[dict]:
    """judgments/{protocol}/summary.csv, its `all` row."""
    rows = []
    for path in summaries:
        summary = pd.read_csv(path)
        overall = summary[summary["criterion"] == "all"].iloc[0].to_dict()
        protocol = Path(path).parent.name
        tokens = int(overall["prompt_tokens"] + overall["completion_tokens"])
        rows.append(cost_row(JUDGING, protocol, "", f"judge {protocol}",
                             overall | {"tokens": tokens, "device": overall.get("device", "")}))
    return rows


def mates_rows(paths: Sequence[str | Path]) -> list[dict]:
    """Probe jobs' metrics (`variant`, `stage`, `part`) and fit jobs' metrics."""
    rows = []
    for path in paths:
        record = read_json(path)
        # mates/{variant}/stage{k}/probes/part{p}.json or mates/{variant}/stage{k}/metrics.json
        variant = record.get("variant") or Path(path).parts[-3]
        job = (f"probe {variant} stage {record['stage']} part {record['part']}"
               if "part" in record else f"fit {variant} {Path(path).parent.name}")
        rows.append(cost_row(MATES, variant, variant, job, record.get("cost")))
    return rows


def sft_rows(model_dirs: Sequence[str | Path]) -> list[dict]:
    """instruct/sft/{variant}/model: the fine-tuning's cost in its sft_card.json."""
    rows = []
    for directory in model_dirs:
        variant = Path(directory).parent.name
        card = read_json(Path(directory) / "sft_card.json")
        rows.append(cost_row(SFT, variant, variant, f"sft {variant}", card.get("cost")))
    return rows


def generation_rows(paths: Sequence[str | Path]) -> list[dict]:
    """instruct/answers/{variant}.metrics.json: the answers' generation."""
    rows = []
    for path in paths:
        record = read_json(path)
        variant = record["variant"]
        rows.append(cost_row(SFT, variant, variant, f"generate {variant}", record.get("cost")))
    return rows


def measured_costs(*, models: Sequence[str | Path] = (), evaluations: Sequence[str | Path] = (),
                   raters: Sequence[str | Path] = (), annotation: Sequence[str | Path] = (),
                   judgments: Sequence[str | Path] = (), mates: Sequence[str | Path] = (),
                   sft: Sequence[str | Path] = (), generation: Sequence[str | Path] = (),
                   roles: Mapping[str, Mapping]) -> pd.DataFrame:
    """Every job's cost row; `roles` is selectlab.cost.roles' {"models", "evaluations",
    "mates_families"} for the run's config."""
    rows = (judge_rows(judgments) + rater_rows(raters)
            + annotation_rows(annotation, roles["mates_families"]) + mates_rows(mates)
            + model_rows(models, roles["models"]) + sft_rows(sft) + generation_rows(generation)
            + evaluation_rows(evaluations, roles["evaluations"]))
    return pd.DataFrame(rows, columns=COLUMNS)
