"""How much of the pool a selection may hold, from the memory ceiling (`selection.memory_mb`).

The ceiling bounds the select job's whole resident memory. What the interpreter and libraries
already hold is measured at the start; of the rest, a reserve covers one shard's arrays in
flight, and the remainder is shared between the per-document store (kept in memory only if it
fits a quarter of it, else spilled to disk), the final in-memory take of the candidate documents
and the buckets of the written selection.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from selectlab.selection.take import Limits

MB = 1 << 20
STORE_BYTES = 16  # token count, stratum, source, priority, tiebreak per document (at most)
SOLVE_BYTES = 112  # per candidate in the final take: its columns, sort keys and merge arrays
OUTPUT_BYTES = 480  # per written row: ids and metadata as Arrow, the bucket's sort and copy
CHUNK_BYTES = 96  # per document of the largest shard: columns read and derived in one pass
RESERVE = 64 * MB  # Arrow's buffers and allocator slack


@dataclass(frozen=True)
class SelectionLimits:
    spill: bool  # per-document columns on disk
    take: Limits
    rows_per_bucket: int  # rows of the written selection held at once, at most
    spill_dir: str | None = None
    ceiling: int | None = None  # bytes the job's resident memory stays under
    reserve: int = 0  # bytes kept free for one shard's arrays and allocator slack

    def bucket_rows(self) -> int:
        """Rows of the written selection to hold at once, from the room left when writing."""
        if self.ceiling is None:
            return self.rows_per_bucket
        room = self.ceiling - resident_bytes() - self.reserve
        return max(1, min(self.rows_per_bucket, room // OUTPUT_BYTES))


def resident_bytes() -> int:
    """This process's resident memory now (Linux), or 0 where unknown."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def unlimited(pool_size: int) -> SelectionLimits:
    """Everything in memory (tests and small pools without a configured ceiling)."""
    room = max(pool_size, 1) * 4
    return SelectionLimits(False, Limits(room), room)


def plan_memory(memory_mb: float, pool_size: int, largest_shard: int,
                spill_dir: str | None = None) -> SelectionLimits:
    """Limits that keep the job's resident memory under `memory_mb`."""
    used, reserve = resident_bytes(), RESERVE + CHUNK_BYTES * largest_shard
    available = int(memory_mb * MB) - used - reserve
    if available <= 16 * MB:
        raise MemoryError(f"selection.memory_mb = {memory_mb} leaves no room: the process "
                          f"already holds {used / MB:.0f} MB and a shard of {largest_shard:,} "
                          f"documents needs {CHUNK_BYTES * largest_shard / MB:.0f} MB")
    spill = pool_size * STORE_BYTES > available // 4
    working = available - (0 if spill else pool_size * STORE_BYTES)
    return SelectionLimits(spill, Limits(max(working // SOLVE_BYTES, 1)),
                           max(working // OUTPUT_BYTES, 1), spill_dir, int(memory_mb * MB),
                           reserve)
