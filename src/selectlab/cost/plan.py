"""What a configuration will cost, before anything runs: FLOPs and GPU-hours of every job.

Each kind of job gets one row: how many such jobs the plan has, the model it runs (its
parameters), the tokens one job processes and so its FLOPs (selectlab.flops, the same
convention the jobs record when they run), and the GPU-hours at the sustained throughput of the
GPU type it runs on (the profile's throughput file: peak bf16 FLOP/s x utilisation, one share
for training and one for inference). Token counts are upper bounds where the config gives only
a cap (judge prompts, per-document windows); where the corpus is not built yet its size comes
from the config's `cost` section (full scale) or from the embedded sources' caps (offline).
"""

from __future__ import annotations

import pandas as pd

from selectlab.cost.plan_jobs import all_jobs
from selectlab.cost.roles import CONSTRUCTION, PRETRAINING, RATING, STAGES


def plan_frames(config: dict, throughput: dict) -> dict[str, pd.DataFrame]:
    """The plan's tables: every kind of job, the totals per stage, Meta-rater's Table 2."""
    from selectlab.selection.resolve import resolve_selection
    from selectlab.train.resolve import preset_name

    jobs = pd.DataFrame([job.row(throughput) for job in all_jobs(config, throughput)])
    def total(stage: str, part: pd.DataFrame) -> dict:
        return {"stage": stage, "jobs": int(part["jobs"].sum()),
                "flops": float(part["total_flops"].sum()),
                "metarater_flops": float(part["total_metarater_flops"].sum()),
                "gpu_hours": float(part["gpu_hours"].sum())}

    stages = [total(stage, jobs[jobs["stage"] == stage]) for stage in STAGES
              if (jobs["stage"] == stage).any()] + [total("all", jobs)]
    pretraining = jobs[jobs["stage"] == PRETRAINING]
    rows = [("quality scores rating", jobs[jobs["stage"].isin(RATING)]),
            ("Meta-rater construction", jobs[jobs["stage"] == CONSTRUCTION])]
    seen = set()
    for name in config["variants"]:
        preset = preset_name(config, name)
        if preset in seen:
            continue
        seen.add(preset)
        part = pretraining[pretraining["item"] == name]
        budget = resolve_selection(config, name)["budget_tokens"]
        rows.append((f"pre-training {preset} ({budget:,} tokens, {name})", part))
    main = [part for label, part in rows
            if label.startswith(f"pre-training {config['pretrain']['preset']} ")]
    base = float(main[0]["total_flops"].sum()) if main else 0.0
    base_metarater = float(main[0]["total_metarater_flops"].sum()) if main else 0.0
    table2 = pd.DataFrame([{"item": label, "flops": float(part["total_flops"].sum()),
                            "metarater_flops": float(part["total_metarater_flops"].sum()),
                            "gpu_hours": float(part["gpu_hours"].sum()),
                            "ratio": float(part["total_flops"].sum()) / base if base else None,
                            "metarater_ratio": (float(part["total_metarater_flops"].sum())
                                                / base_metarater if base_metarater else None)}
                           for label, part in rows])
    return {"jobs": jobs, "stages": pd.DataFrame(stages), "table2": table2}

