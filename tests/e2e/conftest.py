"""The e2e modules' shared fixtures: the tests-only config and its one workflow run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from selectlab.config import load_config
from tests.e2e.workflow_run import CONFIG, REPO, snakemake


@pytest.fixture(scope="module")
def config() -> dict:
    return load_config(CONFIG)


@pytest.fixture(scope="module")
def run_dir(config) -> Path:
    run_dir = REPO / "results" / config["run"]
    shutil.rmtree(run_dir, ignore_errors=True)
    result = snakemake()
    assert result.returncode == 0, result.stderr[-5000:]
    return run_dir


# The checks' modules, in the order their checks run: the reruns move and replace the run's files.
CHECK_MODULES = ("tests.e2e.outputs", "tests.e2e.records", "tests.e2e.reruns")


def pytest_collection_modifyitems(config, items):
    """The e2e checks in source order, module by module (CHECK_MODULES), whatever order
    tests/e2e/test_workflow.py imports them in; other tests keep their places."""
    def source_order(item):
        function = item.function
        return CHECK_MODULES.index(function.__module__), function.__code__.co_firstlineno

    places = [i for i, item in enumerate(items)
              if getattr(item, "function", None) is not None
              and item.function.__module__ in CHECK_MODULES]
    for place, item in zip(places, sorted((items[i] for i in places), key=source_order),
                           strict=True):
        items[place] = item
