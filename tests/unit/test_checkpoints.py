"""Checkpoint averaging, settings-aware resume and pruning of sharded checkpoints."""

from __future__ import annotations

import pytest
import torch

from selectlab.train import checkpoints
from selectlab.train.distributed import Distributed

SINGLE = Distributed(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"))


def test_average_is_elementwise_mean_of_floats_and_keeps_integer_buffers():
    states = [
        {"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([0.5], dtype=torch.bfloat16),
         "count": torch.tensor([1])},
        {"w": torch.tensor([3.0, 4.0]), "b": torch.tensor([1.5], dtype=torch.bfloat16),
         "count": torch.tensor([2])},
        {"w": torch.tensor([5.0, 9.0]), "b": torch.tensor([2.5], dtype=torch.bfloat16),
         "count": torch.tensor([3])},
    ]
    averaged = checkpoints.average_state_dicts(states)
    assert averaged["w"].tolist() == [3.0, 5.0]
    assert averaged["b"].dtype == torch.bfloat16 and averaged["b"].item() == 1.5
    assert averaged["count"].tolist() == [3]


def test_average_rejects_mismatched_checkpoints():
    with pytest.raises(ValueError, match="different parameter names"):
        checkpoints.average_state_dicts([{"a": torch.zeros(1)}, {"b": torch.zeros(1)}])
    with pytest.raises(ValueError, match="no checkpoints"):
        checkpoints.average_state_dicts([])


def save(directory, step, value, kind=checkpoints.REGULAR, settings_hash="h", keep=3):
    return checkpoints.save_checkpoint(
        directory, step, {"model": {"w": torch.tensor([float(value)])}},
        {"settings_hash": settings_hash, "log": []}, kind, keep=keep, dist=SINGLE)


def test_save_keeps_newest_and_average_uses_last_three(tmp_path):
    for step in (10, 20, 30, 40):
        save(tmp_path, step, step)
    assert [s for s, _ in checkpoints.list_checkpoints(tmp_path)] == [20, 30, 40]
    paths = [path for _, path in checkpoints.list_checkpoints(tmp_path)]
    averaged = checkpoints.averaged_model_state(paths, {"w": torch.zeros(1)}, SINGLE)
    assert averaged["w"].item() == 30.0
    assert not list(tmp_path.glob(".step_*"))  # no temporary directory left behind


def test_preemption_checkpoint_is_resumed_but_kept_out_of_the_averaging_window(tmp_path):
    for step in (10, 20, 30):
        save(tmp_path, step, step)
    save(tmp_path, 37, 37, kind=checkpoints.PREEMPTION)
    # The pre-emption save does not push a regular checkpoint out of the averaging window.
    assert [s for s, _ in checkpoints.list_checkpoints(tmp_path, checkpoints.REGULAR)] == [
        10, 20, 30]
    assert checkpoints.latest_resumable(tmp_path, "h")[1]["step"] == 37
    save(tmp_path, 40, 40)
    assert [s for s, _ in checkpoints.list_checkpoints(tmp_path)] == [20, 30, 40]


def test_resume_only_from_finished_checkpoints_with_the_same_settings(tmp_path):
    save(tmp_path, 5, 5, settings_hash="old")
    save(tmp_path, 3, 3, settings_hash="new")
    unfinished = checkpoints.checkpoint_path(tmp_path, 9)
    unfinished.mkdir()  # shards but no run.json: a save that was interrupted
    (tmp_path / ".step_0000011.tmp-host-1").mkdir()
    path, meta = checkpoints.latest_resumable(tmp_path, "new")
    assert meta["step"] == 3 and path == checkpoints.checkpoint_path(tmp_path, 3)
    assert checkpoints.latest_resumable(tmp_path, "other") is None
    assert checkpoints.discard_foreign_checkpoints(tmp_path, "new") == 1
    assert [s for s, _ in checkpoints.list_checkpoints(tmp_path)] == [3]
    assert not (tmp_path / ".step_0000011.tmp-host-1").exists()


def test_a_later_claim_takes_the_directory_over(tmp_path):
    first = checkpoints.claim_directory(tmp_path)
    assert checkpoints.owns_directory(tmp_path, first)
    second = checkpoints.claim_directory(tmp_path)
    assert not checkpoints.owns_directory(tmp_path, first)
    assert checkpoints.owns_directory(tmp_path, second)
