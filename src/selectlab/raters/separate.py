"""QuRating Table 6's separate QuRaters (appendix B.2): one model per criterion instead of one
multi-task model with a head per criterion.

Each criterion's model is a complete head rater of its own (backbone and one head), trained on
that criterion's judgments alone with the same settings and saved under
raters/{rater}/model/{criterion}/, loadable with `load_rater`. The held-out pairs are the
multi-task rater's (`qurater.split_pairs` draws them from every judged pair), so Table 6
compares the setups on the same pairs. The job's card (kind `separate`) gathers the parts'
held-out metrics per criterion and sums their costs; it does not score documents itself: the
separate setups are compared, never used to annotate.
"""

from __future__ import annotations

from pathlib import Path

from selectlab.layout import RATER_MODEL
from selectlab.raters.build import rater_heads_of, train_head_rater
from selectlab.raters.io import FORMAT_VERSION, metrics_record, write_card
from selectlab.raters.spec import PROTOCOL

KIND = "separate"
SUMMED = ("flops", "metarater_flops", "tokens", "seconds", "gpu_hours", "wall_hours")


def train_separate_raters(rater: str, labels_path: str | Path, params: dict,
                          out_dir: str | Path, *, name: str, **common) -> dict:
    """Train one rater per criterion of `params` into `out_dir`/model/{criterion}/; returns
    the job's metrics record (every criterion's held-out metrics)."""
    out_dir = Path(out_dir)
    parts = {}
    for head in rater_heads_of(rater, params):
        part_params = params | {"criteria": [head.name]}
        parts[head.name] = train_head_rater(rater, labels_path, part_params,
                                            out_dir / RATER_MODEL / head.name,
                                            name=f"{name}/{head.name}", **common)
    first = next(iter(parts.values()))
    card = {
        "format": FORMAT_VERSION, "kind": KIND, "rater": rater, "name": name, "version": None,
        "family": rater, "protocol": PROTOCOL[rater],
        "parts": {c: f"{RATER_MODEL}/{c}" for c in parts},
        "backbone": {"label": first["backbone"], "window": first["window"]},
        "training": {c: record["training"] for c, record in parts.items()},
        "metrics": {c: record["metrics"][c] for c, record in parts.items()},
        "cost": summed_cost([record["cost"] for record in parts.values()]),
        "config_hash": common.get("config_hash", ""), "params": params,
        "judge": first["judge"],
    }
    write_card(out_dir, card)
    return metrics_record(card)


def summed_cost(costs: list[dict]) -> dict:
    """The parts' cost records as one job's: amounts added, the rest as the first part's."""
    total = dict(costs[0])
    for key in SUMMED:
        total[key] = sum(cost.get(key, 0) for cost in costs)
    return total
