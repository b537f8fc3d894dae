"""How fast a trained rater scores: DataMan's Table 10 per rater version.

DataMan (appendix B.2, Table 10) reports for each of its three versions the input speed
(tokens/s), output speed (tokens/s), processing speed (documents/s) and memory (GB) of one
worker. The training job measures the same on its held-out documents, scored once more by the
saved rater through its scoring path (the generative versions through the evaluation backend):
one row per version, all on the same documents and device, so the versions compare. The
annotation throughput table (selectlab.annotate.throughput) gives the annotating version's
speed over the whole pool.
"""

from __future__ import annotations

import contextlib
import resource
import time
from collections.abc import Iterator


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux


@contextlib.contextmanager
def measured(device: str) -> Iterator[dict]:
    """Seconds and peak memory of the block: the accelerator's peak allocation on a GPU, the
    process's peak resident memory (training included) on a CPU."""
    import torch

    on_gpu = str(device).startswith("cuda")
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    result: dict = {}
    started = time.perf_counter()
    yield result
    if on_gpu:
        torch.cuda.synchronize()
    result["seconds"] = time.perf_counter() - started
    result["memory_gb"] = (torch.cuda.max_memory_allocated() / 1e9 if on_gpu else peak_rss_gb())
    result["memory_kind"] = "device" if on_gpu else "rss"
    result["device"] = str(device)


def throughput_record(documents: int, input_tokens: int, output_tokens: int,
                      timing: dict) -> dict:
    """Counts and rates of one scoring pass (a Table 10 row)."""
    seconds = timing["seconds"]

    def rate(total: float) -> float:
        return round(total / seconds, 2) if seconds > 0 else 0.0

    return {"documents": int(documents), "input_tokens": int(input_tokens),
            # microseconds: a pass over a few documents takes milliseconds, and the rates
            # must agree with the seconds they are read beside
            "output_tokens": int(output_tokens), "seconds": round(seconds, 6),
            "input_tokens_per_s": rate(input_tokens), "output_tokens_per_s": rate(output_tokens),
            "docs_per_s": rate(documents), "memory_gb": round(timing["memory_gb"], 3),
            "memory_kind": timing["memory_kind"], "device": timing["device"]}
