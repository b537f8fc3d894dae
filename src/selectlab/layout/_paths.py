"""The run directory, the wildcards and names every path module shares, and the registry
of path functions that `patterns()` (and the docs test) reads."""

from __future__ import annotations

from collections.abc import Callable

RESULTS = "results"
CAPTIONS = "report"  # the report's caption files, report/{stem}.rst in the repository

SHARD, SPLIT, VARIANT, FAMILY, RATER = "{shard}", "{split}", "{variant}", "{family}", "{rater}"
PROTOCOL, SEARCH, PROXIES, NAME, EXT, ENV = ("{protocol}", "{search}", "{proxies}", "{name}",
                                             "{ext}", "{env}")
STAGE, PART = "{stage}", "{part}"
FRACTION, COMPARISON = "{fraction}", "{comparison}"

# Inside a rater directory (raters/{rater}/): what selectlab.raters.io writes and reads.
RATER_CARD, RATER_MODEL = "rater_card.json", "model"
# Inside a checkpoint directory (models/{variant}/checkpoints/): what selectlab.train.checkpoints
# writes and reads. A checkpoint is `step_` and its step in 7 digits.
CHECKPOINT_PREFIX, CHECKPOINT_STEP_DIGITS = "step_", 7
CHECKPOINT_META, CHECKPOINT_OWNER = "run.json", ".owner"
# Inside a final model directory (models/{variant}/final/): the training snapshots that
# selectlab.train.snapshots writes there.
SNAPSHOTS = "snapshots"

_PATHS: list[Callable[..., str]] = []


def path(function: Callable[..., str]) -> Callable[..., str]:
    """Registers a path function, so that `patterns()` (and the docs test) sees it."""
    _PATHS.append(function)
    return function


def run_dir(run: str) -> str:
    """results/{run}: the root every other function here takes."""
    return f"{RESULTS}/{run}"


def _under(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def patterns() -> dict[str, str]:
    """Function name -> its path relative to the run directory, wildcards left in."""
    root = run_dir("{run}")
    return {function.__name__: function(root).removeprefix(root + "/") for function in _PATHS}
