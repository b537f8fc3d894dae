"""Resumable perplexity: what has been scored so far, per split and source, in a small JSON file.

Scoring a 1.3B model on the full SlimPajama held-out splits takes hours, longer than some
partitions' time limits. `Progress` records, per (split, source), how many windows are scored
and their summed NLL and target count; the file is rewritten atomically every few batches, at
the end of every source and when the pre-emption signal arrives. A rerun skips what is recorded
and continues a half-scored source at its next window. The file carries a fingerprint of the
model, the held-out files and the settings that change scores (not the batch size): progress of
another model or setting is discarded. It is removed once the result is written.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from selectlab.shards import write_json


def file_identity(path: Path) -> list:
    stat = os.stat(path)
    return [str(path), stat.st_size, stat.st_mtime_ns]


def fingerprint(model_dir: Path, heldout: dict[str, Path], settings: dict) -> str:
    model_files = sorted(p for p in Path(model_dir).iterdir() if p.is_file())
    identity = {"model": [file_identity(p) for p in model_files],
                "heldout": {split: file_identity(Path(p)) for split, p in sorted(heldout.items())},
                "settings": settings}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


class Progress:
    """Scored windows per `split/source`, persisted to `path` (None: nothing persisted)."""

    def __init__(self, path: Path | None, key: str) -> None:
        self.path, self.key = path, key
        self.entries: dict[str, dict] = {}
        if path is not None and path.is_file():
            recorded = json.loads(path.read_text())
            if recorded.get("fingerprint") == key:
                self.entries = recorded["entries"]

    @staticmethod
    def name(split: str, source: str) -> str:
        return f"{split}/{source}"

    def get(self, split: str, source: str) -> dict:
        return self.entries.get(self.name(split, source),
                                {"windows": 0, "nll": 0.0, "tokens": 0, "finished": False})

    def update(self, split: str, source: str, entry: dict) -> None:
        self.entries[self.name(split, source)] = entry

    def save(self) -> None:
        if self.path is not None:
            write_json(self.path, {"fingerprint": self.key, "entries": self.entries})

    def remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
