"""A document's place inside its stratum as one unsigned integer, for histograms and cuts.

Inside a stratum, `budgeted_take` walks documents by priority (higher first), then tiebreak
(higher first), then pool position (lower first). `order_key` maps (priority, tiebreak) to a
uint64 whose *ascending* order is that walk; together with the position it orders every
document exactly as the in-memory sort does, so the streaming engine can cut the walk by
counting keys instead of sorting the pool.
"""

from __future__ import annotations

import numpy as np

TOP_BIT = np.uint32(0x80000000)
ALL_ONES = np.uint32(0xFFFFFFFF)
KEY_MAX = np.iinfo(np.uint64).max


def ascending32(values: np.ndarray) -> np.ndarray:
    """uint32 whose ascending order is the float32 values' ascending order.

    -0.0 and 0.0 compare equal as floats, so they get one key (adding +0.0 turns -0.0 into 0.0).
    Only finite values are meant to be mapped; callers drop the others.
    """
    bits = (values.astype(np.float32, copy=False) + np.float32(0.0)).view(np.uint32)
    negative = (bits & TOP_BIT) != 0
    return np.where(negative, ~bits, bits | TOP_BIT)


def priority_key(priority: np.ndarray) -> np.ndarray:
    """The high 32 bits of `order_key`: uint32 ascending as priority descends."""
    return ~ascending32(priority)


def order_key(priority: np.ndarray, tiebreak: np.ndarray | None) -> np.ndarray:
    """uint64 ascending in walk order: priority descending, then tiebreak descending."""
    high = priority_key(priority).astype(np.uint64) << np.uint64(32)
    if tiebreak is None:
        return high
    return high | (~ascending32(tiebreak)).astype(np.uint64)
