"""A persistent store of answered judgments, so reruns only ask what is still missing.

One sqlite file per protocol, kept beside the judge's outputs but not declared as an output:
Snakemake neither deletes it before a rerun nor after a failure. A judgment is keyed by the
template hash, the model id, a fingerprint of the generation settings, the criterion, the
document ids and the order. Only answered judgments are stored (answers that parsed); a
failure, an unparseable answer or a backend error (an endpoint down, a timeout), is never
recorded as answered, so the next run asks for exactly those again. Every batch is committed
as it finishes, so a killed job loses at most the batch in flight.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from selectlab.judge.protocol import Query


def settings_fingerprint(backend_fingerprint: dict, query: Query) -> str:
    payload = {"backend": backend_fingerprint, "generation": query.generation_settings()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def cache_key(query: Query, model_id: str, fingerprint: str) -> str:
    parts = [query.template_hash, model_id, fingerprint, query.criterion,
             *query.doc_ids, str(query.order)]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


class JudgmentCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path))
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS judgments (key TEXT PRIMARY KEY, row TEXT NOT NULL)")
        self._db.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, dict]:
        found: dict[str, dict] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            marks = ",".join("?" * len(chunk))
            cursor = self._db.execute(f"SELECT key, row FROM judgments WHERE key IN ({marks})",
                                      chunk)
            found.update((key, json.loads(row)) for key, row in cursor)
        return found

    def put_many(self, rows: Iterable[tuple[str, dict]]) -> None:
        self._db.executemany("INSERT OR REPLACE INTO judgments (key, row) VALUES (?, ?)",
                             [(key, json.dumps(row, sort_keys=True)) for key, row in rows])
        self._db.commit()

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> JudgmentCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
