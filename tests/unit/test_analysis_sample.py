"""Reading the sidecars of all shards into one sampled table: score columns, alignment, sample."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from selectlab.analysis.sample import (
    sample_positions,
    sample_table,
    score_columns,
    sidecars_by_family,
    to_frame,
)
from selectlab.tokens import META_SCHEMA

SHARDS = {"shard_00000": ["a", "b", "c", "d"], "shard_00001": ["e", "f", "g"]}
SOURCES = ["RedPajamaWikipedia", "RedPajamaBook", "RedPajamaGithub", "RedPajamaBook",
           "RedPajamaWikipedia", "RedPajamaBook", "RedPajamaWikipedia"]
RATINGS = [5, 3, None, 1, 4, 4, 2]
NLL = [2.0, 3.5, 1.0, None, 2.5, 3.0, 4.0]


def write(path: Path, table: pa.Table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def corpus(root: Path, ids_of=None) -> tuple[list[Path], list[Path]]:
    """Meta, dataman-like and refppl-like sidecars of two shards (7 documents)."""
    metas, sidecars = [], []
    start = 0
    for shard, ids in SHARDS.items():
        rows = slice(start, start + len(ids))
        start += len(ids)
        metas.append(write(root / "meta" / f"{shard}.parquet", pa.table({
            "id": ids, "set_name": SOURCES[rows], "source_detail": [""] * len(ids),
            "n_chars": [10] * len(ids), "n_tokens": [3 + i for i in range(len(ids))],
            "token_offset": [0] * len(ids)}, schema=META_SCHEMA)))
        listed = ids_of(ids) if ids_of else ids
        sidecars.append(write(root / "dataman" / f"{shard}.parquet", pa.table({
            "id": listed, "overall_score": pa.array(RATINGS[rows], pa.int64()),
            "domain": ["A"] * len(ids), "status": ["ok"] * len(ids),
            "missing_reason": [None] * len(ids)})))
        sidecars.append(write(root / "refppl" / f"{shard}.parquet", pa.table({
            "id": ids, "ref_nll": pa.array(NLL[rows], pa.float64()),
            "ref_ppl": pa.array([1.0] * len(ids)), "ref_tokens": [7] * len(ids),
            "missing_reason": [None] * len(ids)})))
    return metas, sidecars


def test_score_columns_leave_out_bookkeeping_restatements_and_probabilities():
    schema = pa.schema([("id", pa.string()), ("ref_nll", pa.float64()),
                        ("ref_ppl", pa.float64()), ("ref_tokens", pa.int64()),
                        ("reasoning", pa.int64()), ("reasoning_p3", pa.float64()),
                        ("domain", pa.string()), ("status", pa.string()),
                        ("embedding", pa.list_(pa.float32(), 4)),
                        ("missing_reason", pa.string())])
    assert score_columns(schema) == ["ref_nll", "reasoning"]


def test_a_small_corpus_is_read_whole_with_family_qualified_columns(tmp_path):
    metas, sidecars = corpus(tmp_path)
    table, summary = sample_table(metas, sidecars_by_family(metas, sidecars), 1000, seed=0)
    frame = to_frame(table)
    assert list(frame.columns) == ["set_name", "n_tokens", "dataman.overall_score",
                                   "refppl.ref_nll"]
    assert frame["set_name"].tolist() == SOURCES
    assert frame["dataman.overall_score"].tolist() == [5, 3, pd.NA, 1, 4, 4, 2]
    assert pd.api.types.is_integer_dtype(frame["dataman.overall_score"])
    np.testing.assert_array_equal(frame["refppl.ref_nll"].to_numpy(float),
                                  np.array(NLL, dtype=float))
    assert summary["documents"] == 7 and summary["sampled"] == 7
    assert summary["null_values"]["dataman.overall_score"] == 1


def test_a_sample_is_seeded_uniform_and_keeps_rows_together(tmp_path):
    metas, sidecars = corpus(tmp_path)
    grouped = sidecars_by_family(metas, sidecars)
    first, _ = sample_table(metas, grouped, 4, seed=3)
    again, _ = sample_table(metas, grouped, 4, seed=3)
    assert first.equals(again) and first.num_rows == 4
    whole = to_frame(sample_table(metas, grouped, 100, seed=0)[0])
    # Each sampled row is one whole document: every column from the same row of the corpus.
    shard_rows = sample_positions([4, 3], 4, seed=3)
    rows = np.concatenate([shard_rows[0], shard_rows[1] + 4])
    pd.testing.assert_frame_equal(to_frame(first),
                                  whole.iloc[rows].reset_index(drop=True))


def test_sample_positions_are_exact_sorted_and_within_each_shard():
    positions = sample_positions([1000, 10, 500], 300, seed=1)
    assert sum(len(p) for p in positions) == 300
    for rows, count in zip(positions, [1000, 10, 500], strict=True):
        assert (np.diff(rows) > 0).all() and rows.min(initial=0) >= 0
        assert rows.max(initial=0) < count
    other = sample_positions([1000, 10, 500], 300, seed=2)
    assert any(not np.array_equal(a, b) for a, b in zip(positions, other, strict=True))
    assert [len(p) for p in sample_positions([3, 4], 50, seed=0)] == [3, 4]


def test_a_sidecar_out_of_step_with_meta_is_an_error(tmp_path):
    metas, sidecars = corpus(tmp_path, ids_of=lambda ids: list(reversed(ids)))
    with pytest.raises(ValueError, match="same order"):
        sample_table(metas, sidecars_by_family(metas, sidecars), 100, seed=0)


def test_a_family_without_every_shard_is_an_error(tmp_path):
    metas, sidecars = corpus(tmp_path)
    with pytest.raises(ValueError, match="no sidecar for shards"):
        sidecars_by_family(metas, sidecars[:-1])
