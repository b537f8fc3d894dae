"""A MATES variant from its stages: one selection, one model, one training log.

The stages are ordinary variants (selectlab.mates.plan); what the tables, figures and the archive
read about the MATES variant is assembled from them:

- `selection.parquet`: every stage's documents in training order (stage 1 first), with a `stage`
  column and `rank` over the whole; `manifest.json`: the totals and each stage's manifest.
- `final/`: the last stage's model (a copy, its training card listing every stage's).
- `train_log.csv`: every stage's steps, with steps and tokens counted across stages.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from selectlab.shards import atomic_path, write_json

STAGE_MANIFEST_KEYS = ("variant", "method", "params", "seed", "budget_tokens", "selected_tokens",
                       "selected_documents", "budget_reached", "short_strata", "excluded")


def union_selection(selections: Sequence[str | Path], manifests: Sequence[str | Path],
                    out_dir: str | Path, *, variant: str, settings: dict,
                    budget_tokens: int) -> dict:
    """Write the variant's selection and manifest from its stages' (given in stage order)."""
    frames, stage_records = [], []
    for stage, (selection, manifest) in enumerate(zip(selections, manifests, strict=True),
                                                  start=1):
        frame = pd.read_parquet(selection)
        frame["stage"] = stage
        frames.append(frame)
        record = json.loads(Path(manifest).read_text())
        stage_records.append({"stage": stage} | {k: record[k] for k in STAGE_MANIFEST_KEYS
                                                 if k in record})
    union = pd.concat(frames, ignore_index=True)
    if union["id"].duplicated().any():
        raise ValueError(f"{variant}: a document was selected by two stages")
    union["rank"] = range(len(union))
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "selection.parquet") as tmp:
        union.to_parquet(tmp, index=False)
    first = json.loads(Path(manifests[0]).read_text())
    selected = int(union["n_tokens"].sum())
    manifest = {"variant": variant, "method": "mates", "params": settings,
                "seed": first.get("seed"), "budget_tokens": budget_tokens,
                "selected_tokens": selected, "selected_documents": int(len(union)),
                "unique_documents": int(union["id"].nunique()),
                "unique_tokens": selected,  # no document is in two stages (checked above)
                "pool": first.get("pool"),  # every stage selects from the same pool
                "pool_tokens": first.get("pool_tokens"),
                "pool_documents": first.get("pool_documents"),
                "budget_reached": selected >= budget_tokens,
                "order": "stage by stage, each stage shuffled", "stages": stage_records}
    write_json(out_dir / "manifest.json", manifest)
    return manifest


def joined_log(logs: Sequence[str | Path]) -> pd.DataFrame:
    """Stage logs one after the other, steps, tokens (and seconds, where a log has them: a
    pretraining log has no wall-clock column) continuing across stages."""
    frames, steps, tokens, seconds = [], 0, 0, 0.0
    for path in logs:
        frame = pd.read_csv(path)
        shifted = frame.assign(step=frame["step"] + steps, tokens=frame["tokens"] + tokens)
        if "seconds" in frame:
            shifted["seconds"] = frame["seconds"] + seconds
            seconds = float(shifted["seconds"].iloc[-1])
        frames.append(shifted)
        steps, tokens = int(shifted["step"].iloc[-1]), int(shifted["tokens"].iloc[-1])
    return pd.concat(frames, ignore_index=True)


def final_model(stage_models: Sequence[str | Path], logs: Sequence[str | Path],
                out_dir: str | Path, out_log: str | Path, *, variant: str) -> dict:
    """Copy the last stage's model and write the joined training log."""
    log = joined_log(logs)
    with atomic_path(out_log) as tmp:
        log.to_csv(tmp, index=False)
    out_dir = Path(out_dir)
    tmp_dir = out_dir.with_name(f".{out_dir.name}.tmp")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    shutil.copytree(stage_models[-1], tmp_dir)
    stages = [json.loads((Path(model) / "training_card.json").read_text())
              for model in stage_models]
    card = {"variant": variant, "assembled_from": [str(m) for m in stage_models],
            "parameters": stages[-1].get("parameters"), "steps": int(log["step"].iloc[-1]),
            "tokens": int(log["tokens"].iloc[-1]), "final_loss": float(log["loss"].iloc[-1]),
            # Each stage's card keeps its own cost; this copy adds none.
            "stages": [{k: v for k, v in stage.items() if k != "cost"} for stage in stages]}
    write_json(tmp_dir / "training_card.json", card)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp_dir, out_dir)
    return card
