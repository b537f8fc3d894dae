"""Pools: sequence units cut from a tokenized shard, deterministic subsets, unit texts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from selectlab.corpus.pools import (
    FULL,
    cut_pool_shard,
    iter_unit_documents,
    kept_by_share,
    pool_shard,
    pool_spec,
    read_pool_spec,
    unit_keys,
)
from selectlab.shards import ReadReport
from selectlab.tokens import load_tokenizer, tokenize_shard
from tests.conftest import encode, write_jsonl_zst


@pytest.fixture
def tokenized(tmp_path, tiny_tokenizer_dir, sample_texts):
    """A real tokenized shard of 40 documents from two interleaved sources."""
    records = [{"id": f"d{i}", "text": text,
                "meta": {"redpajama_set_name": "A" if i % 3 else "B"}}
               for i, text in enumerate(sample_texts[:40])]
    raw = write_jsonl_zst(tmp_path / "raw.jsonl.zst", encode(records))
    paths = {name: tmp_path / name for name in ("s.npy", "s.parquet", "r.json", "q.jsonl")}
    tokenize_shard([raw], tiny_tokenizer_dir, "s", paths["s.npy"], paths["s.parquet"],
                   paths["r.json"], paths["q.jsonl"], max_chars=100_000)
    return paths["s.npy"], paths["s.parquet"], load_tokenizer(tiny_tokenizer_dir), records


def test_sequence_units_are_windows_of_each_sources_stream(tmp_path, tokenized):
    tokens_path, meta_path, tokenizer, _ = tokenized
    spec = pool_spec("seq", {"unit": "sequence", "sequence_tokens": 32})
    eos = tokenizer.eos_token_id
    counts = cut_pool_shard(tokens_path, meta_path, spec, eos, tmp_path / "u.npy",
                            tmp_path / "u.parquet")
    tokens, meta = np.load(tokens_path), pd.read_parquet(meta_path)
    units, unit_tokens = pd.read_parquet(tmp_path / "u.parquet"), np.load(tmp_path / "u.npy")
    assert counts["kept"] == counts["units"] == len(units)
    for source, docs in meta.groupby("set_name"):
        # The source's documents in reader order, each followed by EOS: the stream cut in 32s.
        stream = np.concatenate([np.r_[tokens[o:o + n], eos] for o, n
                                 in zip(docs["token_offset"], docs["n_tokens"], strict=True)])
        mine = units[units["set_name"] == source]
        assert (mine["n_tokens"].iloc[:-1] == 32).all() and 0 < mine["n_tokens"].iloc[-1] <= 32
        got = np.concatenate([unit_tokens[o:o + n] for o, n
                              in zip(mine["token_offset"], mine["n_tokens"], strict=True)])
        assert got.tolist() == stream.tolist()
        # A unit's id names the document and token it starts at.
        first_doc, second = docs.iloc[0], mine.iloc[1]
        assert mine.iloc[0]["id"] == f"{first_doc['id']}#0"
        doc_id, token = second["id"].split("#")
        start = docs.set_index("id").loc[doc_id]
        assert stream[32] == (tokens[start["token_offset"] + int(token)]
                              if int(token) < start["n_tokens"] else eos)
    assert read_pool_spec(tmp_path / "u.parquet") == spec
    assert read_pool_spec(meta_path) is None
    # Characters are spread over the windows: they add up to the shard's.
    assert abs(int(units["n_chars"].sum()) - int(meta["n_chars"].sum())) <= len(units)


def test_unit_texts_are_the_documents_they_hold(tmp_path, tokenized):
    tokens_path, meta_path, tokenizer, records = tokenized
    spec = pool_spec("seq", {"unit": "sequence", "sequence_tokens": 48})
    cut_pool_shard(tokens_path, meta_path, spec, tokenizer.eos_token_id, tmp_path / "u.npy",
                   tmp_path / "u.parquet")
    report = ReadReport(shard="s__seq")
    documents = list(iter_unit_documents(tmp_path / "u.npy", tmp_path / "u.parquet", tokenizer,
                                         report, batch_size=7))
    assert report.documents == len(documents) == pq.ParquetFile(tmp_path / "u.parquet") \
        .metadata.num_rows
    # Byte-level BPE decodes exactly, so a source's unit texts, joined, are its documents in
    # order with a blank line between (windows may split a word; joining restores it).
    for source in ("A", "B"):
        joined = "".join(d.text for d in documents if d.set_name == source)
        expected = "\n\n".join(r["text"] for r in records
                               if r["meta"]["redpajama_set_name"] == source)
        assert joined.replace("\n\n", "") == expected.replace("\n\n", "")


def test_share_keeps_a_stable_random_subset_of_units(tmp_path, tokenized):
    tokens_path, meta_path, tokenizer, _ = tokenized
    ids = [f"doc{i}#0" for i in range(20_000)]
    kept = kept_by_share(ids, 0.4147)
    assert abs(kept.mean() - 0.4147) < 0.015
    # Nested: a smaller share keeps a subset of a larger one's units; keys never change.
    assert not (kept_by_share(ids, 0.2) & ~kept).any()
    assert unit_keys(["doc1#0"])[0] == unit_keys(np.array(["doc1#0"], dtype=object))[0]
    spec = pool_spec("half", {"unit": "document", "share": 0.5})
    counts = cut_pool_shard(tokens_path, meta_path, spec, tokenizer.eos_token_id,
                            tmp_path / "h.npy", tmp_path / "h.parquet")
    meta, half = pd.read_parquet(meta_path), pd.read_parquet(tmp_path / "h.parquet")
    assert 0 < counts["kept"] < counts["units"] == len(meta)
    assert half["id"].tolist() == [i for i in meta["id"] if kept_by_share([i], 0.5)[0]]
    tokens, cut = np.load(tokens_path), np.load(tmp_path / "h.npy")
    original = meta.set_index("id")
    for row in half.itertuples():
        source = original.loc[row.id]
        assert cut[row.token_offset:row.token_offset + row.n_tokens].tolist() == \
            tokens[source["token_offset"]:source["token_offset"] + source["n_tokens"]].tolist()


def test_pool_settings_are_checked_and_named():
    assert pool_shard("shard_00001", FULL) == "shard_00001"
    assert pool_shard("shard_00001", "qurating") == "shard_00001__qurating"
    with pytest.raises(ValueError, match="sequence_tokens"):
        pool_spec("x", {"unit": "sequence"})
    with pytest.raises(ValueError, match="share"):
        pool_spec("x", {"unit": "document", "share": 0})
    with pytest.raises(ValueError, match="reserved"):
        pool_spec(FULL, {"unit": "document"})


def test_a_pools_ready_file_lists_its_shards_in_order(tmp_path, tokenized):
    """Selection reads its shards from the read report (full) or the pool's report."""
    from selectlab.corpus.pools import listed_shards, write_pool_report

    tokens_path, meta_path, tokenizer, _ = tokenized
    spec = pool_spec("seq", {"unit": "sequence", "sequence_tokens": 32})
    metas = []
    for shard in ("shard_00001", "shard_00000"):
        meta = tmp_path / f"{pool_shard(shard, 'seq')}.parquet"
        cut_pool_shard(tokens_path, meta_path, spec, tokenizer.eos_token_id,
                       tmp_path / f"{shard}.npy", meta)
        metas.append(meta)
    write_pool_report(metas, tmp_path / "seq.json")
    assert listed_shards(tmp_path / "seq.json") == ["shard_00001__seq", "shard_00000__seq"]
    pd.DataFrame({"shard": ["shard_00001", "shard_00000"], "documents": [3, 4]}).to_csv(
        tmp_path / "read_report.csv", index=False)
    assert listed_shards(tmp_path / "read_report.csv") == ["shard_00001", "shard_00000"]


