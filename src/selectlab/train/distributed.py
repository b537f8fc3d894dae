"""Process-group setup for `torchrun` launches; a no-op single process otherwise.

torchrun sets RANK, LOCAL_RANK and WORLD_SIZE. Without them (CPU laptop, one GPU) training runs
in-process with the same code path. State dicts are always gathered in full on rank 0, so
checkpoints from DDP, FSDP and single-process runs are interchangeable.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import torch
import torch.distributed as torch_dist
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_state_dict,
    set_state_dict,
)


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

    def no_sync(self, model: torch.nn.Module):
        # DDP skips the gradient all-reduce inside no_sync. FSDP2 modules have no `no_sync`
        # (their switch is `set_requires_gradient_sync`, not used here), so under FSDP every
        # micro-step reduces its gradients; single processes simply accumulate.
        if self.active and hasattr(model, "no_sync"):
            return model.no_sync()
        return contextlib.nullcontext()

    def full_state(self, model, optimizer) -> tuple[dict, dict]:
        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        return get_state_dict(model, optimizer, options=options)

    def load_state(self, model, optimizer, model_state: dict, optim_state: dict) -> None:
        options = StateDictOptions(full_state_dict=True)
        set_state_dict(model, optimizer, model_state_dict=model_state,
                       optim_state_dict=optim_state, options=options)

    def shutdown(self) -> None:
        if self.active:
            torch_dist.destroy_process_group()


def setup_distributed() -> Distributed:
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if world_size > 1 and not torch_dist.is_initialized():
        torch_dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Distributed(rank, local_rank, world_size, device)


def wrap_model(model: torch.nn.Module, dist: Distributed, fsdp: bool) -> torch.nn.Module:
    if not dist.active:
        return model
    if fsdp:
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        return model
    from torch.nn.parallel import DistributedDataParallel

    device_ids = [dist.local_rank] if dist.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids)


def all_reduce_mean(value: torch.Tensor, dist: Distributed) -> float:
    if dist.active:
        value = value.clone()
        torch_dist.all_reduce(value, op=torch_dist.ReduceOp.AVG if value.is_cuda
                              else torch_dist.ReduceOp.SUM)
        if not value.is_cuda:
            value /= dist.world_size
    return float(value)
