"""`selectlab pretrain`: train one variant's model; relaunches itself under torchrun for >1 GPU."""

from __future__ import annotations

import os
import sys

from selectlab.commands import json_arg


def launch_command(argv: list[str], gpus: int, nodes: int) -> list[str] | None:
    """The torchrun command that reruns this one on every allocated GPU, or None if not needed.

    Multi-node jobs use torchrun's c10d rendezvous on the first node of the SLURM allocation.
    """
    if gpus <= 1 or "LOCAL_RANK" in os.environ:
        return None
    command = ["torchrun", f"--nproc-per-node={gpus}"]
    if nodes > 1:
        host = os.environ.get("SLURM_LAUNCH_NODE_IPADDR") or os.environ.get("MASTER_ADDR")
        if not host:
            raise ValueError("multi-node pretraining needs SLURM_LAUNCH_NODE_IPADDR or "
                             "MASTER_ADDR to find the rendezvous host")
        job = os.environ.get("SLURM_JOB_ID", "selectlab")
        command = ["srun", f"--nodes={nodes}", "--ntasks-per-node=1", *command,
                   f"--nnodes={nodes}", "--rdzv-backend=c10d",
                   f"--rdzv-endpoint={host}:29500", f"--rdzv-id={job}"]
    return [*command, "-m", "selectlab.cli", *argv]


def run(args) -> dict | None:
    command = launch_command(sys.argv[1:], args.gpus, args.nodes)
    if command is not None:
        os.execvp(command[0], command)
    from selectlab.train.loop import TrainSettings, pretrain
    from selectlab.train.model import ModelPreset

    settings = TrainSettings.from_dict(args.params["settings"])
    preset = ModelPreset.from_dict(args.params["preset"])
    return pretrain(args.data, args.tokenizer, preset, settings, args.out_dir,
                    args.checkpoint_dir, args.log_csv, init_from=args.init_from) or None


def register(stages) -> None:
    p = stages.add_parser("pretrain", help="train one variant's model for one epoch")
    p.set_defaults(func=run)
    p.add_argument("--data", required=True, help="packed train.npy of the variant")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--log-csv", required=True)
    p.add_argument("--init-from", default=None, help="model directory to continue from")
    p.add_argument("--gpus", type=int, default=0, help="GPUs allocated to the job")
    p.add_argument("--nodes", type=int, default=1)
