"""Training checkpoints: sharded, resumable on any world size, found without reading tensors.

A variant's checkpoint directory holds one directory per checkpoint:

    step_0001000/
        .metadata, __0_0.distcp, __1_0.distcp, ...   torch.distributed.checkpoint (DCP) shards
        run.json                                      step, kind, settings hash, training log

Every rank writes and reads only its own shards, and DCP reshards on load, so a checkpoint saved
by 4 nodes x 8 GPUs loads on 16 GPUs or in one CPU process. `run.json` is written last, after
every shard: a directory without it is an unfinished save and is never resumed. Finding the
checkpoint to resume reads only these small JSON files.

A checkpoint whose settings hash differs from the run's is never resumed, so changing a variant
and re-running starts it from scratch instead of silently continuing an unrelated run. Launch
settings (world size, micro-batch, activation checkpointing, FSDP) are not in the hash: they do
not change what is learned, so resizing a job resumes it.

`regular` checkpoints are written every `checkpoint_every` steps and at the end; the final model
averages the last few of them. A `preemption` checkpoint is written when the job is told to stop
early; it is resumed from but never averaged, and it is removed once a later regular checkpoint
exists, so a pre-empted run averages exactly the checkpoints an uninterrupted run averages.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import uuid
import warnings
from collections.abc import Mapping
from pathlib import Path

import torch

from selectlab import layout

CHECKPOINT_NAME = re.compile(
    rf"^{layout.CHECKPOINT_PREFIX}(\d{{{layout.CHECKPOINT_STEP_DIGITS}}})$")
TMP_PREFIX = f".{layout.CHECKPOINT_PREFIX}"
META_NAME = layout.CHECKPOINT_META
OWNER_NAME = layout.CHECKPOINT_OWNER
REGULAR, PREEMPTION = "regular", "preemption"


def settings_hash(settings: dict) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def checkpoint_path(directory: str | Path, step: int) -> Path:
    return Path(directory) / layout.checkpoint_name(step)


def process_tag() -> str:
    """Unique per process across the nodes sharing a file system: host and pid."""
    return f"{socket.gethostname()}-{os.getpid()}"


def read_meta(path: str | Path) -> dict | None:
    """A checkpoint's run.json, or None for an unfinished save."""
    try:
        return json.loads((Path(path) / META_NAME).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def list_checkpoints(directory: str | Path, kind: str | None = None) -> list[tuple[int, Path]]:
    """(step, path) of every finished checkpoint (of `kind`, if given), oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = CHECKPOINT_NAME.match(path.name)
        if not match:
            continue
        meta = read_meta(path)
        if meta is not None and (kind is None or meta.get("kind") == kind):
            found.append((int(match.group(1)), path))
    return sorted(found)


def write_shards(path: Path, state: dict, dist) -> None:
    """DCP save of `state` (collective: every rank calls it with its own shards)."""
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        # Single-process saves and loads warn that they assume a single process; they do.
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        dcp.save(state, checkpoint_id=str(path), no_dist=not dist.active)


def read_shards(path: Path, state: dict, dist) -> None:
    """DCP load into `state` in place (collective); tensors are resharded to `state`'s layout."""
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        # Single-process saves and loads warn that they assume a single process; they do.
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        dcp.load(state, checkpoint_id=str(path), no_dist=not dist.active)


def save_checkpoint(directory: str | Path, step: int, state: dict, meta: dict, kind: str,
                    keep: int, dist) -> Path:
    """Write a checkpoint (collective), then prune. Returns its path.

    Shards go to a temporary directory named after rank 0's process; rank 0 adds run.json and
    renames it into place, so an interrupted save never looks finished.
    """
    directory = Path(directory)
    final = checkpoint_path(directory, step)
    rank0 = dist.broadcast_object(process_tag())
    tmp = directory / f".{layout.checkpoint_name(step)}.tmp-{rank0}"
    if dist.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    dist.barrier()
    write_shards(tmp, state, dist)
    dist.barrier()
    if dist.is_main:
        record = dict(meta, step=step, kind=kind)
        (tmp / META_NAME).write_text(json.dumps(record, sort_keys=True))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        prune(directory, keep)
    dist.barrier()
    return final


def prune(directory: str | Path, keep: int) -> None:
    """Keep the newest `keep` regular checkpoints and any pre-emption checkpoint newer than all
    of them (the one a rerun resumes from)."""
    regular = list_checkpoints(directory, REGULAR)
    for _, old in regular[:-keep]:
        shutil.rmtree(old)
    newest_regular = regular[-1][0] if regular else -1
    for step, path in list_checkpoints(directory, PREEMPTION):
        if step <= newest_regular:
            shutil.rmtree(path)


def latest_resumable(directory: str | Path, expected_hash: str) -> tuple[Path, dict] | None:
    """The newest finished checkpoint written with the same settings, and its run.json."""
    for _, path in reversed(list_checkpoints(directory)):
        meta = read_meta(path)
        if meta.get("settings_hash") == expected_hash:
            return path, meta
    return None


def discard_foreign_checkpoints(directory: str | Path, expected_hash: str) -> int:
    """Remove checkpoints of runs with other settings and unfinished saves; returns how many
    checkpoints were removed."""
    directory = Path(directory)
    removed = 0
    for _, path in list_checkpoints(directory):
        if read_meta(path).get("settings_hash") != expected_hash:
            shutil.rmtree(path)
            removed += 1
    if directory.is_dir():
        for path in directory.glob(f"{TMP_PREFIX}*.tmp-*"):
            shutil.rmtree(path, ignore_errors=True)
    return removed


def claim_directory(directory: str | Path) -> str:
    """Mark this run as the one writing into `directory`; returns its token.

    A later run on the same variant (a rerun while an orphaned job still trains) claims the
    directory in turn, and the older run stops at its next write (`owns_directory`).
    """
    token = f"{process_tag()}-{uuid.uuid4().hex}"
    path = Path(directory) / OWNER_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{OWNER_NAME}.tmp-{process_tag()}")
    tmp.write_text(token)
    os.replace(tmp, path)
    return token


def owns_directory(directory: str | Path, token: str) -> bool:
    try:
        return (Path(directory) / OWNER_NAME).read_text() == token
    except FileNotFoundError:
        return False


def average_state_dicts(states) -> dict[str, torch.Tensor]:
    """Element-wise mean of floating-point tensors (summed in float32, one state at a time);
    other tensors are taken from the last state. Works on sharded (DTensor) states alike."""
    total: dict[str, torch.Tensor] = {}
    last: Mapping[str, torch.Tensor] | None = None
    count = 0
    for state in states:
        if last is not None and state.keys() != last.keys():
            raise ValueError("checkpoints to average have different parameter names")
        for key, value in state.items():
            if torch.is_floating_point(value):
                value = value.to(torch.float32)
                total[key] = total[key] + value if key in total else value.clone()
        last, count = state, count + 1
    if last is None:
        raise ValueError("no checkpoints to average")
    return {key: (total[key] / count).to(value.dtype) if key in total else value.clone()
            for key, value in last.items()}


def averaged_model_state(paths: list[Path], template: dict[str, torch.Tensor],
                         dist) -> dict[str, torch.Tensor]:
    """Mean of the "model" entries of checkpoints `paths` (collective), laid out like
    `template` (this rank's shards of the model's state dict)."""

    def loaded(path: Path) -> dict[str, torch.Tensor]:
        state = {"model": {key: torch.empty_like(value) for key, value in template.items()}}
        read_shards(path, state, dist)
        return state["model"]

    return average_state_dicts(loaded(path) for path in paths)
