"""The run's learning-rate schedule across MATES stages (pure functions, no torch).

MATES pre-trains one run in stages, re-selecting data between them; each stage here is its own
pretraining job continuing from the previous stage's weights, so each is given the part of the
run's schedule that falls in its share of the steps.
"""

from __future__ import annotations

import math


def learning_rate_at(fraction: float, train: dict) -> float:
    """The run's schedule (train.loop.learning_rate: linear warmup, cosine to
    min_lr_ratio x lr) at a fraction of all training steps."""
    lr, warmup = float(train["lr"]), float(train.get("warmup_fraction", 0.05))
    floor = lr * float(train.get("min_lr_ratio", 0.1))
    if fraction < warmup:
        return lr * fraction / warmup
    progress = min(1.0, (fraction - warmup) / max(1e-12, 1.0 - warmup))
    return floor + (lr - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def stage_schedule(train: dict, stage: int, stages: int) -> dict:
    """Training settings that make stage `stage` follow the run's schedule over its share.

    Stage 1 warms up as the run would (its warmup, measured in this stage's steps) and decays
    to the schedule's value at 1/S; a later stage starts a fresh optimizer from the previous
    stage's weights, re-warms over the run's warmup length, peaks at the schedule's value at its
    start and decays to that at its end. Only the last stage averages checkpoints (the run's
    `average_last`); earlier ones hand their last weights on.
    """
    start, end = (stage - 1) / stages, stage / stages
    warmup = min(1.0, float(train.get("warmup_fraction", 0.05)) * stages)
    peak = float(train["lr"]) if stage == 1 else learning_rate_at(start, train)
    return {"lr": peak, "warmup_fraction": warmup,
            "min_lr_ratio": min(1.0, learning_rate_at(end, train) / peak),
            **({} if stage == stages else {"average_last": 1})}
