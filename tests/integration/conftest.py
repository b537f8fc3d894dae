"""Markers of the integration tests (the project's pyproject.toml registers the others)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slurm: runs the workflow on the single-node SLURM test cluster")
