"""Stopping a training job early on the cluster's warning, with a checkpoint to resume from.

profiles/slurm asks SLURM to send PREEMPTION_SIGNAL a few minutes before a pretraining job's
time limit (`sbatch --signal`). SLURM signals every process of the job step, and between the
batch script and the training processes sit Snakemake, bash, apptainer and torchrun: SIGURG is
chosen because its default action is to be ignored, so none of them dies of it (SIGUSR1, the
usual choice, would terminate the Snakemake process that waits for the job). Only the training
processes install a handler; the loop checks it after every optimiser step, saves a checkpoint
and exits non-zero, and the profile's retries start the job again, which resumes.
"""

from __future__ import annotations

import signal

PREEMPTION_SIGNAL = signal.SIGURG
PREEMPTED_EXIT_CODE = 75  # EX_TEMPFAIL: try again later


class Preempted(Exception):
    """Raised after the pre-emption checkpoint is written; the command exits non-zero."""


class StopRequest:
    """Remembers that the pre-emption signal arrived; the handler does nothing else."""

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self) -> StopRequest:
        signal.signal(PREEMPTION_SIGNAL, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self.received = signum

    @property
    def requested(self) -> bool:
        return self.received is not None
