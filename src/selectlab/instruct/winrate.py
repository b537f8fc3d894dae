"""Win rates against the reference variant, with bootstrap intervals over instructions.

An instruction's score for a variant is the mean of its scores over the orders the judge
answered (1 win, 0.5 tie, 0 loss each; `compare.variant_score`), so a win in one order and a
loss in the other counts as a tie, as in AlpacaFarm. The win rate is the mean score over the
instructions, in percent: ties count half (QuRating Figure 3, DataMan Figure 2 report win rates
against uniform and against educational value tau=2). The 95% interval is the percentile
bootstrap over instructions: `samples` resamples of the instructions with replacement, seeded.
Instructions the judge never answered for a variant (every order failed) are left out of its
rate and counted in `failed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from selectlab.judge.parse import OK

COLUMNS = ["figure", "variant", "label", "reference", "instructions", "wins", "ties", "losses",
           "failed", "win_rate", "ci_low", "ci_high", "judge"]


def instruction_scores(judgments: pd.DataFrame) -> pd.DataFrame:
    """variant, instruction_id, score, orders (answered orders) per judged instruction."""
    ok = judgments[judgments["status"] == OK]
    grouped = ok.groupby(["variant", "instruction_id"], sort=False)["value"]
    return grouped.agg(score="mean", orders="count").reset_index()


def bootstrap_interval(scores: np.ndarray, samples: int, seed: int) -> tuple[float, float]:
    """Percentile 95% interval of the mean of `scores` over `samples` resamples."""
    if len(scores) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = scores[rng.integers(0, len(scores), size=(samples, len(scores)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def comparison_rows(judgments: pd.DataFrame, figure: str, variants: Sequence[str],
                    reference: str, labels: Mapping[str, str], samples: int,
                    seed: int) -> list[dict]:
    scores = instruction_scores(judgments)
    judge = ", ".join(sorted({f"{b}:{m}" for b, m in zip(judgments["backend"], judgments["model"],
                                                          strict=True)}))
    rows = []
    for variant in variants:
        asked = judgments.loc[judgments["variant"] == variant, "instruction_id"].nunique()
        mine = scores.loc[scores["variant"] == variant, "score"].to_numpy(dtype=float)
        low, high = bootstrap_interval(mine, samples, seed)
        rate = float(mine.mean()) if len(mine) else float("nan")
        rows.append({
            "figure": figure, "variant": variant, "label": labels.get(variant, variant),
            "reference": labels.get(reference, reference), "instructions": len(mine),
            "wins": int((mine > 0.5).sum()), "ties": int((mine == 0.5).sum()),
            "losses": int((mine < 0.5).sum()), "failed": asked - len(mine),
            "win_rate": 100 * rate, "ci_low": 100 * low, "ci_high": 100 * high, "judge": judge,
        })
    return rows


def winrate_table(comparisons: Mapping[str, dict], judgments: Mapping[str, pd.DataFrame],
                  labels: Mapping[str, str], samples: int, seed: int) -> pd.DataFrame:
    """One row per (comparison, variant), comparisons and variants in configuration order."""
    rows = []
    for name, spec in comparisons.items():
        rows += comparison_rows(judgments[name], spec.get("figure", name), spec["variants"],
                                spec["reference"], labels, samples, seed)
    table = pd.DataFrame(rows, columns=COLUMNS)
    table.attrs["decimals"] = {"win_rate": 1, "ci_low": 1, "ci_high": 1}
    return table
