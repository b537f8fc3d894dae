"""Failures a job reports in words rather than as a traceback.

`StageError` is raised when a job cannot produce a correct output: an upstream output that is
empty or partial, too many failed items, a backend that died. Its message names what failed,
where, and what to do; the command line prints it and exits non-zero, so the workflow stops
there instead of passing a bad file on.
"""

from __future__ import annotations


class StageError(RuntimeError):
    pass
