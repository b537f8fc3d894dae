"""Snapshots of a model part-way through training, for the training-curve figures.

`snapshot_fractions` in the training settings names points of the run as fractions of its
steps (Meta-rater Figure 1: average downstream score against tokens). At each point the
current weights, not averaged, are saved as a loadable model under the checkpoint directory's
`snapshots/f{fraction}`; when training ends they move into the final model directory
(`final/snapshots/f{fraction}`, `selectlab.layout.snapshot`), so they are part of the step's
declared output. A snapshot records the run's settings hash: one left over from a run with
other settings is not used.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from selectlab.layout import SNAPSHOTS
from selectlab.layout import snapshot_name as layout_snapshot_name

CARD = "snapshot.json"


def snapshot_name(fraction: float) -> str:
    """E.g. "f0.5": the fraction as the curves name their points (the float's str)."""
    return layout_snapshot_name(str(float(fraction)))


def snapshot_steps(fractions, total_steps: int) -> dict[int, float]:
    """step (1-based, after which to save) -> fraction; at least step 1, at most the last."""
    steps: dict[int, float] = {}
    for fraction in fractions:
        if not 0.0 < float(fraction) < 1.0:
            raise ValueError(f"snapshot fraction {fraction} is not strictly between 0 and 1")
        steps[min(total_steps, max(1, round(float(fraction) * total_steps)))] = float(fraction)
    return steps


def save_snapshot(staging: Path, fraction: float, state: dict, config, tokenizer,
                  run_hash: str, step: int, tokens: int) -> Path:
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(config)
    model.load_state_dict(state)
    out = Path(staging) / snapshot_name(fraction)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    (tmp / CARD).write_text(json.dumps({"fraction": fraction, "step": step, "tokens": tokens,
                                        "settings_hash": run_hash}, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def move_snapshots(staging: Path, model_dir: Path, fractions, run_hash: str) -> list[dict]:
    """Move this run's snapshots into the model directory; a missing one is an error."""
    cards = []
    for fraction in fractions:
        source = Path(staging) / snapshot_name(fraction)
        card_path = source / CARD
        card = json.loads(card_path.read_text()) if card_path.exists() else None
        if card is None or card["settings_hash"] != run_hash:
            raise FileNotFoundError(
                f"no snapshot at fraction {fraction} of this run in {staging}: it was resumed "
                "from a checkpoint past that point after its snapshot was lost; delete the "
                "checkpoints to train again from the start")
        target = Path(model_dir) / SNAPSHOTS / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(source), str(target))
        cards.append(card)
    return cards
