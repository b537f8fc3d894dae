"""Packing selected documents into fixed-length training sequences.

Documents are concatenated in selection order with an EOS token after each and cut into rows
of `seq_len` tokens; the incomplete last row is dropped. Sequence units of a pool
(selectlab.corpus.pools) already hold the EOS after each of their documents, so they are
concatenated as they are: a 1024-token unit is one 1024-token row. Training then reads rows in
stored order, so the order of the selection *is* the training order: a shuffled selection gives
a shuffled epoch, a curriculum selection gives a curriculum.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from selectlab.shards import atomic_path


@dataclass(frozen=True)
class PackStats:
    documents: int
    tokens_in: int  # document tokens plus one EOS per document (units: their tokens)
    sequences: int
    tokens_dropped: int


def count_sequences(n_tokens: np.ndarray, seq_len: int, eos_after_each: bool = True) -> int:
    return int((n_tokens.sum() + (len(n_tokens) if eos_after_each else 0)) // seq_len)


def pack_selection(
    selection: pd.DataFrame,
    tokens_dir: str | Path,
    seq_len: int,
    eos_id: int,
    out_path: str | Path,
    dtype: np.dtype,
    eos_after_each: bool = True,
) -> PackStats:
    """Stream the selected documents' tokens from the shard arrays into a `(n, seq_len)` array.

    Memory stays at one row buffer plus the memory maps, whatever the selection size.
    """
    n_rows = count_sequences(selection["n_tokens"].to_numpy(), seq_len, eos_after_each)
    eos = [dtype.type(eos_id)] if eos_after_each else []
    shard_tokens: dict[str, np.ndarray] = {}
    with atomic_path(out_path) as tmp:
        # open_memmap needs a real .npy name; write there and let atomic_path rename it.
        packed = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(n_rows, seq_len))
        buffer = np.empty(seq_len, dtype=dtype)
        filled = row = 0
        for shard, offset, length in zip(selection["shard"], selection["token_offset"],
                                         selection["n_tokens"], strict=True):
            if shard not in shard_tokens:
                shard_tokens[shard] = np.load(Path(tokens_dir) / f"{shard}.npy", mmap_mode="r")
            document = np.append(shard_tokens[shard][offset:offset + length], eos).astype(dtype)
            start = 0
            while start < len(document) and row < n_rows:
                take = min(seq_len - filled, len(document) - start)
                buffer[filled:filled + take] = document[start:start + take]
                filled += take
                start += take
                if filled == seq_len:
                    packed[row] = buffer
                    row += 1
                    filled = 0
        packed.flush()
        del packed
    tokens_in = int(selection["n_tokens"].sum() + (len(selection) if eos_after_each else 0))
    return PackStats(len(selection), tokens_in, n_rows, tokens_in - n_rows * seq_len)
