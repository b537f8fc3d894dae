"""A job's lifetime: whom it watches, how it finds its children, what it says when stopped;
and secrets scrubbed from everything a job prints."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time

from selectlab import lifecycle, redact


def test_the_supervisor_is_watched_only_on_its_own_host():
    environ: dict = {}
    token = lifecycle.export_supervisor(environ)
    assert environ[lifecycle.SUPERVISOR_VARIABLE] == token
    pid, started = lifecycle.supervisor_pid(token)
    assert pid == os.getpid() and lifecycle.supervisor_alive(pid, started)
    assert not lifecycle.supervisor_alive(pid, "1")  # the same pid, another process (reused)
    elsewhere = token.replace(socket.gethostname(), "another-node", 1)
    assert lifecycle.supervisor_pid(elsewhere) is None
    assert lifecycle.supervisor_pid(None) is None


def test_descendants_are_found_below_the_job():
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "subprocess.Popen([sys.executable, '-c', 'import time; "
                              "time.sleep(30)']); time.sleep(30)"])
    try:
        for _ in range(100):
            found = lifecycle.descendants(os.getpid())
            if len(found) >= 2:
                break
            time.sleep(0.1)
        assert found[0] == child.pid and len(found) == 2
        assert lifecycle.child_pids(child.pid) == found[1:]
    finally:
        for pid in reversed(lifecycle.descendants(os.getpid())):
            os.kill(pid, 9)
        child.wait()


def test_secrets_are_scrubbed_before_any_cut_and_from_log_records(caplog):
    redact.register("sk-abcdef123456")
    try:
        assert redact.scrub("key sk-abcdef123456 echoed") == "key <redacted> echoed"
        record = logging.LogRecord("x", logging.WARNING, __file__, 1, "failed: %s",
                                   ("Bearer sk-abcdef123456",), None)
        assert redact.ScrubFilter().filter(record)
        assert record.getMessage() == "failed: Bearer <redacted>"
    finally:
        redact.forget_all()
    assert redact.scrub("sk-abcdef123456") == "sk-abcdef123456"


def test_a_supervisor_the_job_cannot_see_is_not_watched():
    # As from inside a container with its own process namespace: the pid means nothing here.
    token = f"{socket.gethostname()}:999999999:12345"
    code = ("import time; from selectlab.lifecycle import bind_to_supervisor; "
            "bind_to_supervisor('selectlab test'); time.sleep(1.5); print('finished')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=os.environ | {lifecycle.SUPERVISOR_VARIABLE: token}, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "finished", done.stderr
