"""Damaged shard files: truncation and corruption found, located, and handled by policy."""

from __future__ import annotations

import gzip
import io
import json

import pytest
import zstandard
from conftest import encode, record, write_jsonl_zst

from selectlab.decode import DamagedFileError, DecodedLines, open_binary
from selectlab.shards import ReadReport, iter_documents

N_DOCS = 400


def records() -> list[bytes]:
    # Long, varied texts, so that half of the compressed bytes hold many whole lines.
    return encode([record(f"d{i:04d}", f"document {i} " + "word " * (30 + i % 50))
                   for i in range(N_DOCS)])


def zst_file(path, lines):
    return write_jsonl_zst(path, lines)


def read(paths, policy="quarantine", quarantine=None):
    report = ReadReport(shard="s")
    docs = list(iter_documents(paths, report, on_damaged_file=policy, quarantine=quarantine))
    return docs, report


def test_a_zstd_file_cut_in_half_is_reported_truncated_with_its_offset(tmp_path):
    whole = zst_file(tmp_path / "whole.jsonl.zst", records())
    cut = tmp_path / "cut.jsonl.zst"
    data = whole.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    quarantine = io.StringIO()
    docs, report = read([cut], quarantine=quarantine)
    assert len(docs) < N_DOCS and report.n_skipped == 0  # a prefix at most, never a bad line
    damage = report.damaged_files[0]
    assert damage["kind"] == "truncated" and damage["offset"] == len(data) // 2
    assert damage["file"] == str(cut) and damage["after_line"] == len(docs)
    entry = json.loads(quarantine.getvalue().splitlines()[-1])
    assert entry["reason"] == "damaged_file" and entry["where"] == f"{cut}@{len(data) // 2}"
    with pytest.raises(DamagedFileError, match=rf"cut.jsonl.zst is truncated at its end "
                                               rf"\(byte {len(data) // 2:,}\), after line"):
        read([cut], policy="stop")


def test_every_cut_point_keeps_only_whole_lines_and_counts_the_file(tmp_path):
    lines = records()
    data = zst_file(tmp_path / "whole.jsonl.zst", lines).read_bytes()
    for fraction in (0.1, 0.33, 0.5, 0.77, 0.99):
        cut = tmp_path / f"cut{fraction}.jsonl.zst"
        cut.write_bytes(data[: int(len(data) * fraction)])
        docs, report = read([cut])
        assert [d.id for d in docs] == [f"d{i:04d}" for i in range(len(docs))]
        assert report.lines == len(docs) and len(report.damaged_files) == 1


def test_a_file_that_is_not_zstd_is_corrupt_at_byte_zero(tmp_path):
    plain = tmp_path / "plain.jsonl.zst"
    plain.write_bytes(b"\n".join(records()) + b"\n")
    docs, report = read([plain])
    assert docs == [] and report.damaged_files[0]["kind"] == "corrupt"
    assert report.damaged_files[0]["offset"] == 0
    with pytest.raises(DamagedFileError, match=r"plain.jsonl.zst is corrupt at compressed byte 0 "
                                               r"of [\d,]+, after line 0: the decoder rejects"):
        read([plain], policy="stop")


def test_corrupt_bytes_inside_a_frame_stop_the_file_there(tmp_path):
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    data = bytearray(compressor.compress(b"".join(line + b"\n" for line in records())))
    data[len(data) // 2: len(data) // 2 + 64] = bytes(64)
    path = tmp_path / "flipped.jsonl.zst"
    path.write_bytes(bytes(data))
    docs, report = read([path])
    assert report.damaged_files[0]["kind"] == "corrupt" and len(docs) < N_DOCS


def test_truncated_gzip_keeps_its_readable_prefix(tmp_path):
    data = gzip.compress(b"".join(line + b"\n" for line in records()))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    docs, report = read([path])
    assert 0 < len(docs) < N_DOCS and report.damaged_files[0]["kind"] == "truncated"
    assert [d.id for d in docs] == [f"d{i:04d}" for i in range(len(docs))]


def test_a_damaged_file_does_not_hide_the_next_one(tmp_path):
    good = zst_file(tmp_path / "good.jsonl.zst", encode([record("g1", "fine text")]))
    bad = tmp_path / "bad.jsonl.zst"
    bad.write_bytes(b"not zstd at all")
    docs, report = read([bad, good])
    assert [d.id for d in docs] == ["g1"] and len(report.damaged_files) == 1


def test_multiple_frames_and_skippable_frames_are_whole(tmp_path):
    first = zstandard.ZstdCompressor().compress(b"\n".join(records()[:10]) + b"\n")
    second = zstandard.ZstdCompressor().compress(b"\n".join(records()[10:20]) + b"\n")
    skippable = (0x184D2A50).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"edit"
    path = tmp_path / "frames.jsonl.zst"
    path.write_bytes(first + skippable + second)
    lines = DecodedLines(path)
    assert len(list(lines)) == 20 and lines.damage is None


def test_open_binary_raises_at_the_damage(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(b"x\n" * 1000)[:20])
    with pytest.raises(DamagedFileError, match="cut.jsonl.gz is truncated"):
        with open_binary(path) as handle:
            list(handle)
