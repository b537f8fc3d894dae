"""Which documents, pairs and snippets the judge sees."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from conftest import encode, record, write_jsonl_zst

from selectlab.judge.sample import (
    cut_snippet,
    load_documents,
    pair_sample,
    pointwise_sample,
    proportional_allocation,
    random_pairs,
    read_meta,
    snippet_length,
    stratified_sample,
)
from selectlab.tokens import load_tokenizer, tokenize_shard

SETS = {"RedPajamaWikipedia": 30, "RedPajamaBook": 20, "RedPajamaGithub": 10}


@pytest.fixture
def shards(tmp_path, sample_texts, tiny_tokenizer_dir):
    """Two raw shards, their meta sidecars (written by the real tokenize step) and files."""
    records, i = [], 0
    for set_name, count in SETS.items():
        for _ in range(count):
            text = " ".join(sample_texts[j % len(sample_texts)] for j in range(i, i + 1 + i % 4))
            records.append(record(f"{set_name[10:].lower()}-{i:03d}", text, set_name))
            i += 1
    random.Random(0).shuffle(records)
    files, metas = {}, []
    for n, part in enumerate((records[:35], records[35:])):
        shard = f"shard_{n:05d}"
        raw = write_jsonl_zst(tmp_path / "raw" / f"{shard}.jsonl.zst", encode(part))
        meta = tmp_path / "meta" / f"{shard}.parquet"
        tokenize_shard([raw], tiny_tokenizer_dir, shard, tmp_path / f"{shard}.npy", meta,
                       tmp_path / f"{shard}.json", tmp_path / f"{shard}.q", max_chars=10**6)
        files[shard] = [str(raw)]
        metas.append(meta)
    return read_meta(metas), files, {r["id"]: r["text"] for r in records}


def test_allocation_is_proportional_and_exact():
    assert proportional_allocation({"a": 30, "b": 20, "c": 10}, 6) == {"a": 3, "b": 2, "c": 1}
    split = proportional_allocation({"a": 5, "b": 5, "c": 5}, 7)
    assert sum(split.values()) == 7 and max(split.values()) - min(split.values()) <= 1
    assert proportional_allocation({"a": 2, "b": 1}, 100) == {"a": 2, "b": 1}


def test_stratified_sample_keeps_source_shares_and_is_seeded(shards):
    meta, _, _ = shards
    drawn = stratified_sample(meta, 12, seed=4)
    assert drawn["set_name"].value_counts().to_dict() == {
        "RedPajamaWikipedia": 6, "RedPajamaBook": 4, "RedPajamaGithub": 2}
    assert drawn["id"].is_unique
    assert drawn["id"].tolist() == stratified_sample(meta, 12, seed=4)["id"].tolist()
    assert drawn["id"].tolist() != stratified_sample(meta, 12, seed=5)["id"].tolist()


def test_random_pairs_are_distinct_and_spread_over_documents():
    ids = [f"d{i}" for i in range(10)]
    pairs = random_pairs(ids, 15, seed=1)
    assert len(pairs) == 15 and len({frozenset(p) for p in pairs}) == 15
    assert all(a != b for a, b in pairs)
    uses = pd.Series([d for p in pairs for d in p]).value_counts()
    assert uses.max() - uses.min() <= 2  # repeated matchings: each round uses every document
    assert len(random_pairs(ids[:4], 6, seed=1)) == 6  # every possible pair
    with pytest.raises(ValueError, match="give only 6"):
        random_pairs(ids[:4], 7, seed=1)


def test_snippet_lengths_follow_the_paper_scheme():
    rng = random.Random(0)
    lengths = [snippet_length(rng, 256, 512) for _ in range(2000)]
    assert all(256 <= n <= 512 for n in lengths)
    at_max = sum(n == 512 for n in lengths) / len(lengths)
    assert at_max == pytest.approx(0.5, abs=0.05)


def test_cut_snippet_takes_consecutive_tokens_or_the_whole_text():
    tokens = list(range(100))
    snippet = cut_snippet(tokens, 10, random.Random(3), lambda ids: ",".join(map(str, ids)))
    ids = [int(t) for t in snippet.text.split(",")]
    assert snippet.tokens == 10 and ids == list(range(snippet.start, snippet.start + 10))
    short = cut_snippet(tokens[:5], 10, random.Random(3), lambda ids: ids)
    assert short.text == [0, 1, 2, 3, 4] and short.start == 0 and short.tokens == 5


def test_pair_sample_rows_hold_equal_length_snippets_of_the_documents(shards, tiny_tokenizer_dir):
    meta, files, texts = shards
    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    table = pair_sample(meta, files, documents=20, pairs=15, snippet_tokens=[8, 16], seed=9,
                        tokenizer=tokenizer, max_doc_chars=10**6)
    assert len(table) == 15 and (table["protocol"] == "qurating").all()
    assert table["snippet_tokens"].between(8, 16).all()
    for row in table.itertuples():
        for side in ("a", "b"):
            doc, text = getattr(row, f"doc_{side}"), getattr(row, f"text_{side}")
            n = getattr(row, f"tokens_{side}")
            assert n == min(row.snippet_tokens,
                            len(tokenizer(texts[doc], add_special_tokens=False)["input_ids"]))
            assert text.strip() and text.strip() in texts[doc]
    again = pair_sample(meta, files, documents=20, pairs=15, snippet_tokens=[8, 16], seed=9,
                        tokenizer=tokenizer, max_doc_chars=10**6)
    pd.testing.assert_frame_equal(table, again)


def test_pointwise_sample_clips_long_documents(shards, tiny_tokenizer_dir):
    meta, files, texts = shards
    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    table = pointwise_sample("dataman", meta, files, documents=60, max_text_tokens=40, seed=2,
                             tokenizer=tokenizer, max_doc_chars=10**6)
    assert len(table) == 60 and set(table["doc_id"]) == set(texts)
    short = table[table["doc_tokens"] <= 40]
    assert (short["text"] == short["doc_id"].map(texts)).all()
    long = table[table["doc_tokens"] > 40]
    assert len(long) > 0 and (long["text_tokens"] == 40).all()
    assert all(texts[d].startswith(t.strip()) for d, t in zip(long.doc_id, long.text,
                                                              strict=True))
    other = pointwise_sample("prrc", meta, files, documents=10, max_text_tokens=40, seed=2,
                             tokenizer=tokenizer, max_doc_chars=10**6)
    first = pointwise_sample("dataman", meta, files, documents=10, max_text_tokens=40, seed=2,
                             tokenizer=tokenizer, max_doc_chars=10**6)
    assert other["doc_id"].tolist() != first["doc_id"].tolist()  # independent per protocol


def test_ids_missing_from_the_raw_shards_are_an_error(shards):
    _, files, _ = shards
    with pytest.raises(ValueError, match="not in the raw shards"):
        load_documents({"shard_00000": {"no-such-id"}}, files, 10**6)
    with pytest.raises(ValueError, match="no raw files"):
        load_documents({"shard_00009": {"x"}}, files, 10**6)


def test_sample_command_writes_the_table(shards, tiny_tokenizer_dir, tmp_path):
    from selectlab.cli import main

    meta, files, _ = shards
    metas = sorted(str(p) for p in (tmp_path / "meta").glob("*.parquet"))
    params = {"protocol": "qurating", "seed": 1, "max_doc_chars": 10**6,
              "settings": {"documents": 10, "pairs": 8, "snippet_tokens": [8, 12]}}
    out = tmp_path / "judgments" / "qurating" / "sample.parquet"
    assert main(["judge", "sample", "--meta", *metas, "--shard-files", json.dumps(files),
                 "--tokenizer", str(tiny_tokenizer_dir), "--params", json.dumps(params),
                 "--out", str(out)]) == 0
    assert len(pd.read_parquet(out)) == 8


def test_candidate_shards_sharing_an_id_are_refused(tmp_path):
    from selectlab.judge.sample import read_meta

    for shard in ("shard_00000", "shard_00001"):
        pd.DataFrame({"id": ["example_train_0:1", f"{shard}-x"], "set_name": "S",
                      "source_detail": "", "n_tokens": 5}).to_parquet(tmp_path / f"{shard}.parquet")
    with pytest.raises(ValueError, match=r"1 document ids occur more than once among the "
                                         r"candidate shards \(e.g. 'example_train_0:1' in "
                                         r"\['shard_00000', 'shard_00001'\]\)"):
        read_meta(sorted(tmp_path.glob("*.parquet")))
