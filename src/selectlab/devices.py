"""Where a model job runs and in which precision: shared by annotation, rater training,
pretraining and evaluation (which log the GPUs they were given).

bf16 is asked for where it is fast: GPUs and CPUs that compute it natively (AVX512-BF16 or
AMX). Elsewhere torch emulates it, and a bf16 matmul runs some 50x slower than float32 (9.6 s
against 0.17 s for 2048x128 @ 128x8192 on an AVX2-only EPYC, 2 threads), which turns the laptop
default's minutes into hours. A job asked for bf16 on such a device computes in float32 and says
so in its log (`compute_dtype`); a GPU without bf16 did the same before.

torch is imported inside the functions so that CPU-only stages importing their modules stay
light.
"""

from __future__ import annotations

import logging
import os

DTYPES = ("float32", "bfloat16", "float16")
BF16_NAMES = ("bf16", "bfloat16")
log = logging.getLogger(__name__)
_fallbacks_logged: set[tuple[str, str]] = set()


def select_device(gpus: int) -> str:
    """'cpu' for a job without GPUs, else the first visible GPU; a GPU job on a machine whose
    torch sees none is an error, not a silent fall-back to a CPU run hours longer."""
    import torch

    if gpus <= 0:
        return "cpu"
    if not torch.cuda.is_available():
        raise ValueError(f"the job asked for {gpus} GPU(s) but torch sees none")
    return "cuda:0"


def native_bf16(device) -> bool:
    """Whether `device` (a torch.device or its name) computes bf16 natively."""
    import torch

    kind = str(getattr(device, "type", device)).split(":")[0]
    if kind == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if kind == "cpu":
        return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    return True


def compute_dtype(name: str, device) -> str:
    """`name`, or float32 (in the same spelling family) where `name` is bf16 and `device` has no
    native bf16; the fall-back is logged."""
    if name not in BF16_NAMES or native_bf16(device):
        return name
    if (name, str(device)) not in _fallbacks_logged:  # once per job, not once per step
        _fallbacks_logged.add((name, str(device)))
        log.warning("dtype %s asked for, but %s has no native bf16 (AVX512-BF16/AMX); "
                    "computing in float32, as emulated bf16 is ~50x slower", name, device)
    return "fp32" if name == "bf16" else "float32"


def torch_dtype(name: str, device=None):
    """The torch dtype named `name`; with a `device`, float32 where bf16 is not native there."""
    import torch

    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {name!r}")
    return getattr(torch, name if device is None else compute_dtype(name, device))


def visible_devices() -> str:
    """One log line: the GPUs the scheduler handed this process and what torch makes of them."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
    try:
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        device = "cuda" if count else "cpu"
    except ImportError:
        count, device = 0, "unknown"
    return f"devices: CUDA_VISIBLE_DEVICES={visible} torch_device={device} cuda_devices={count}"
