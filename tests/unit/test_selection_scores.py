"""Score references, scalings, strata codes, overlap and the corrupted fraction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from selectlab.selection import scores as sc
from selectlab.selection.overlap import (
    corrupted_fraction,
    jaccard,
    overlap_matrix,
    read_selection_keys,
)
from selectlab.selection.pool import iter_vectors, scan_pool
from selectlab.selection.scores import ScoreRef
from selectlab.selection.strata import WhereFilter, build_strata


def test_score_references_parse_with_an_optional_minus():
    assert ScoreRef.parse("refppl.ref_nll") == ScoreRef("refppl", "ref_nll", False)
    ref = ScoreRef.parse("-qurater.educational_value")
    assert ref.negate and str(ref) == "-qurater.educational_value"
    np.testing.assert_array_equal(sc.oriented(np.array([1.0, -2.0]), ref), [-1.0, 2.0])
    for bad in ("nodot", "a.b.c", "--a.b", "", None):
        with pytest.raises(ValueError):
            ScoreRef.parse(bad)


def test_percentile_ranks_share_ties_keep_nan_and_span_zero_to_one():
    values = np.array([3.0, 1.0, np.nan, 2.0, 2.0, 5.0], dtype=np.float32)
    ranks = sc.percentile_ranks(values)
    # Sorted finite values 1, 2, 2, 3, 5: ranks 0, 1.5, 1.5, 3, 4 over 4.
    np.testing.assert_allclose(ranks[[1, 3, 4, 0, 5]], [0, 0.375, 0.375, 0.75, 1.0])
    assert np.isnan(ranks[2]) and ranks.dtype == np.float32


def test_percentile_ranks_are_the_same_in_chunks(monkeypatch):
    values = np.random.default_rng(0).integers(0, 50, size=10_001).astype(np.float32)
    whole = sc.percentile_ranks(values)
    monkeypatch.setattr(sc, "RANK_CHUNK", 97)
    np.testing.assert_array_equal(sc.percentile_ranks(values), whole)


def test_z_scores_have_zero_mean_unit_variance_over_present_values():
    values = np.array([1.0, 2.0, np.nan, 4.0, 8.0], dtype=np.float32)
    z = sc.z_scores(values)
    present = z[~np.isnan(z)]
    assert abs(present.mean()) < 1e-6 and abs(present.std() - 1) < 1e-6 and np.isnan(z[2])
    with pytest.raises(ValueError, match="no document has this score"):
        sc.z_scores(np.full(3, np.nan, dtype=np.float32))


def small_pool(directory, columns: dict, sources: list[str]):
    """One-shard pool of five documents with a sidecar family `x` holding `columns`."""
    for family, frame in (("meta", {"n_tokens": [10] * 5, "set_name": sources}), ("x", columns)):
        (directory / family).mkdir()
        pd.DataFrame(frame).to_parquet(directory / family / "s.parquet")
    return scan_pool(directory, ["s"], [5], spill=False)


def test_strata_combine_source_and_a_category_into_present_pairs(tmp_path):
    pool, store = small_pool(tmp_path, {"domain": ["law", "med", "med", "med", "law"]},
                             ["A", "A", "B", "B", "B"])
    strata = build_strata(pool, store, ["set_name", "x.domain"])
    assert strata.names == ["A/law", "A/med", "B/law", "B/med"]
    assert store.chunk("stratum", 0).tolist() == [0, 1, 3, 3, 2]
    assert strata.pool_documents.tolist() == [1, 1, 1, 2]
    assert strata.pool_tokens.tolist() == [10, 10, 10, 20]
    strata = build_strata(pool, store, [])
    assert strata.names == ["all"] and set(store.chunk("stratum", 0).tolist()) == {0}
    with pytest.raises(ValueError, match="cannot be negated"):
        build_strata(pool, store, ["-x.domain"])


def test_where_keeps_listed_values_numbers_or_categories(tmp_path):
    pool, _ = small_pool(tmp_path, {"level": [5, 4, 5, None, 1],
                                    "domain": ["A", "B", "B", None, "A"]}, ["S"] * 5)
    missing: dict[str, int] = {}
    [mask] = list(WhereFilter(pool, {"x.level": [5]}, missing).chunks())
    assert mask.tolist() == [True, False, True, False, False]
    assert missing == {"x.level": 1}
    [mask] = list(WhereFilter(pool, {"x.domain": ["B"]}, missing).chunks())
    assert mask.tolist() == [False, True, True, False, False]
    with pytest.raises(ValueError, match="all numbers or all strings"):
        WhereFilter(pool, {"x.domain": ["B", 1]}, missing)


def test_overlap_matrix_is_symmetric_jaccard(tmp_path):
    frames = {
        "a": pd.DataFrame({"shard": ["s1", "s1", "s2"], "row": [0, 1, 0]}),
        "b": pd.DataFrame({"shard": ["s1", "s2", "s2", "s2"], "row": [1, 0, 5, 5]}),
    }
    paths = {}
    for name, frame in frames.items():
        paths[name] = tmp_path / f"{name}.parquet"
        frame.to_parquet(paths[name])
    keys = read_selection_keys(paths)
    assert len(keys["b"]) == 3  # the repeated document counts once
    matrix = overlap_matrix(keys)
    assert matrix.loc["a", "b"] == matrix.loc["b", "a"] == pytest.approx(2 / 4)
    assert matrix.loc["a", "a"] == 1.0
    assert jaccard(np.array([], np.uint64), np.array([], np.uint64)) == 1.0


def test_corrupted_fraction_by_documents_and_tokens():
    truth = pd.DataFrame({"id": ["a", "b", "c"], "operator": ["none", "ocr_noise", "none"]})
    selection = pd.DataFrame({"id": ["a", "b"], "n_tokens": [30, 10]})
    assert corrupted_fraction(selection, truth) == 0.5
    assert corrupted_fraction(selection, truth, weight="tokens") == 0.25
    with pytest.raises(ValueError, match="not in the ground truth"):
        corrupted_fraction(pd.DataFrame({"id": ["z"], "n_tokens": [1]}), truth)


def test_vectors_read_from_fixed_and_variable_lists_with_null_rows(tmp_path):
    fixed = pa.array([[1, 2], None, [5, 6]], type=pa.list_(pa.float32(), 2))
    variable = pa.array([[1, 2], None, [5, 6]], type=pa.list_(pa.float32()))
    for name, column in (("fixed", fixed), ("variable", variable)):
        (tmp_path / name).mkdir()
        pq.write_table(pa.table({"id": ["a", "b", "c"], "v": column}),
                       tmp_path / name / "s.parquet")
        [(shard, matrix)] = list(iter_vectors(tmp_path, name, "v", ["s"], [3]))
        assert shard == "s" and matrix.dtype == np.float32
        np.testing.assert_array_equal(matrix[[0, 2]], [[1, 2], [5, 6]])
        assert np.isnan(matrix[1]).all()


def test_category_codes_follow_sorted_names_across_shards_with_missing_values():
    from selectlab.selection.pool import MISSING_CATEGORY, CategoryCodes

    categories = CategoryCodes()
    first = categories.add(pa.chunked_array([pa.array(["law", "med", None, "law"])]))
    second = categories.add(pa.chunked_array([pa.array(["fin", "med"]).dictionary_encode()]))
    remap, names = categories.finish()
    assert names == sorted(["law", "med", "fin", MISSING_CATEGORY])
    codes = remap[np.concatenate([first, second])]
    assert [names[c] for c in codes] == ["law", "med", MISSING_CATEGORY, "law", "fin", "med"]


def test_unused_dictionary_values_name_no_category():
    from selectlab.selection.pool import CategoryCodes

    categories = CategoryCodes()
    encoded = pa.DictionaryArray.from_arrays(pa.array([1, 1]), pa.array(["unused", "used"]))
    categories.add(pa.chunked_array([encoded]))
    assert categories.finish()[1] == ["used"]