def test_nested_pools_share_one_draw_and_independent_ones_do_not():
    from selectlab.corpus.pools import kept_by_share, pool_spec

    ids = [f"doc{i}#0" for i in range(20000)]
    nested = {name: pool_spec(name, {"unit": "document", "share": share})
              for name, share in (("qurating", 0.4147), ("dataman", 0.7129))}
    small, large = (kept_by_share(ids, s.share, s.salt) for s in nested.values())
    # One hash: QuRating's pool lies inside DataMan's (config/paper.yaml says so).
    assert not (small & ~large).any() and small.mean() == pytest.approx(0.4147, abs=0.01)
    independent = {name: pool_spec(name, {"unit": "document", "share": share,
                                          "draw": "independent"})
                   for name, share in (("qurating", 0.4147), ("dataman", 0.7129))}
    small, large = (kept_by_share(ids, s.share, s.salt) for s in independent.values())
    assert small.mean() == pytest.approx(0.4147, abs=0.01)
    # Two draws: they overlap by the product of their shares, not by the smaller share.
    assert (small & large).mean() == pytest.approx(0.4147 * 0.7129, abs=0.01)
    # A nested pool's settings are written as before the option existed (its jobs keep).
    assert "draw" not in nested["qurating"].to_dict()
    assert independent["qurating"].to_dict()["draw"] == "independent"
    with pytest.raises(ValueError, match="draw 'both'"):
        pool_spec("qurating", {"unit": "document", "draw": "both"})
