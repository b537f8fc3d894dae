"""The embedded corpus builder: file contracts, held-out isolation, ground truth, determinism."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from selectlab.corpus.build import build_embedded_corpus, read_source
from selectlab.corpus.passages import MissingResourceError
from selectlab.shards import read_all

SET_NAMES = {"wikipedia": "RedPajamaWikipedia", "book": "RedPajamaBook",
             "code": "RedPajamaGithub", "docs": "RedPajamaStackExchange",
             "web": "RedPajamaCommonCrawl"}
OPERATORS = ["ocr_noise", "line_repetition", "ngram_repetition", "language_mixing",
             "spam_insertion", "truncation"]
NUM_SHARDS = 3


def small_params(**overrides) -> dict:
    params = {
        "seed": 17,
        "heldout_docs_per_source": {"validation": 4, "test": 6},
        "dsir_target_docs_per_source": {"wikipedia": 5, "book": 5},
        "corruption": {"fraction": 0.4, "operators": OPERATORS, "severity_min": 0.2,
                       "severity_max": 1.0, "donor_count": 20},
        "sources": {
            "wikipedia": {"max_docs": 60, "min_chars": 300, "max_chars": 3000},
            "book": {"max_docs": 50, "min_chars": 300, "max_chars": 3000},
            "code": {"max_docs": 50, "min_chars": 200, "max_chars": 3000},
            "docs": {"max_docs": 50, "min_chars": 300, "max_chars": 3000},
            "web": {"max_docs": 60, "min_chars": 100, "max_chars": 3000, "max_man_pages": 10},
        },
    }
    params.update(overrides)
    return params


def build(out_dir: Path, params: dict | None = None, num_shards: int = NUM_SHARDS) -> dict:
    try:
        return build_embedded_corpus(params or small_params(), SET_NAMES, num_shards, out_dir)
    except MissingResourceError as missing:  # machines without the offline packages
        pytest.skip(str(missing))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict]:
    out_dir = tmp_path_factory.mktemp("corpus")
    return out_dir, build(out_dir)


def shard_paths(out_dir: Path) -> list[Path]:
    return [out_dir / "raw" / f"shard_{i:05d}.jsonl.zst" for i in range(NUM_SHARDS)]


def test_writes_exactly_the_contract_files(corpus):
    out_dir, _ = corpus
    files = sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file())
    assert files == ["build_stats.json", "dsir_target.jsonl.zst", "ground_truth.parquet",
                     "heldout/test.jsonl.zst",
                     "heldout/validation.jsonl.zst", "raw/shard_00000.jsonl.zst",
                     "raw/shard_00001.jsonl.zst", "raw/shard_00002.jsonl.zst"]


def test_training_documents_are_dealt_evenly_and_shuffled(corpus):
    out_dir, stats = corpus
    sizes = []
    ids = []
    for path in shard_paths(out_dir):
        docs, report = read_all([path])
        assert report.n_skipped == 0
        sizes.append(len(docs))
        ids.extend(d.id for d in docs)
    assert max(sizes) - min(sizes) <= 1
    assert sizes == stats["shard_documents"]
    assert sum(sizes) == (60 + 50 + 50 + 50 + 60) - 5 * 10 - 2 * 5
    assert len(set(ids)) == len(ids)
    assert ids != sorted(ids)  # sources are mixed, not concatenated


def test_heldout_is_disjoint_clean_and_sized_per_source(corpus):
    out_dir, _ = corpus
    training, _ = read_all(shard_paths(out_dir))
    validation, _ = read_all([out_dir / "heldout" / "validation.jsonl.zst"])
    test, _ = read_all([out_dir / "heldout" / "test.jsonl.zst"])
    train_ids = {d.id for d in training}
    val_ids, test_ids = {d.id for d in validation}, {d.id for d in test}
    assert not (train_ids & val_ids) and not (train_ids & test_ids) and not (val_ids & test_ids)
    heldout_texts = {d.text for d in validation + test}
    assert len(heldout_texts) == len(validation) + len(test)
    assert not heldout_texts & {d.text for d in training}
    assert Counter(d.id.split("-")[0] for d in validation) == {k: 4 for k in SET_NAMES}
    assert Counter(d.id.split("-")[0] for d in test) == {k: 6 for k in SET_NAMES}
    # Held-out text is exactly what the reader produced: corruption never touched it.
    params = small_params()
    for key in SET_NAMES:
        texts = read_source(key, params["sources"][key], params["seed"])
        for doc in validation + test:
            if doc.id.startswith(key + "-"):
                raw = texts[int(doc.id.split("-")[1])]
                assert (doc.text, doc.source_detail) == (raw.text, raw.detail)
                assert doc.set_name == SET_NAMES[key]


def test_dsir_target_split_is_disjoint_from_validation_test_and_training(corpus):
    out_dir, stats = corpus
    training, _ = read_all(shard_paths(out_dir))
    validation, _ = read_all([out_dir / "heldout" / "validation.jsonl.zst"])
    test, _ = read_all([out_dir / "heldout" / "test.jsonl.zst"])
    target, report = read_all([out_dir / "dsir_target.jsonl.zst"])
    assert report.n_skipped == 0
    assert Counter(d.id.split("-")[0] for d in target) == {"wikipedia": 5, "book": 5}
    target_ids, target_texts = {d.id for d in target}, {d.text for d in target}
    for other in (validation, test, training):
        assert not target_ids & {d.id for d in other}
        assert not target_texts & {d.text for d in other}
    assert stats["totals"]["dsir_target"] == 10
    assert stats["sources"]["wikipedia"]["dsir_target"] == 5
    assert stats["sources"]["code"]["dsir_target"] == 0
    # clean text, as the reader produced it
    params = small_params()
    for key in ("wikipedia", "book"):
        texts = read_source(key, params["sources"][key], params["seed"])
        for doc in target:
            if doc.id.startswith(key + "-"):
                assert doc.text == texts[int(doc.id.split("-")[1])].text


def test_carving_dsir_targets_leaves_the_evaluation_splits_unchanged(corpus, tmp_path):
    out_dir, _ = corpus
    params = small_params(sources={"wikipedia": small_params()["sources"]["wikipedia"]},
                          dsir_target_docs_per_source={})
    build(tmp_path, params)
    for split in ("validation", "test"):
        with_targets, _ = read_all([out_dir / "heldout" / f"{split}.jsonl.zst"])
        without, _ = read_all([tmp_path / "heldout" / f"{split}.jsonl.zst"])
        wiki = [d for d in with_targets if d.id.startswith("wikipedia-")]
        assert [(d.id, d.text) for d in wiki] == [(d.id, d.text) for d in without]
    target, _ = read_all([tmp_path / "dsir_target.jsonl.zst"])
    assert target == []


def test_ground_truth_covers_every_training_document_once(corpus):
    out_dir, _ = corpus
    training, _ = read_all(shard_paths(out_dir))
    truth = pq.read_table(out_dir / "ground_truth.parquet").to_pandas()
    assert list(truth.columns) == ["id", "set_name", "source", "operator", "severity"]
    assert truth["id"].is_unique
    assert set(truth["id"]) == {d.id for d in training}
    by_id = truth.set_index("id")
    for doc in training:
        row = by_id.loc[doc.id]
        assert row["set_name"] == doc.set_name == SET_NAMES[row["source"]]
        assert doc.id.startswith(row["source"] + "-")
    clean = truth[truth["operator"] == "none"]
    dirty = truth[truth["operator"] != "none"]
    assert (clean["severity"] == 0.0).all()
    assert dirty["severity"].between(0.2, 1.0).all()
    assert set(dirty["operator"]) <= set(OPERATORS) and len(set(dirty["operator"])) >= 4


def test_corrupted_fraction_matches_config(corpus):
    out_dir, stats = corpus
    truth = pq.read_table(out_dir / "ground_truth.parquet").to_pandas()
    for key, group in truth.groupby("source"):
        corrupted = int((group["operator"] != "none").sum())
        assert corrupted == round(0.4 * len(group)), key
        assert stats["sources"][key]["corrupted"] == corrupted
    assert abs((truth["operator"] != "none").mean() - 0.4) < 0.02


def test_corrupted_documents_differ_from_their_clean_text(corpus):
    out_dir, _ = corpus
    training, _ = read_all(shard_paths(out_dir))
    truth = pq.read_table(out_dir / "ground_truth.parquet").to_pandas().set_index("id")
    params = small_params()
    clean_texts = {key: read_source(key, params["sources"][key], params["seed"])
                   for key in SET_NAMES}
    for doc in training:
        key, index = doc.id.split("-")
        clean = clean_texts[key][int(index)]
        assert doc.source_detail == clean.detail
        assert (doc.text == clean.text) == (truth.loc[doc.id, "operator"] == "none")


def test_stats_file_matches_return_value(corpus):
    out_dir, stats = corpus
    assert json.loads((out_dir / "build_stats.json").read_text()) == stats
    assert stats["totals"]["documents"] == 210
    assert stats["totals"]["heldout_validation"] == 20 and stats["totals"]["heldout_test"] == 30
    for key, source in stats["sources"].items():
        assert source["set_name"] == SET_NAMES[key]
        assert source["documents"] + 10 + source["dsir_target"] == source["documents_read"]
        assert source["heldout"] == {"validation": 4, "test": 6}
        assert source["characters"] > 100 * source["documents"]


def test_rebuild_is_byte_identical(corpus, tmp_path):
    out_dir, _ = corpus
    build(tmp_path)
    first = {p.relative_to(out_dir): p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert first == second


def test_another_seed_gives_another_corpus(corpus, tmp_path):
    out_dir, _ = corpus
    build(tmp_path, small_params(seed=18))
    assert (tmp_path / "ground_truth.parquet").read_bytes() != \
        (out_dir / "ground_truth.parquet").read_bytes()


def test_fewer_shards_removes_stale_ones(tmp_path):
    params = small_params(sources={"book": {"max_docs": 30, "min_chars": 300,
                                            "max_chars": 3000}}, dsir_target_docs_per_source={})
    build(tmp_path, params, num_shards=3)
    build(tmp_path, params, num_shards=2)
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == ["shard_00000.jsonl.zst",
                                                                    "shard_00001.jsonl.zst"]


def test_too_few_documents_for_heldout_raises(tmp_path):
    params = small_params(sources={"book": {"max_docs": 10, "min_chars": 300,
                                            "max_chars": 3000}}, dsir_target_docs_per_source={})
    with pytest.raises(ValueError, match="'book' yielded 10 documents but the held-out"):
        build(tmp_path, params)


@pytest.mark.parametrize("change,message", [
    ({"corruption": {"fraction": 0.5, "operators": ["melt"]}}, "unknown corruption operators"),
    ({"corruption": {"fraction": 1.5, "operators": OPERATORS}}, "fraction"),
    ({"corruption": {"fraction": 0.5, "operators": OPERATORS, "severity_min": 0.0}},
     "severity_min"),
    ({"sources": {"poetry": {"max_docs": 30, "min_chars": 1, "max_chars": 9}}}, "no set name"),
    ({"dsir_target_docs_per_source": {"poetry": 3}}, "names sources \\['poetry'\\]"),
])
def test_bad_params_raise(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        build(tmp_path, small_params(**change))


def test_a_reference_split_is_cut_after_validation_and_test_and_leaves_them_unchanged(
        corpus, tmp_path):
    """MATES's reference set (mates.reference heldout:reference): held out like the reported
    splits, disjoint from them and from training, and asking for it changes neither."""
    out_dir, _ = corpus
    params = small_params(heldout_docs_per_source={"validation": 4, "test": 6, "reference": 3})
    stats = build(tmp_path, params)
    reference, _ = read_all([tmp_path / "heldout" / "reference.jsonl.zst"])
    assert len(reference) == 3 * len(SET_NAMES) == stats["totals"]["heldout_reference"]
    for split in ("validation", "test"):
        before, _ = read_all([out_dir / "heldout" / f"{split}.jsonl.zst"])
        after, _ = read_all([tmp_path / "heldout" / f"{split}.jsonl.zst"])
        assert [d.text for d in before] == [d.text for d in after]
    training = [d for path in sorted((tmp_path / "raw").glob("*.jsonl.zst"))
                for d in read_all([path])[0]]
    assert not {d.id for d in reference} & {d.id for d in training}
    assert all(s["heldout"]["reference"] == 3 for s in stats["sources"].values())
