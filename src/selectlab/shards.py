"""Reading and writing corpus shards in SlimPajama's JSONL schema.

Every stage that touches raw text reads it through `iter_documents`, so the embedded corpus and
real SlimPajama files share one set of bad-input rules. A line that cannot become a document is
skipped, counted by reason in a `ReadReport`, and (optionally) copied to a quarantine file; the
reader is deterministic, so two passes over the same shard yield the same documents in the same
order and sidecars can be aligned by id.

A damaged file (a truncated zstd frame or gzip stream, corrupt compressed data, a file that is
not in its extension's format) is detected where the decoder stops, and named with the
compressed byte offset and the last whole line read (`selectlab.decode`). The policy decides
what follows: `stop` raises `DamagedFileError` at once; `quarantine` keeps the documents read
before the damage, records the file in the report (`damaged_files`) and the quarantine file,
and goes on with the next file.

A record without an `id` gets `<path relative to id_root>:<line>`: SlimPajama repeats file
names in every chunk directory (`chunk1/example_train_0.jsonl.zst`, `chunk2/...`), so the
directory must be part of the id for it to be unique in the pool.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from selectlab.decode import Damage, DamagedFileError, DecodedLines, open_binary

__all__ = ["Damage", "DamagedFileError", "open_binary"]

REASONS = ("malformed_json", "missing_field", "non_utf8", "empty_text", "too_long", "duplicate_id")
QUARANTINE_SNIPPET_BYTES = 2000
DAMAGE_POLICIES = ("stop", "quarantine")


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    set_name: str  # meta.redpajama_set_name: the source used for strata and tables
    source_detail: str = ""

    def to_record(self) -> dict:
        meta = {"redpajama_set_name": self.set_name, "source_detail": self.source_detail}
        return {"id": self.id, "text": self.text, "meta": meta}


@dataclass
class ReadReport:
    """What happened to every line of one shard."""

    shard: str
    lines: int = 0
    documents: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    examples: list[dict] = field(default_factory=list)  # first few skipped lines, for the log
    damaged_files: list[dict] = field(default_factory=list)  # file, offset, line, error

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] += 1
        if len(self.examples) < 20:
            self.examples.append({"where": where, "reason": reason})

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    def to_dict(self) -> dict:
        return asdict(self) | {"n_skipped": self.n_skipped}


def _parse_line(raw: bytes) -> tuple[dict | None, str | None]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "non_utf8"
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None, "malformed_json"
    if not isinstance(record, dict):
        return None, "malformed_json"
    return record, None


def _validate(record: dict, max_chars: int) -> str | None:
    text = record.get("text")
    meta = record.get("meta")
    if not isinstance(text, str) or not isinstance(meta, dict):
        return "missing_field"
    if not isinstance(meta.get("redpajama_set_name"), str):
        return "missing_field"
    if not text.strip():
        return "empty_text"
    if len(text) > max_chars:
        return "too_long"
    # Lone surrogates survive json.loads but cannot be encoded again: treat as bad bytes.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "non_utf8"
    return None


def iter_documents(
    paths: Iterable[str | Path],
    report: ReadReport,
    *,
    max_chars: int = 10_000_000,
    id_root: str | Path | None = None,
    quarantine: io.TextIOBase | None = None,
    on_damaged_file: str = "quarantine",
) -> Iterator[Document]:
    """Yield valid documents of one shard (one or more files), counting every skipped line.

    Records without an `id` get `<path relative to id_root>:<line number>` (the path as given
    without a root), which is stable across passes and unique across a pool's files. A damaged
    file is handled by `on_damaged_file` (see the module docstring).
    """
    if on_damaged_file not in DAMAGE_POLICIES:
        raise ValueError(f"on_damaged_file must be one of {DAMAGE_POLICIES}, "
                         f"not {on_damaged_file!r}")
    seen: set[str] = set()
    for path in paths:
        name = id_name(path, id_root)
        lines = DecodedLines(path)
        for line_no, raw in lines:
            if not raw.strip():
                continue
            report.lines += 1
            where = f"{name}:{line_no}"
            record, reason = _parse_line(raw.rstrip(b"\r\n"))
            if record is not None:
                reason = _validate(record, max_chars)
            doc_id = None
            if reason is None:
                doc_id = str(record.get("id") or where)
                if doc_id in seen:
                    reason = "duplicate_id"
            if reason is not None:
                report.skip(reason, where)
                _quarantine(quarantine, where, reason, raw)
                continue
            seen.add(doc_id)
            report.documents += 1
            meta = record["meta"]
            yield Document(
                id=doc_id,
                text=record["text"],
                set_name=meta["redpajama_set_name"],
                source_detail=str(meta.get("source_detail", "")),
            )
        if lines.damage is not None:
            _damaged(report, quarantine, lines.damage, on_damaged_file)


def id_name(path: str | Path, id_root: str | Path | None) -> str:
    """The file part of a document id: its path relative to `id_root`, in POSIX form."""
    if id_root is None:
        return Path(path).as_posix()
    return Path(os.path.relpath(path, id_root)).as_posix()


def _quarantine(quarantine: io.TextIOBase | None, where: str, reason: str, raw: bytes,
                **extra) -> None:
    if quarantine is not None:
        snippet = raw[:QUARANTINE_SNIPPET_BYTES].decode("utf-8", "replace")
        quarantine.write(json.dumps({"where": where, "reason": reason, "raw": snippet}
                                    | extra) + "\n")


def _damaged(report: ReadReport, quarantine: io.TextIOBase | None, damage: Damage,
             policy: str) -> None:
    if policy == "stop":
        raise DamagedFileError(f"{damage.describe()}. Replace the file (download it again), "
                               "or set corpus.reader.on_damaged_file: quarantine to keep the "
                               "documents before the damage and count the file as damaged.")
    report.damaged_files.append(damage.as_record())
    _quarantine(quarantine, f"{damage.path}@{damage.offset}", "damaged_file", damage.partial,
                error=damage.error, after_line=damage.line)


def read_all(paths: Iterable[str | Path], **kwargs) -> tuple[list[Document], ReadReport]:
    report = ReadReport(shard=",".join(str(p) for p in paths))
    return list(iter_documents(paths, report, **kwargs)), report


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary sibling path that is renamed onto `path` only if the block succeeds.

    A killed job therefore never leaves a file that looks finished.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_documents(path: str | Path, documents: Iterable[Document], level: int = 10) -> int:
    """Write documents as zstd-compressed JSONL (atomically); returns the number written."""
    import zstandard  # here, not at the top: the training loop imports this module on GPU
    # nodes that may carry only torch and transformers (benchmarks/gpu_proof.sh)

    count = 0
    with atomic_path(path) as tmp, open(tmp, "wb") as raw:
        compressor = zstandard.ZstdCompressor(level=level)
        with compressor.stream_writer(raw) as out:
            for doc in documents:
                out.write(json.dumps(doc.to_record(), ensure_ascii=False).encode("utf-8") + b"\n")
                count += 1
    return count


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` through a temporary sibling, flushed to disk before it takes the name."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_json(path: str | Path, payload: object) -> None:
    """Write JSON deterministically (sorted keys) and atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")
