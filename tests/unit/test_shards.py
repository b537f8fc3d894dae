"""The validating reader: every bad line is skipped, counted by reason and quarantined."""

from __future__ import annotations

import io
import json

from conftest import encode, record, write_jsonl_zst

from selectlab.shards import Document, ReadReport, iter_documents, read_all, write_documents


def test_reader_counts_every_kind_of_bad_line(tmp_path):
    good = encode([record("a", "first document"), record("b", "second document")])
    bad = [
        b'{"id": "c", "text": "unterminated',  # malformed JSON
        b'["a list", "not an object"]',  # malformed JSON (not an object)
        json.dumps({"id": "d", "text": "no meta"}).encode(),  # missing field
        json.dumps({"id": "e", "meta": {"redpajama_set_name": "X"}}).encode(),  # no text
        json.dumps(record("f", "   \n\t ")).encode(),  # empty text
        b'{"id": "g", "text": "caf\xe9", "meta": {"redpajama_set_name": "X"}}',  # latin-1 byte
        json.dumps(record("h", "x" * 101)).encode(),  # too long for max_chars=100
        json.dumps(record("a", "duplicate id")).encode(),  # duplicate id
        b'{"id": "i", "text": "\\ud800 lone surrogate", "meta": {"redpajama_set_name": "X"}}',
    ]
    path = write_jsonl_zst(tmp_path / "shard.jsonl.zst", good[:1] + bad + good[1:] + [b""])
    report = ReadReport(shard="shard")
    quarantine = io.StringIO()
    docs = list(iter_documents([path], report, max_chars=100, quarantine=quarantine,
                               id_root=tmp_path))

    assert [d.id for d in docs] == ["a", "b"]
    assert report.lines == 11 and report.documents == 2
    assert report.skipped == {"malformed_json": 2, "missing_field": 2, "non_utf8": 2,
                              "empty_text": 1, "too_long": 1, "duplicate_id": 1}
    quarantined = [json.loads(line) for line in quarantine.getvalue().splitlines()]
    assert len(quarantined) == report.n_skipped == 9
    assert {q["reason"] for q in quarantined} == set(report.skipped)
    assert quarantined[0]["where"] == "shard.jsonl.zst:2"


def test_missing_ids_are_the_path_under_the_root_and_the_line(tmp_path):
    lines = [json.dumps({"text": "no id here", "meta": {"redpajama_set_name": "S"}}).encode()]
    # SlimPajama's layout: the same file name in every chunk directory.
    paths = [write_jsonl_zst(tmp_path / f"chunk{c}" / "example_train_3.jsonl.zst", lines * 2)
             for c in (1, 2)]
    first, _ = read_all(paths, id_root=tmp_path)
    second, _ = read_all(paths, id_root=tmp_path)
    assert [d.id for d in first] == ["chunk1/example_train_3.jsonl.zst:1",
                                     "chunk1/example_train_3.jsonl.zst:2",
                                     "chunk2/example_train_3.jsonl.zst:1",
                                     "chunk2/example_train_3.jsonl.zst:2"]
    assert first == second


def test_plain_and_gzip_files_read_the_same(tmp_path):
    import gzip

    lines = encode([record("a", "alpha"), record("b", "beta", "RedPajamaBook")])
    plain = tmp_path / "s.jsonl"
    plain.write_bytes(b"\n".join(lines) + b"\n")
    gz = tmp_path / "s.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_all([plain])[0] == read_all([gz])[0]
    assert read_all([gz])[0][1].set_name == "RedPajamaBook"


def test_write_then_read_roundtrip(tmp_path):
    docs = [Document("x1", "héllo wörld ✓", "RedPajamaBook", "kjv:Genesis 1"),
            Document("x2", "second", "RedPajamaGithub", "stdlib:os.py")]
    path = tmp_path / "out" / "shard.jsonl.zst"
    assert write_documents(path, docs) == 2
    assert read_all([path])[0] == docs
    assert not list(path.parent.glob(".*tmp*"))


def test_ids_repeated_across_shards_are_found_by_the_pool_check(tmp_path):
    import pandas as pd
    import pytest

    from selectlab.corpus.pool_ids import check_unique, repeated_ids
    from selectlab.errors import StageError

    metas = []
    for shard, ids in {"shard_00000": ["a", "b", "c"], "shard_00001": ["d", "b"],
                       "shard_00002": ["e", "c"]}.items():
        metas.append(tmp_path / f"{shard}.parquet")
        pd.DataFrame({"id": ids}).to_parquet(metas[-1])
    assert repeated_ids(metas) == {"b": ["shard_00000", "shard_00001"],
                                   "c": ["shard_00000", "shard_00002"]}
    assert check_unique(metas[:1]) == 3
    with pytest.raises(StageError, match=r"2 ids occur more than once \(e.g. 'b' in "
                                         r"shard_00000, shard_00001; 'c' in shard_00000, "):
        check_unique(metas)
