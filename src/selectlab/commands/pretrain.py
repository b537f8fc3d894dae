"""`selectlab pretrain`: train one variant's model; relaunches itself under torchrun for >1 GPU
(selectlab.train.launch)."""

from __future__ import annotations

import logging
import os
import sys

from selectlab.commands import json_arg
from selectlab.devices import visible_devices
from selectlab.train.launch import torchrun_command

log = logging.getLogger(__name__)


def run(args) -> dict | None:
    command = torchrun_command(sys.argv[1:], args.gpus, args.nodes, dict(os.environ))
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
