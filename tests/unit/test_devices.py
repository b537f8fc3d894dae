"""Where bf16 is asked for but the device would only emulate it, jobs compute in float32."""

from __future__ import annotations

import contextlib
import logging

import pytest
import torch

from selectlab import devices
from selectlab.train.loop import autocast_context


@pytest.fixture()
def cpu_bf16(monkeypatch):
    """Set whether this process's CPU has native bf16, and forget earlier fall-back logs."""
    monkeypatch.setattr(devices, "_fallbacks_logged", set())

    def set_native(native: bool) -> None:
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)

    return set_native


def test_bf16_falls_back_to_float32_on_a_cpu_without_it(cpu_bf16, caplog):
    cpu_bf16(False)
    with caplog.at_level(logging.WARNING, logger="selectlab.devices"):
        assert devices.compute_dtype("bf16", "cpu") == "fp32"
        assert devices.compute_dtype("bfloat16", torch.device("cpu")) == "float32"
        assert devices.compute_dtype("bf16", "cpu") == "fp32"
    assert devices.torch_dtype("bfloat16", "cpu") is torch.float32
    assert devices.torch_dtype("bfloat16") is torch.bfloat16  # no device: the name as given
    assert isinstance(autocast_context(torch.device("cpu"), "bf16"), contextlib.nullcontext)
    # once per dtype spelling and device, not once per training step
    assert len([r for r in caplog.records if "no native bf16" in r.getMessage()]) == 2


def test_bf16_stays_where_the_cpu_has_it(cpu_bf16):
    cpu_bf16(True)
    assert devices.compute_dtype("bf16", "cpu") == "bf16"
    assert devices.torch_dtype("bfloat16", "cpu") is torch.bfloat16
    assert isinstance(autocast_context(torch.device("cpu"), "bf16"), torch.autocast)


def test_other_dtypes_are_never_changed(cpu_bf16):
    cpu_bf16(False)
    for name in ("float32", "float16", "fp32"):
        assert devices.compute_dtype(name, "cpu") == name
    with pytest.raises(ValueError, match="dtype must be one of"):
        devices.torch_dtype("bf17", "cpu")
