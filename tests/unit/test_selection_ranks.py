"""Pool-level rank sidecars give exactly `percentile_ranks` of the whole pool."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from selectlab import layout
from selectlab.selection.columns import RankColumns
from selectlab.selection.pool import Pool
from selectlab.selection.ranks import SUMMARY, rank_dir, rank_family, ranked_columns
from selectlab.selection.scores import ScoreRef, percentile_ranks

SHARDS = ["s0", "s1", "s2"]
ROWS = [700, 0, 1300]


@pytest.fixture
def scored(tmp_path):
    rng = np.random.default_rng(4)
    n = sum(ROWS)
    columns = {
        "smooth": rng.normal(size=n),
        "ties": rng.integers(1, 6, size=n).astype(float),  # ratings: five values
        "narrow": 1 + rng.integers(0, 40, size=n) * np.float32(2 ** -20),  # one 16-bit bin
        "signed": np.where(rng.random(n) < 0.3, -0.0, rng.normal(size=n)),  # -0.0 and 0.0
    }
    for values in columns.values():
        values[rng.random(n) < 0.05] = np.nan
    columns["smooth"][:3] = [np.inf, -np.inf, np.nan]  # non-finite values count as missing
    start = 0
    for shard, rows in zip(SHARDS, ROWS, strict=True):
        for family, frame in (("meta", {"n_tokens": np.full(rows, 5)}),
                              ("scores", {k: v[start:start + rows] for k, v in columns.items()})):
            (tmp_path / family).mkdir(exist_ok=True)
            pd.DataFrame(frame).to_parquet(tmp_path / family / f"{shard}.parquet")
        start += rows
    return tmp_path, {k: v.astype(np.float32) for k, v in columns.items()}


def expected_ranks(values: np.ndarray) -> np.ndarray:
    finite = np.where(np.isfinite(values), values, np.nan).astype(np.float32)
    return percentile_ranks(finite)


@pytest.mark.parametrize("capacity, spill", [(10_000, False), (150, True), (7, False)])
def test_stored_ranks_are_the_pool_percentile_ranks(scored, capacity, spill):
    directory, columns = scored
    summary = rank_family(directory, "scores", sorted(columns), SHARDS, capacity, spill)
    pool = Pool(directory, SHARDS, ROWS, ["x"])
    for name, values in columns.items():
        for negate in (False, True):
            missing: dict[str, int] = {}
            column = RankColumns(pool, [ScoreRef("scores", name, negate)], missing)
            ranks = np.concatenate([chunk[0] for chunk in column.chunks()])
            oriented = -values if negate else values
            np.testing.assert_array_equal(ranks, expected_ranks(oriented), err_msg=name)
            assert missing == {f"scores.{name}": int((~np.isfinite(values)).sum())}
        assert summary["columns"][name]["present"] == int(np.isfinite(values).sum())
    written = json.loads((directory / "ranks" / "scores" / "ranks.json").read_text())
    assert written["shards"] == SHARDS and written["rows"] == ROWS


def test_ranks_of_another_pool_or_column_are_refused(scored):
    directory, _ = scored
    rank_family(directory, "scores", ["ties"], SHARDS, 100, False)
    with pytest.raises(ValueError, match="different pool"):
        RankColumns(Pool(directory, SHARDS[:2], ROWS[:2], ["x"]), [ScoreRef("scores", "ties")], {})
    with pytest.raises(ValueError, match="no ranks of 'smooth'"):
        RankColumns(Pool(directory, SHARDS, ROWS, ["x"]), [ScoreRef("scores", "smooth")], {})
    with pytest.raises(FileNotFoundError, match="rank other"):
        RankColumns(Pool(directory, SHARDS, ROWS, ["x"]), [ScoreRef("other", "x")], {})


def test_ranked_columns_by_family_without_orientation():
    assert ranked_columns(["a.x", "-a.x", "b.y", "a.w"]) == {"a": ["w", "x"], "b": ["y"]}


def test_rank_sidecars_lie_where_the_layout_puts_them():
    root = layout.run_dir("x")
    directory = rank_dir(layout.attributes_dir(root), "dsir")
    assert str(directory) == layout.rank_dir(root, "dsir")
    assert str(directory / "s0.parquet") == layout.rank_sidecar(root, "dsir", "s0")
    assert str(directory / SUMMARY) == layout.rank_summary(root, "dsir")
