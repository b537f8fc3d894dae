"""The tests-only workflow run that every e2e module reads, and helpers to drive and read it.

One run of `snakemake` on `.test/config.yaml` with docs/your_method.md's example over it
(results under results/test/) per test session,
started by the `run_dir` fixture (tests/e2e/conftest.py). The e2e modules share one xdist
worker (tests/conftest.py puts them in one group), so the workflow runs once; their files run
in name order, the reruns last.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tests.your_method import write_doc_files

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / ".test" / "config.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


@functools.cache
def yours_config() -> Path:
    """docs/your_method.md's worked example (a score family of the user's and two rows), in a
    folder outside the repository as a user keeps it; the run adds it over the tests-only
    config, as the page says."""
    directory = Path(tempfile.mkdtemp(prefix="selectlab-your-method-"))
    return write_doc_files(directory)["your_method.yaml"]


def config_files(config: Path) -> list[Path]:
    """The files a run of `config` is given: the tests-only config with the user's example."""
    return [config, yours_config()] if config == CONFIG else [config]


def snakemake(*args: str, config: Path = CONFIG) -> subprocess.CompletedProcess:
    # Rules call `selectlab`, which lives next to this interpreter (the activated venv in use).
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    files = [str(path) for path in config_files(config)]
    return subprocess.run([*SNAKEMAKE, "--configfile", *files, "--cores", "2", *args],
                          cwd=REPO, capture_output=True, text=True, env=env)


def read_archive(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers()}


def manifest_lines(archive: Path) -> set[str]:
    return set(read_archive(archive)["MANIFEST.sha256"].decode().splitlines())


def manifest_checksums(archive: Path) -> dict[str, str]:
    """member name -> sha256, from the archive's MANIFEST.sha256."""
    return {name: digest for digest, name in
            (line.split("  ", 1) for line in manifest_lines(archive))}


def planned_jobs(config_path: Path) -> dict[str, int]:
    """Rule -> job count from a dry run's summary table."""
    result = snakemake("-n", config=config_path)
    assert result.returncode == 0, result.stderr[-3000:]
    counts = {}
    in_table = False
    for line in result.stdout.splitlines():
        parts = line.split()
        if parts[:2] == ["job", "count"]:
            in_table = True
        elif in_table and len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
            counts[parts[0]] = int(parts[1])
        elif in_table and not parts:
            break
    return counts
