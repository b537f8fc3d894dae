"""Process-group setup for `torchrun` launches; a no-op single process otherwise.

torchrun sets RANK, LOCAL_RANK and WORLD_SIZE. Without them (CPU laptop, one GPU) training runs
in-process with the same code path. Checkpoints hold each rank's shards of the model and
optimiser (`sharded_state`) and load on any world size; only the final model is gathered in
full, on rank 0.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from dataclasses import dataclass

import torch
import torch.distributed as torch_dist
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_state_dict,
)

PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass(frozen=True)
class Distributed:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def barrier(self) -> None:
        if self.active:
            torch_dist.barrier()

    def broadcast_object(self, value):
        """Rank 0's `value` on every rank."""
        if not self.active:
            return value
        box = [value]
        torch_dist.broadcast_object_list(box, src=0)
        return box[0]

    def any_rank(self, flag: bool) -> bool:
        """True on every rank if `flag` is true on any (ranks see a signal at different steps)."""
        if not self.active:
            return flag
        value = torch.tensor([1.0 if flag else 0.0], device=self.device)
        torch_dist.all_reduce(value, op=torch_dist.ReduceOp.MAX)
        return bool(value.item())

    def shutdown(self) -> None:
        if self.active:
            torch_dist.destroy_process_group()


def die_with_launcher() -> None:
    """Under torchrun, have the kernel kill this worker when torchrun dies, so a killed job
    leaves no orphan training on (Linux only; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return


def setup_distributed() -> Distributed:
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if "LOCAL_RANK" in os.environ:
        die_with_launcher()
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if world_size > 1 and not torch_dist.is_initialized():
        torch_dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Distributed(rank, local_rank, world_size, device)


def uses_fsdp(dist: Distributed, fsdp: bool) -> bool:
    return dist.active and fsdp


def wrap_model(model: torch.nn.Module, dist: Distributed, fsdp: bool,
               mixed_precision: bool) -> torch.nn.Module:
    """FSDP2 (every decoder layer, then the whole model) or DDP across processes.

    With FSDP and bf16, FSDP's mixed-precision policy gathers parameters in bf16 and reduces
    gradients in fp32 while the sharded master weights stay fp32; autocast would instead keep a
    bf16 copy of every weight alive until backward, unsharded (train/memory.py counts this).
    """
    if not dist.active:
        return model
    if fsdp:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        policy = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
                  if mixed_precision else MixedPrecisionPolicy())
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        return model
    from torch.nn.parallel import DistributedDataParallel

    device_ids = [dist.local_rank] if dist.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids)


def gradient_sync(model: torch.nn.Module, enabled: bool):
    """Context for one micro-step: gradients are reduced across processes only when `enabled`
    (the last micro-step of a global batch); earlier micro-steps accumulate locally."""
    if hasattr(model, "set_requires_gradient_sync"):  # FSDP2
        model.set_requires_gradient_sync(enabled)
        return contextlib.nullcontext()
    if not enabled and hasattr(model, "no_sync"):  # DDP
        return model.no_sync()
    return contextlib.nullcontext()


def sharded_state(model, optimizer) -> tuple[dict, dict]:
    """This rank's shards of the model and optimiser state, keyed by parameter name."""
    return get_state_dict(model, optimizer)


def load_sharded_state(model, optimizer, model_state: dict, optim_state: dict) -> None:
    set_state_dict(model, optimizer, model_state_dict=model_state, optim_state_dict=optim_state)


def model_shards(model) -> dict:
    return get_model_state_dict(model)


def set_model_shards(model, state: dict) -> None:
    set_model_state_dict(model, state)


def full_model_state(model) -> dict:
    """The whole model's weights on rank 0's CPU (collective; other ranks get an empty dict)."""
    return get_model_state_dict(
        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def all_reduce_mean(value: torch.Tensor, dist: Distributed) -> float:
    if dist.active:
        value = value.clone()
        torch_dist.all_reduce(value, op=torch_dist.ReduceOp.AVG if value.is_cuda
                              else torch_dist.ReduceOp.SUM)
        if not value.is_cuda:
            value /= dist.world_size
    return float(value)
