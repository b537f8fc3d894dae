"""The cost tables: per stage and item, per variant, and Meta-rater's Table 2.

Meta-rater's Table 2 lists the FLOPs of quality scores rating (annotating the corpus with every
rater), of building Meta-rater (its proxy models) and of pre-training (1.3B on 30B tokens, 3.3B
on 100B), and the text reads the ratios: Meta-rater 0.7% of a 1.3B pre-training, rating 1.4x
that, 17% of a 3.3B/100B one. Its FLOPs follow Appendix F (6·L·H²·T·|D|·E for training,
2·L·H²·T·|D| for inference); the tables give those (`metarater_flops`) beside the project's
6·N·D + attention (`flops`, selectlab.flops), and ratios under both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from selectlab.cost.roles import (
    CONSTRUCTION,
    EVALUATION,
    MATES,
    PRETRAINING,
    RATING,
    SFT,
    STAGES,
)

SUMS = ["flops", "metarater_flops", "gpu_hours", "wall_hours"]
ALL = "all"


def _sum(frame: pd.DataFrame) -> dict:
    return {"jobs": int(len(frame)), **{c: float(frame[c].sum()) for c in SUMS}}


def stage_table(costs: pd.DataFrame) -> pd.DataFrame:
    """One row per (stage, item), then each stage's total, then the run's; stages in pipeline
    order."""
    rows = []
    for stage in STAGES:
        part = costs[costs["stage"] == stage]
        if part.empty:
            continue
        for item, jobs in part.groupby("item", sort=False):
            rows.append({"stage": stage, "item": item} | _sum(jobs))
        rows.append({"stage": stage, "item": ALL} | _sum(part))
    rows.append({"stage": ALL, "item": ALL} | _sum(costs))
    return pd.DataFrame(rows, columns=["stage", "item", "jobs", *SUMS])


def variant_table(costs: pd.DataFrame, variants: Sequence[str],
                  searches: Mapping[str, str]) -> pd.DataFrame:
    """Per configured variant: what its selection needed beyond the shared rating (its MATES
    probes and influence models, or its Meta-rater search's proxies, shared by every variant of
    that search), its pre-training, its fine-tuning and answers (instruction-following variants)
    and its evaluation."""
    rows = []
    for name in variants:
        own = costs[costs["variant"] == name]
        selection = own[own["stage"] == MATES]
        if name in searches:
            selection = costs[(costs["stage"] == CONSTRUCTION)
                              & (costs["item"] == searches[name])]
        parts = {"selection": selection, "pretraining": own[own["stage"] == PRETRAINING],
                 "sft": own[own["stage"] == SFT], "evaluation": own[own["stage"] == EVALUATION]}
        row = {"variant": name}
        for label, frame in parts.items():
            row[f"{label}_flops"] = float(frame["flops"].sum())
        every = pd.concat(parts.values())
        row |= {"total_flops": float(every["flops"].sum()),
                "gpu_hours": float(every["gpu_hours"].sum()),
                "wall_hours": float(every["wall_hours"].sum())}
        rows.append(row)
    return pd.DataFrame(rows)


def pretraining_rows(costs: pd.DataFrame, models: Mapping[str, Mapping],
                     variants: Sequence[str]) -> list[tuple[str, pd.DataFrame]]:
    """One pre-training per model preset: the first configured variant of each preset (a MATES
    variant counts all its stages)."""
    seen, rows = set(), []
    pretraining = costs[costs["stage"] == PRETRAINING]
    for name in variants:
        presets = {role["preset"] for role in models.values() if role.get("variant") == name}
        preset = next(iter(presets), None)
        if preset is None or preset in seen:
            continue
        seen.add(preset)
        tokens = int(pretraining[pretraining["variant"] == name]["tokens"].sum())
        rows.append((f"pre-training {preset} ({tokens:,} tokens, {name})",
                     pretraining[pretraining["variant"] == name]))
    return rows


def metarater_table2(costs: pd.DataFrame, models: Mapping[str, Mapping],
                     variants: Sequence[str], main_preset: str) -> pd.DataFrame:
    """Meta-rater's Table 2 layout: rating, construction, pre-training per preset, with each
    row's share of the main preset's pre-training under both FLOPs conventions."""
    entries = [("quality scores rating", costs[costs["stage"].isin(RATING)]),
               ("Meta-rater construction", costs[costs["stage"] == CONSTRUCTION])]
    pretrainings = pretraining_rows(costs, models, variants)
    entries += pretrainings
    main = next((frame for label, frame in pretrainings
                 if label.startswith(f"pre-training {main_preset} ")), None)
    rows = []
    for label, frame in entries:
        row = {"item": label} | _sum(frame)
        for column, ratio in (("flops", "ratio"), ("metarater_flops", "metarater_ratio")):
            base = float(main[column].sum()) if main is not None else 0.0
            row[ratio] = row[column] / base if base else None
        rows.append(row)
    return pd.DataFrame(rows, columns=["item", "jobs", *SUMS, "ratio", "metarater_ratio"])


def with_decimals(frame: pd.DataFrame) -> pd.DataFrame:
    """FLOPs in scientific notation, hours with three decimals (CSV keeps full precision)."""
    shown = frame.copy()
    for column in shown.columns:
        if "flops" in column:
            shown[column] = [f"{v:.3e}" for v in shown[column]]
    shown.attrs["decimals"] = {c: 3 for c in shown.columns if c.endswith(("hours", "ratio"))}
    return shown


NOTES = [
    "FLOPs: 6·N·D + 6·n_layer·n_ctx·d_attn·D for training, 2·N·D + 2·n_layer·n_ctx·d_attn·D "
    "for inference (N: every weight but the input embedding; Kaplan et al. 2020), from each "
    "job's parameter count and the tokens it processed. metarater_flops: Meta-rater's Appendix F "
    "(6·L·H²·T·|D|·E, 2·L·H²·T·|D|).",
    "GPU hours: wall time x GPUs of jobs that ran on GPUs; wall_hours counts every job, CPU "
    "jobs included.",
]
