"""Checkpoint averaging and settings-aware resume."""

from __future__ import annotations

import pytest
import torch

from selectlab.train import checkpoints


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


def test_save_keeps_newest_and_average_uses_last_three(tmp_path):
    for step in (10, 20, 30, 40):
        checkpoints.save_checkpoint(tmp_path, step, {"model": {"w": torch.tensor([float(step)])},
                                                     "settings_hash": "h"}, keep=3)
    assert [s for s, _ in checkpoints.list_checkpoints(tmp_path)] == [20, 30, 40]
    averaged, steps = checkpoints.average_last_checkpoints(tmp_path, 3)
    assert steps == [20, 30, 40] and averaged["w"].item() == 30.0


def test_resume_only_from_checkpoints_with_the_same_settings(tmp_path):
    checkpoints.save_checkpoint(tmp_path, 5, {"settings_hash": "old", "step": 5}, keep=3)
    checkpoints.save_checkpoint(tmp_path, 3, {"settings_hash": "new", "step": 3}, keep=3)
    assert checkpoints.latest_resumable(tmp_path, "new")["step"] == 3
    assert checkpoints.latest_resumable(tmp_path, "other") is None
    assert checkpoints.discard_foreign_checkpoints(tmp_path, "new") == 1
    assert [s for s, _ in checkpoints.list_checkpoints(tmp_path)] == [3]
