"""`selectlab pretrain`: train one variant's model; relaunches itself under torchrun for >1 GPU."""

from __future__ import annotations

import logging
import os
import sys

from selectlab.commands import json_arg
from selectlab.devices import visible_devices

log = logging.getLogger(__name__)

# The c10d store listens on the first node; a port derived from the job id keeps two multi-node
# jobs that happen to share a first node from colliding.
RDZV_PORT_BASE = 20000
RDZV_PORT_SPAN = 10000


def rendezvous_endpoint(env: dict) -> str:
    """host:port of the c10d store, on the node `srun` was started from (the batch node)."""
    host = env.get("MASTER_ADDR") or env.get("SLURM_LAUNCH_NODE_IPADDR")
    if not host:
        raise ValueError("multi-node pretraining must run as one `srun` task per node (the "
                         "pretrain rule starts it so); neither MASTER_ADDR nor "
                         "SLURM_LAUNCH_NODE_IPADDR is set")
    port = env.get("MASTER_PORT")
    if not port:
        job = int(env.get("SLURM_JOB_ID", "0") or 0)
        port = str(RDZV_PORT_BASE + job % RDZV_PORT_SPAN)
    return f"{host}:{port}"


def launch_command(argv: list[str], gpus: int, nodes: int,
                   env: dict | None = None) -> list[str] | None:
    """The torchrun command that reruns this one on every GPU of this node, or None.

    `gpus` counts GPUs per node. On one node torchrun runs standalone (a free local port, so
    two multi-GPU jobs on one machine do not clash). On several nodes the workflow has already
    started one copy of this command per node with `srun` (outside the container: there is no
    `srun` inside it), and the copies meet through torchrun's c10d rendezvous.
    """
    env = os.environ if env is None else env
    if "LOCAL_RANK" in env or (gpus <= 1 and nodes <= 1):
        return None
    if nodes <= 1:
        return ["torchrun", "--standalone", f"--nproc-per-node={gpus}",
                "-m", "selectlab.cli", *argv]
    # Without GPUs (a CPU test of the multi-node path) each node runs one gloo process.
    return ["torchrun", f"--nnodes={nodes}", f"--nproc-per-node={max(gpus, 1)}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint={rendezvous_endpoint(env)}",
            f"--rdzv-id={env.get('SLURM_JOB_ID', 'selectlab')}",
            "-m", "selectlab.cli", *argv]


def run(args) -> dict | None:
    command = launch_command(sys.argv[1:], args.gpus, args.nodes)
    log.info(visible_devices())
    if command is not None:
        log.info("relaunching: %s", " ".join(command[:6]))
        sys.stdout.flush()
        sys.stderr.flush()
        os.execvp(command[0], command)
    from selectlab.train.preemption import PREEMPTED_EXIT_CODE, Preempted, StopRequest

    # Installed before torch is imported and the model built: a warning that arrives early
    # still stops the run, after its first step.
    stop = StopRequest().install()
    from selectlab.train.loop import LaunchSettings, Superseded, TrainSettings, pretrain
    from selectlab.train.model import ModelPreset

    settings = TrainSettings.from_dict(args.params["settings"])
    preset = ModelPreset.from_dict(args.params["preset"])
    launch = LaunchSettings.from_dict(args.launch)
    try:
        return pretrain(args.data, args.tokenizer, preset, settings, launch, args.out_dir,
                        args.checkpoint_dir, args.log_csv, init_from=args.init_from,
                        stop=stop) or None
    except Preempted as stopped:
        log.warning("%s", stopped)
        raise SystemExit(PREEMPTED_EXIT_CODE) from None
    except Superseded as superseded:
        log.error("%s", superseded)
        raise SystemExit(1) from None


def register(stages) -> None:
    p = stages.add_parser("pretrain", help="train one variant's model for one epoch")
    p.set_defaults(func=run)
    p.add_argument("--data", required=True, help="packed train.npy of the variant")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--params", type=json_arg, required=True,
                   help="model preset and training settings (what is learned)")
    p.add_argument("--launch", type=json_arg, required=True,
                   help="micro_batch_sequences, activation_checkpointing, fsdp (how it runs)")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--log-csv", required=True)
    p.add_argument("--init-from", default=None, help="model directory to continue from")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per node allocated to the job")
    p.add_argument("--nodes", type=int, default=1,
                   help="nodes of the job; >1 expects one `srun` task per node")
