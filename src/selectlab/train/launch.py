"""How a pretraining job starts its processes: one per GPU, on one node or several.

Two steps, one module. When the workflow plans a job, `node_launcher` is the command prefix
that starts one `selectlab pretrain` per node of a multi-node job with `srun` (on the batch
node, outside the container: there is no `srun` inside it; each copy enters the image itself),
and `launch_options` its GPUs, nodes and launch settings. When `selectlab pretrain` runs,
`torchrun_command` is the torchrun command it re-executes itself under so that every GPU of its
node gets a process; the copies of several nodes meet through torchrun's c10d rendezvous on the
batch node. docs/cluster.md describes the whole path.

The rule passes both as resources, not params: how a job runs never reruns it.
"""

from __future__ import annotations

import json

# The c10d store listens on the first node; a port derived from the job id keeps two multi-node
# jobs that happen to share a first node from colliding.
RDZV_PORT_BASE = 20000
RDZV_PORT_SPAN = 10000


def node_launcher(shape: dict, image: str | None = None, apptainer_args: str = "",
                  home: str = ".") -> str:
    """Command prefix that starts one task per node of a multi-node job; empty on one node.

    `shape` is the job's resource shape (selectlab.resources); `image` the Apptainer image each
    task runs in (None: on the host), with `apptainer_args` and `home`."""
    nodes = shape["nodes"]
    if nodes <= 1:
        return ""
    launcher = (f"srun --nodes={nodes} --ntasks={nodes} --ntasks-per-node=1"
                f" --cpus-per-task={shape['cpus']} --kill-on-bad-exit=1 ")
    if image:
        launcher += f"apptainer exec --home {home} {apptainer_args} {image} "
    return launcher


def launch_options(settings: dict, shape: dict) -> str:
    """`selectlab pretrain`'s options for how it runs: `--launch` (micro-batch, activation
    checkpointing, FSDP; selectlab.train.resolve.launch_settings), `--gpus` per node and
    `--nodes` of the job's resource `shape`."""
    launch = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return f"--launch '{launch}' --gpus {shape['gpu']} --nodes {shape['nodes']}"


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


def torchrun_command(argv: list[str], gpus: int, nodes: int, env: dict) -> list[str] | None:
    """The torchrun command that reruns `selectlab <argv>` on every GPU of this node, or None.

    `gpus` counts GPUs per node. None inside a torchrun worker (LOCAL_RANK set) and for one
    process on one node. On one node torchrun runs standalone (a free local port, so two
    multi-GPU jobs on one machine do not clash); on several, `node_launcher` has started one
    copy per node and the copies meet at `rendezvous_endpoint`.
    """
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
