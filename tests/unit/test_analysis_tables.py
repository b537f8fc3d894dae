"""DataMan's corpus statistics (Table 11) and per-domain means (Table 7), and the correlations
behind the heatmaps, on hand-made sidecars with hand-computed answers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from selectlab.analysis import correlation as corr
from selectlab.analysis import dataman_tables as dt
from selectlab.cli import main
from selectlab.judge.dataman import CRITERIA
from selectlab.tokens import META_SCHEMA

QUALITY = [c for c in CRITERIA if c != "overall_score"]
# Two shards: (id, source, tokens, domain, overall, accuracy); None = the rater gave nothing.
DOCS = [
    [("a", "RedPajamaBook", 10, "A", 5, 4), ("b", "RedPajamaWikipedia", 20, "A", 3, 2),
     ("c", "RedPajamaBook", 30, None, None, None)],
    [("d", "RedPajamaCommonCrawl", 40, "C", 4, 5), ("e", "RedPajamaBook", 50, "A", 5, 5),
     ("f", "RedPajamaWikipedia", 60, "C", 1, 1)],
]


def write_shards(root: Path) -> tuple[list[Path], list[Path]]:
    metas, sidecars = [], []
    for i, docs in enumerate(DOCS):
        ids = [d[0] for d in docs]
        meta = root / "meta" / f"shard_{i}.parquet"
        sidecar = root / "dataman" / f"shard_{i}.parquet"
        meta.parent.mkdir(parents=True, exist_ok=True)
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({
            "id": ids, "set_name": [d[1] for d in docs], "source_detail": [""] * len(docs),
            "n_chars": [1] * len(docs), "n_tokens": [d[2] for d in docs],
            "token_offset": [0] * len(docs)}, schema=META_SCHEMA), meta)
        columns = {"id": ids}
        for name in QUALITY:
            # accuracy as listed; every other criterion = the overall score
            values = [d[5] if name == "accuracy" else d[4] for d in docs]
            columns[name] = pa.array(values, pa.int64())
        columns["overall_score"] = pa.array([d[4] for d in docs], pa.int64())
        columns["domain"] = [d[3] for d in docs]
        columns["status"] = ["ok" if d[3] else "missing" for d in docs]
        columns["missing_reason"] = [None if d[3] else "text has no tokens" for d in docs]
        pq.write_table(pa.table(columns), sidecar)
        metas.append(meta)
        sidecars.append(sidecar)
    return metas, sidecars


def reduced(root: Path):
    metas, sidecars = write_shards(root)
    frames = [dt.read_dataman_shard(m, s) for m, s in zip(metas, sidecars, strict=True)]
    return frames, metas, sidecars


def test_corpus_table_counts_every_document_in_every_group(tmp_path):
    frames, _, _ = reduced(tmp_path)
    table = dt.corpus_table(dt.add_counts(dt.shard_counts(f) for f in frames))
    rows = {(r.group, r.value): (r.documents, r.tokens) for r in table.itertuples()}
    assert rows[("Domain", "Medicine (A)")] == (3, 80)
    assert rows[("Domain", "Law (C)")] == (2, 100)
    assert rows[("Domain", "not rated")] == (1, 30)
    assert rows[("Overall Score", "5")] == (2, 60)
    assert rows[("Overall Score", "not rated")] == (1, 30)
    assert rows[("Source", "Book")] == (3, 90)
    assert rows[("Source", "CommonCrawl")] == (1, 40)
    assert rows[("All", "all documents")] == (6, 210)
    for group in ("Domain", "Overall Score", "Source"):
        block = table[table["group"] == group]
        assert block["documents"].sum() == 6
        assert block["documents %"].sum() == pytest.approx(100.0)
        assert block["tokens %"].sum() == pytest.approx(100.0)
    assert table[table["group"] == "Overall Score"]["value"].tolist() == [
        "5", "4", "3", "1", "not rated"]
    assert table[table["group"] == "Source"]["value"].tolist() == [
        "CommonCrawl", "Wikipedia", "Book"]  # the papers' source order


def test_domain_means_equal_hand_computed_means_whatever_the_sharding(tmp_path):
    frames, _, _ = reduced(tmp_path)
    table = dt.domain_means_table(dt.add_indexed(dt.shard_domain_sums(f) for f in frames))
    assert table["domain"].tolist() == ["Medicine (A)", "Law (C)"]  # by mean Overall Score
    medicine = table.iloc[0]
    assert medicine["documents"] == 3
    assert medicine["Overall Score"] == pytest.approx((5 + 3 + 5) / 3)
    assert medicine["Accuracy"] == pytest.approx((4 + 2 + 5) / 3)
    law = table.iloc[1]
    assert law["Accuracy"] == pytest.approx(3.0) and law["Coherence"] == pytest.approx(2.5)
    whole = dt.domain_means_table(dt.shard_domain_sums(pd.concat(frames, ignore_index=True)))
    pd.testing.assert_frame_equal(table, whole)
    assert list(table.columns[2:]) == [name for name, _ in CRITERIA.values()]


def test_a_rater_without_domains_gives_an_empty_table_that_says_why():
    frame = pd.DataFrame({"set_name": ["S"], "n_tokens": [3], "overall_score": [4]})
    table = dt.domain_means_table(dt.shard_domain_sums(frame))
    assert table.empty and table.attrs["notes"][0].startswith("No document has a DataMan domain")
    counts = dt.corpus_table(dt.add_counts([dt.shard_counts(frame)]))
    assert set(counts["group"]) == {"Overall Score", "Source", "All"}


def test_the_command_writes_both_tables_with_the_notes(tmp_path, capsys):
    _, metas, _ = reduced(tmp_path)
    # The pool's read report lists its shards; their sidecars sit under the attributes dir.
    ready = tmp_path / "read_report.csv"
    pd.DataFrame({"shard": [meta.stem for meta in metas]}).to_csv(ready, index=False)
    out = tmp_path / "tables"
    code = main(["analysis", "dataman-tables", "--attributes-dir", str(tmp_path),
                 "--pool", str(ready), "--family", "dataman",
                 "--notes", json.dumps(["SIMULATED judge"]),
                 "--out-corpus-csv", str(out / "c.csv"), "--out-corpus-md", str(out / "c.md"),
                 "--out-means-csv", str(out / "m.csv"), "--out-means-md", str(out / "m.md")])
    assert code == 0
    corpus_md = (out / "c.md").read_text()
    assert "- SIMULATED judge" in corpus_md
    assert "1 of 6 documents have no DataMan rating (text has no tokens: 1)" in corpus_md
    means = pd.read_csv(out / "m.csv")
    assert means.loc[0, "Overall Score"] == pytest.approx(4.33)  # printed to 2 decimals
    assert "- SIMULATED judge" in (out / "m.md").read_text()
    (tmp_path / "dataman" / f"{metas[-1].stem}.parquet").unlink()
    capsys.readouterr()
    assert main(["analysis", "dataman-tables", "--attributes-dir", str(tmp_path), "--pool",
                 str(ready), "--family", "dataman", "--out-corpus-csv", "a", "--out-corpus-md",
                 "b", "--out-means-csv", "c", "--out-means-md", "d"]) != 0
    assert "1 sidecars of the pool listed in" in capsys.readouterr().err


def frame_with_gaps() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    frame = pd.DataFrame({
        "dataman.overall_score": pd.array(np.clip(np.round(x + 3), 1, 5), dtype="Int64"),
        "dataman.accuracy": pd.array(rng.integers(1, 6, 60), dtype="Int64"),
        "refppl.ref_nll": x * 0.5 + rng.normal(size=60),
        "qurater.writing_style": rng.normal(size=60),
    })
    frame.loc[[3, 9, 20], "refppl.ref_nll"] = np.nan
    frame.loc[[5, 9], "dataman.overall_score"] = pd.NA
    return frame


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_heatmap_matrices_are_pairwise_complete_correlations(method):
    frame = frame_with_gaps()
    columns = list(frame.columns)
    matrix = corr.correlation_matrix(frame, columns, method)
    pd.testing.assert_frame_equal(matrix, frame.astype("float64").corr(method=method))
    both = frame[["dataman.overall_score", "refppl.ref_nll"]].astype("float64").dropna()
    reference = (stats.spearmanr if method == "spearman" else stats.pearsonr)(
        both.iloc[:, 0], both.iloc[:, 1])[0]
    assert matrix.loc["dataman.overall_score", "refppl.ref_nll"] == pytest.approx(reference)


def test_ratings_vs_nll_counts_documents_with_both_values():
    frame = frame_with_gaps()
    table = corr.spearman_against(frame, ["dataman.overall_score", "dataman.accuracy"],
                                  "refppl.ref_nll")
    assert table["rating"].tolist() == ["overall_score", "accuracy"]
    assert table["documents"].tolist() == [56, 57]  # rows 3, 5, 9, 20 and 3, 9, 20 lack one
    both = frame[["dataman.overall_score", "refppl.ref_nll"]].astype("float64").dropna()
    expected = stats.spearmanr(both.iloc[:, 0], both.iloc[:, 1])[0]
    assert table.loc[0, "spearman"] == pytest.approx(round(expected, 3))


def test_dataman_columns_follow_the_papers_order_inside_any_column_list():
    columns = ["signals.a", "dataman.overall_score", "dataman.accuracy", "x.b",
               "dataman.creativity"]
    assert corr.paper_order(columns, "dataman") == [
        "signals.a", "dataman.accuracy", "dataman.creativity", "x.b", "dataman.overall_score"]
    frame = pd.DataFrame(columns=columns)
    assert corr.dataman_columns(frame, "dataman") == [
        "dataman.accuracy", "dataman.creativity", "dataman.overall_score"]
