"""Packing: documents joined with EOS in selection order, cut into full rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from selectlab.pack import count_sequences, pack_selection


def test_pack_preserves_order_and_inserts_eos(tmp_path):
    tokens_dir = tmp_path / "tokens"
    tokens_dir.mkdir()
    np.save(tokens_dir / "s0.npy", np.arange(1, 11, dtype=np.uint16))  # docs [1..4], [5..10]
    np.save(tokens_dir / "s1.npy", np.arange(100, 105, dtype=np.uint16))  # doc [100..104]
    selection = pd.DataFrame({
        "shard": ["s1", "s0", "s0"],
        "token_offset": [0, 4, 0],
        "n_tokens": [5, 6, 4],
    })
    out = tmp_path / "train.npy"
    stats = pack_selection(selection, tokens_dir, 4, 0, out, np.dtype(np.uint16))
    packed = np.load(out)
    stream = [100, 101, 102, 103, 104, 0, 5, 6, 7, 8, 9, 10, 0, 1, 2, 3, 4, 0]
    assert packed.shape == (4, 4) == (stats.sequences, 4)
    assert packed.ravel().tolist() == stream[:16]
    assert stats.tokens_in == 18 and stats.tokens_dropped == 2
    assert count_sequences(selection["n_tokens"].to_numpy(), 4) == 4


def test_empty_remainder_gives_no_partial_rows(tmp_path):
    tokens_dir = tmp_path / "tokens"
    tokens_dir.mkdir()
    np.save(tokens_dir / "s.npy", np.arange(7, dtype=np.uint32))
    selection = pd.DataFrame({"shard": ["s"], "token_offset": [0], "n_tokens": [7]})
    pack_selection(selection, tokens_dir, 4, 9, tmp_path / "t.npy", np.dtype(np.uint32))
    assert np.load(tmp_path / "t.npy").tolist() == [[0, 1, 2, 3], [4, 5, 6, 9]]


def test_sequence_units_keep_their_own_eos_and_fill_rows_exactly(tmp_path):
    # Two 4-token units of a pool shard, EOS (0) already inside the first: packed as they are,
    # each unit one row of 4; a document would get one more EOS and spill into the next row.
    tokens_dir = tmp_path / "tokens"
    tokens_dir.mkdir()
    np.save(tokens_dir / "s__pool.npy", np.array([5, 6, 0, 7, 8, 9, 10, 11], dtype=np.uint16))
    selection = pd.DataFrame({"shard": ["s__pool", "s__pool"], "token_offset": [4, 0],
                              "n_tokens": [4, 4]})
    out = tmp_path / "units.npy"
    stats = pack_selection(selection, tokens_dir, 4, 0, out, np.dtype(np.uint16),
                           eos_after_each=False)
    assert np.load(out).tolist() == [[8, 9, 10, 11], [5, 6, 0, 7]]
    assert (stats.sequences, stats.tokens_in, stats.tokens_dropped) == (2, 8, 0)
    assert count_sequences(selection["n_tokens"].to_numpy(), 4, eos_after_each=False) == 2
    assert count_sequences(selection["n_tokens"].to_numpy(), 4) == 2  # 10 tokens with EOS
