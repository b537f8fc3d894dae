"""Where a model job runs and in which precision: shared by annotation, rater training,
pretraining and evaluation (which log the GPUs they were given).

torch is imported inside the functions so that CPU-only stages importing their modules stay
light.
"""

from __future__ import annotations

import os

DTYPES = ("float32", "bfloat16", "float16")


def select_device(gpus: int) -> str:
    """'cpu' for a job without GPUs, else the first visible GPU; a GPU job on a machine whose
    torch sees none is an error, not a silent fall-back to a CPU run hours longer."""
    import torch

    if gpus <= 0:
        return "cpu"
    if not torch.cuda.is_available():
        raise ValueError(f"the job asked for {gpus} GPU(s) but torch sees none")
    return "cuda:0"


def torch_dtype(name: str):
    import torch

    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {name!r}")
    return getattr(torch, name)


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
