"""The whole workflow on the tests-only config, run once, and every check of it.

The `run_dir` fixture below runs `snakemake` on `.test/config.yaml` and the worked example of
docs/your_method.md (results under results/test/)
once for this module. The checks live in three modules by theme and are collected here, so that
they share that one run (pytest-xdist schedules whole files, --dist loadfile), in source order,
module after module; the reruns, which move and replace the run's files, come last:

- tests/e2e/outputs.py: what every stage wrote;
- tests/e2e/records.py: read report, judge failures, MATES stages, FLOPs and hours;
- tests/e2e/reruns.py: archive rebuilds, incremental reruns, a second run from scratch.

(No conftest.py here: tests import helpers `from conftest`, and a second conftest module would
take that name.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from selectlab.config import deep_merge, load_config
from tests.e2e import outputs, records, reruns
from tests.e2e.workflow_run import CONFIG, REPO, snakemake, yours_config

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def config() -> dict:
    """The run's config: the tests-only one with the user's example of docs/your_method.md."""
    return deep_merge(load_config(CONFIG), load_config(yours_config()))


@pytest.fixture(scope="module")
def run_dir(config) -> Path:
    run_dir = REPO / "results" / config["run"]
    shutil.rmtree(run_dir, ignore_errors=True)
    result = snakemake()
    assert result.returncode == 0, result.stderr[-5000:]
    return run_dir


# pytest collects a module's tests in the order its namespace holds them: each checks module's
# tests in the order they are defined there.
for _checks in (outputs, records, reruns):
    globals().update({name: check for name, check in vars(_checks).items()
                      if name.startswith("test_")})
