"""A job's lifetime: it ends with the workflow that started it, and says why when stopped.

The workflow records itself before it starts jobs (`export_supervisor`: SELECTLAB_SUPERVISOR =
host:pid:start time, inherited by every job it starts on this machine). The `selectlab`
command then binds itself to it (`bind_to_supervisor`):

- a watcher thread checks every second that the supervisor still runs. A workflow killed with
  SIGKILL cannot stop its jobs, which would run on as orphans writing into results/ while a
  rerun starts the same jobs; the watcher stops the job instead. The check applies only on the
  supervisor's host (a multi-node job's other nodes see a pid that means nothing there) and
  only to a supervisor the job can see when it starts (not from inside a container with its
  own process namespace); the start time guards against a reused pid;
- PR_SET_PDEATHSIG: the job gets SIGTERM when its parent (the rule's shell) dies;
- SIGTERM: the job passes it on to its own child processes (model servers, data loaders,
  workers), prints why it stops and exits with 143, unwinding so that no temporary file takes
  an output's name.

The job stays in the process group it was started in rather than a group of its own: a
terminal's Ctrl-C reaches the foreground process group only, and Snakemake waits for its jobs
after an interrupt, so a job in its own group would keep the interrupted workflow waiting until
it finished. Its own descendants are found through /proc instead.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

SUPERVISOR_VARIABLE = "SELECTLAB_SUPERVISOR"
POLL_S = 1.0
# After SIGTERM the job unwinds (temporary files removed, children signalled); a job stuck
# where Python cannot unwind (threads blocked on a socket, which the interpreter joins at exit)
# is ended this long after. Outputs are only ever renamed into place when complete, so a hard
# exit loses nothing finished.
EXIT_GRACE_S = 10.0
# A stage may install its own SIGTERM handler (training saves a checkpoint first); the watcher
# gives it this long before it ends the job itself.
WATCHER_GRACE_S = 60.0
PR_SET_PDEATHSIG = 1
EXIT_ON_SIGTERM = 128 + signal.SIGTERM

_label = "selectlab"  # how the job names itself in its stop message
_stopping_reason: str | None = None


def start_time(pid: int) -> str | None:
    """The kernel's start time of process `pid` (clock ticks since boot); None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (the command) is in parentheses and may hold spaces: count after the last ")".
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def export_supervisor(environ: dict | None = None) -> str | None:
    """Record this process as the supervisor of the jobs it starts; returns the value set
    (None where /proc cannot tell a process's start time, and nothing is watched)."""
    environ = os.environ if environ is None else environ
    started = start_time(os.getpid())
    if started is None:
        return None
    token = f"{socket.gethostname()}:{os.getpid()}:{started}"
    environ[SUPERVISOR_VARIABLE] = token
    return token


def supervisor_pid(token: str | None) -> tuple[int, str] | None:
    """(pid, start time) of the supervisor to watch; None if unset or on another host."""
    if not token:
        return None
    host, _, rest = token.rpartition(":")
    host, _, pid = host.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return int(pid), rest


def supervisor_alive(pid: int, started: str) -> bool:
    return start_time(pid) == started


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc."""
    children = []
    if not Path("/proc").is_dir():
        return children
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields and int(fields[1]) == pid:
            children.append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, parents before their children."""
    found, frontier = [], [pid]
    while frontier:
        children = [c for p in frontier for c in child_pids(p)]
        found += children
        frontier = children
    return found


def signal_descendants(signum: int) -> None:
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _on_sigterm(signum, frame) -> None:
    reason = _stopping_reason or ("SIGTERM from outside: the workflow was interrupted, the "
                                  "cluster cancelled the job or its time ran out")
    print(f"{_label}: stopping: {reason}. This job's outputs were not finished and will be "
          "made again by the next run.", file=sys.stderr, flush=True)
    signal_descendants(signal.SIGTERM)
    timer = threading.Timer(EXIT_GRACE_S, _hard_exit)
    timer.daemon = True
    timer.start()
    raise SystemExit(EXIT_ON_SIGTERM)


def _hard_exit() -> None:
    signal_descendants(signal.SIGKILL)
    os._exit(EXIT_ON_SIGTERM)


def _watch(pid: int, started: str) -> None:
    global _stopping_reason
    while supervisor_alive(pid, started):
        time.sleep(POLL_S)
    _stopping_reason = (f"the workflow that started it (pid {pid}) is gone, killed before it "
                        "could stop its jobs")
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(WATCHER_GRACE_S)
    # The main thread is stuck where signals cannot reach Python code: end the job regardless.
    _hard_exit()


def bind_to_supervisor(label: str) -> None:
    """Make this process a job that stops with its workflow (see the module docstring)."""
    global _label
    _label = label
    signal.signal(signal.SIGTERM, _on_sigterm)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)
    watched = supervisor_pid(os.environ.get(SUPERVISOR_VARIABLE))
    # A supervisor that cannot be seen now (a container with its own process namespace) is
    # not watched: it just started this job, so it cannot have gone.
    if watched is not None and supervisor_alive(*watched):
        threading.Thread(target=_watch, args=watched, name="supervisor-watch",
                         daemon=True).start()


RERUN_ADVICE = (
    "selectlab: the run stopped before it finished; every finished output is kept.\n"
    "  - A job failed: its log (named above) says why; fix the cause and run the same command "
    "again.\n"
    "  - You stopped the run (Ctrl-C, SIGTERM) or the cluster cancelled a job: run the same "
    "command again; only unfinished jobs run.\n"
    "  - Snakemake itself was killed (SIGKILL, a closed terminal): its jobs stop by themselves "
    "within seconds; run `snakemake --unlock` (same options), then the same command with "
    "`--rerun-incomplete`."
)
