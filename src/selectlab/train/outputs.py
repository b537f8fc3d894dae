"""What a finished pretraining run writes: the final (averaged) model with its tokenizer,
snapshots and card, and the training log. `s` is the run's selectlab.train.loop.TrainSettings
(not imported: the loop imports this module)."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict
from pathlib import Path

from selectlab.devices import compute_dtype
from selectlab.flops import cost_record, module_shape, training_flops
from selectlab.shards import write_json
from selectlab.train import checkpoints, snapshots
from selectlab.train.model import count_parameters

LOG_COLUMNS = ["step", "tokens", "loss", "lr"]


def write_final_model(out_dir, config, state: dict, steps: list[int], tokenizer,
                      s, log_rows: list[dict], total_steps: int, *,
                      seconds: float, device: str = "cpu", gpus: int = 0,
                      snapshot_dir: Path | None = None, settings_hash: str = "") -> dict:
    """Save the averaged weights with the tokenizer, and the run's snapshots (staged in
    `snapshot_dir`) beside them, renamed into place when complete; the card records the run's
    cost (`seconds` of training, resumed attempts included).

    The weights are loaded into a fresh single-device model, so this works the same after DDP,
    FSDP or single-process training.
    """
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(config)
    model.load_state_dict(state)
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp-{checkpoints.process_tag()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        card = {
            "parameters": count_parameters(model),
            "steps": total_steps,
            "tokens": log_rows[-1]["tokens"],
            "final_loss": log_rows[-1]["loss"],
            "averaged_checkpoint_steps": steps,
            "settings": asdict(s),
            # what the matmuls ran in: fp32 where bf16 was asked on a device without it
            "compute_dtype": compute_dtype(s.dtype, device),
            "cost": training_cost(model, s, log_rows[-1]["tokens"], seconds, device, gpus),
        }
        if snapshot_dir is not None:
            card["snapshots"] = snapshots.move_snapshots(snapshot_dir, tmp,
                                                         s.snapshot_fractions, settings_hash)
        write_json(tmp / "training_card.json", card)
        shutil.rmtree(out_dir, ignore_errors=True)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return card


def training_cost(model, s, tokens: int, seconds: float, device: str,
                  gpus: int) -> dict:
    """FLOPs (selectlab.flops: 6ND + attention) and time of every step of the run, resumed ones
    included."""
    shape = module_shape(model, s.seq_len)
    return cost_record("train", training_flops(shape, tokens), seconds=seconds, gpus=gpus,
                       device=device, shape=shape, tokens=tokens)


def write_log(path: str | Path, rows: list[dict]) -> None:
    """step, tokens, loss, lr per optimiser step; no wall-clock values (the file is archived
    and must be the same bytes on a rerun; throughput goes to the job's log)."""
    import pandas as pd

    from selectlab.shards import atomic_path

    with atomic_path(path) as tmp:
        pd.DataFrame(rows, columns=LOG_COLUMNS).to_csv(tmp, index=False)
