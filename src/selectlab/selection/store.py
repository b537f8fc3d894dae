"""Per-document columns of the pool, kept chunk by chunk in memory or spilled to disk.

A selection walks the pool several times (strata, keys, histograms, the cut). What it needs per
document is a handful of small numbers (token count, stratum, priority, tiebreak: about 12 to 16
bytes); reading them back from the sidecars on every walk would re-read and re-derive scores
(25 rank columns for a Meta-rater proxy). `UnitStore` keeps them once, one array per chunk (a
shard), each in the smallest integer type that holds it. When the pool's columns would not fit
the memory left under the ceiling, every chunk is written to a temporary directory as `.npy`
and read back per walk, so memory holds one chunk at a time whatever the pool's size (the
operating system's page cache, not the process, holds what was written).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np


def smallest_uint(values: np.ndarray) -> np.ndarray:
    """The values in the smallest unsigned type that holds them (they must be >= 0)."""
    if len(values) and int(values.min()) < 0:
        raise ValueError("negative value where a count was expected")
    top = int(values.max()) if len(values) else 0
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype, copy=False)
    raise ValueError(f"value {top} does not fit 64 bits")


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting (numpy's hashing unique is many times slower on large arrays)."""
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


class UnitStore:
    """Named columns, one array per chunk, in pool order."""

    def __init__(self, chunk_rows: list[int], spill: bool, spill_dir: str | Path | None = None):
        self.chunk_rows = list(chunk_rows)
        self.spill = spill
        self.directory = Path(tempfile.mkdtemp(prefix="selectlab-units-", dir=spill_dir)) \
            if spill else None
        self.columns: dict[str, list] = {}
        self.writers = 0  # numbers spilled files, so a rewritten column never overwrites

    def __enter__(self) -> UnitStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.columns.clear()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __contains__(self, name: str) -> bool:
        return name in self.columns

    def put(self, name: str, chunks: Iterable[np.ndarray]) -> None:
        """Store a column given chunk by chunk (each chunk's length is checked)."""
        writer = self.writer(name)
        for values in chunks:
            writer.append(values)
        writer.close()

    def writer(self, name: str) -> ColumnWriter:
        """Append a column chunk by chunk while another walk is under way."""
        return ColumnWriter(self, name)

    def drop(self, name: str) -> None:
        for part in self.columns.pop(name, []):
            if isinstance(part, Path):
                part.unlink(missing_ok=True)

    def chunk(self, name: str, index: int) -> np.ndarray:
        part = self.columns[name][index]
        return np.load(part) if isinstance(part, Path) else part

    def walk(self, names: list[str]) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """(chunk index, {column: array}) for every chunk, in pool order."""
        missing = [name for name in names if name not in self.columns]
        if missing:
            raise KeyError(f"store has no column {missing}")
        for index in range(len(self.chunk_rows)):
            yield index, {name: self.chunk(name, index) for name in names}

    def nbytes(self, name: str) -> int:
        return sum(part.stat().st_size if isinstance(part, Path) else part.nbytes
                   for part in self.columns[name])


class ColumnWriter:
    """Appends one column's chunks in pool order; spilled chunks go to disk as they come."""

    def __init__(self, store: UnitStore, name: str):
        self.store, self.name, self.parts = store, name, []
        store.writers += 1
        self.serial = store.writers

    def append(self, values: np.ndarray) -> None:
        index = len(self.parts)
        rows = self.store.chunk_rows
        if index >= len(rows) or len(values) != rows[index]:
            expected = rows[index] if index < len(rows) else 0
            raise ValueError(f"column {self.name!r}: chunk {index} has {len(values)} rows, "
                             f"expected {expected}")
        if self.store.spill:
            path = self.store.directory / f"{self.name}.{self.serial}.{index}.npy"
            np.save(path, values)
            self.parts.append(path)
        else:
            self.parts.append(values)

    def close(self) -> None:
        if len(self.parts) != len(self.store.chunk_rows):
            raise ValueError(f"column {self.name!r}: {len(self.parts)} chunks, expected "
                             f"{len(self.store.chunk_rows)}")
        self.store.drop(self.name)
        self.store.columns[self.name] = self.parts
