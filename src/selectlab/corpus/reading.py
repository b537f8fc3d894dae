"""How the workflow reads the pool's raw files: the id root and the damaged-file policy.

Every job that reads raw shards and matches documents by id (tokenisation, annotation, the judge
sample) names records without an `id` relative to the same root, so their ids agree: the
SlimPajama split directory (`train_dir`), or the embedded corpus's raw directory.
"""

from __future__ import annotations

DEFAULT_DAMAGED_FILE_POLICY = "stop"


def id_root(config: dict, run_dir: str) -> str:
    corpus = config["corpus"]
    if corpus["mode"] == "slimpajama":
        return str(corpus["slimpajama"]["train_dir"])
    return f"{run_dir}/corpus/raw"


def damaged_file_policy(config: dict) -> str:
    """`stop` (the default) or `quarantine`; see selectlab.shards."""
    return config["corpus"]["reader"].get("on_damaged_file", DEFAULT_DAMAGED_FILE_POLICY)
