"""lm-eval results cached per (task, shots) setting of one model.

Several papers evaluate the same task with the same number of demonstrations (QuRating and
DataMan share nine of their ten settings); a model is evaluated on each setting once. The cache
also keeps finished settings across reruns: adding a paper's protocol to a run evaluates only
the settings it adds. An entry is used only when everything that decides the result matches:
the model's weights, the task's data (local tasks) or lm-eval's version (built-in tasks), shots,
item limit, seed, dtype and context length; otherwise it is recomputed and replaced.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from selectlab.shards import write_json

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


def files_digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def model_fingerprint(model_dir: str | Path) -> str:
    """Digest of the model's weights and config (the tokenizer comes with the run)."""
    model_dir = Path(model_dir)
    files = [p for p in model_dir.iterdir()
             if p.suffix in WEIGHT_SUFFIXES or p.name == "config.json"]
    if not any(p.suffix in WEIGHT_SUFFIXES for p in files):
        raise FileNotFoundError(f"no weight files in {model_dir}")
    return files_digest(files)


def task_fingerprint(task: str, include_path: Path | None, lm_eval_version: str) -> str:
    """A local task's YAML and data files; a built-in task is identified by lm-eval's version."""
    if include_path is None:
        return f"lm-eval {lm_eval_version}: {task}"
    include_path = Path(include_path)
    files = [include_path / f"{task}.yaml", *sorted((include_path / "data").glob(f"{task}.*"))]
    missing = [str(p) for p in files if not p.exists()]
    if missing:
        raise FileNotFoundError(f"local task {task!r}: missing {missing}")
    return files_digest(files)


def task_results(name: str, results: dict) -> dict:
    """The part of one `simple_evaluate` output that concerns `name` and its subtasks."""
    names = [name]
    for current in names:
        names.extend(results.get("group_subtasks", {}).get(current, []))
    return {
        "results": {n: results["results"][n] for n in names if n in results["results"]},
        "n-samples": {n: results["n-samples"][n] for n in names
                      if n in results.get("n-samples", {})},
        "group_subtasks": {n: results["group_subtasks"][n] for n in names
                           if n in results.get("group_subtasks", {})},
    }


class SettingCache:
    """One JSON file per setting under `directory`: `{task}@{shots}.json`."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = None if directory is None else Path(directory)

    def path(self, task: str, shots: int) -> Path | None:
        return None if self.directory is None else self.directory / f"{task}@{shots}.json"

    def get(self, task: str, shots: int, identity: dict) -> dict | None:
        path = self.path(task, shots)
        if path is None or not path.exists():
            return None
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            return None  # a torn write: recompute
        return stored["results"] if stored.get("identity") == identity else None

    def put(self, task: str, shots: int, identity: dict, results: dict) -> None:
        path = self.path(task, shots)
        if path is not None:
            write_json(path, {"identity": identity, "results": results})
