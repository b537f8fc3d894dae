"""Training checkpoints: save, find the one to resume from, and average the last few.

A checkpoint records the hash of the run's settings (model, optimiser, data file identity); a
checkpoint with another hash is never resumed, so changing a variant and re-running starts that
variant from scratch instead of silently continuing an unrelated run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import torch

CHECKPOINT_NAME = re.compile(r"^step_(\d{7})\.pt$")


def settings_hash(settings: dict) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def checkpoint_path(directory: str | Path, step: int) -> Path:
    return Path(directory) / f"step_{step:07d}.pt"


def list_checkpoints(directory: str | Path) -> list[tuple[int, Path]]:
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = CHECKPOINT_NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def save_checkpoint(directory: str | Path, step: int, state: dict, keep: int) -> Path:
    """Write atomically, then drop all but the newest `keep` checkpoints."""
    path = checkpoint_path(directory, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    torch.save(state, tmp)
    os.replace(tmp, path)
    for _, old in list_checkpoints(directory)[:-keep]:
        old.unlink()
    return path


def latest_resumable(directory: str | Path, expected_hash: str) -> dict | None:
    """The newest checkpoint written by a run with the same settings, or None."""
    for _, path in reversed(list_checkpoints(directory)):
        state = torch.load(path, map_location="cpu", weights_only=False)
        if state.get("settings_hash") == expected_hash:
            return state
    return None


def discard_foreign_checkpoints(directory: str | Path, expected_hash: str) -> int:
    """Remove checkpoints of runs with other settings; returns how many were removed."""
    removed = 0
    for _, path in list_checkpoints(directory):
        state = torch.load(path, map_location="cpu", weights_only=False)
        if state.get("settings_hash") != expected_hash:
            path.unlink()
            removed += 1
    return removed


def average_state_dicts(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Element-wise mean of floating-point tensors; other tensors are taken from the last state."""
    if not states:
        raise ValueError("no checkpoints to average")
    keys = states[-1].keys()
    for other in states[:-1]:
        if other.keys() != keys:
            raise ValueError("checkpoints to average have different parameter names")
    averaged = {}
    for key in keys:
        last = states[-1][key]
        if torch.is_floating_point(last):
            stacked = torch.stack([state[key].to(torch.float32) for state in states])
            averaged[key] = stacked.mean(dim=0).to(last.dtype)
        else:
            averaged[key] = last.clone()
    return averaged


def average_last_checkpoints(directory: str | Path, count: int) -> tuple[dict, list[int]]:
    """Average the model weights of the newest `count` checkpoints; returns weights and steps."""
    chosen = list_checkpoints(directory)[-count:]
    states = [torch.load(path, map_location="cpu", weights_only=False)["model"]
              for _, path in chosen]
    return average_state_dicts(states), [step for step, _ in chosen]
