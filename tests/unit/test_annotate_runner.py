"""Streaming a shard into a sidecar: alignment with meta, bad lines, failures, memory, kills."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import encode, record, write_jsonl_zst

from selectlab.annotate.runner import annotate_shard, sidecar_read_report
from selectlab.annotate.signals import compute_signals, redpajama_signals
from selectlab.plugins.families import PluginAnnotator
from selectlab.shards import read_all
from selectlab.tokens import META_SCHEMA, tokenize_shard

WORDS = ("data quality selection rater model token shard corpus signal sample budget "
         "perplexity entropy sentence paragraph wikipedia book code the a of and to in").split()


def prose(rng: random.Random, n_words: int) -> str:
    sentences, words = [], []
    for _ in range(n_words):
        words.append(rng.choice(WORDS))
        if len(words) >= rng.randint(6, 14):
            sentences.append(" ".join(words).capitalize() + ".")
            words = []
    return " ".join(sentences + [" ".join(words)]).strip()


def write_meta(shard: Path, meta: Path) -> list[str]:
    """The meta sidecar's contract (ids in reader order) without training a tokenizer."""
    docs, _ = read_all([shard])
    lengths = [len(d.text.split()) for d in docs]
    offsets = [sum(lengths[:i]) for i in range(len(lengths))]
    table = pa.table({"id": [d.id for d in docs], "set_name": [d.set_name for d in docs],
                      "source_detail": [d.source_detail for d in docs],
                      "n_chars": [len(d.text) for d in docs], "n_tokens": lengths,
                      "token_offset": offsets}, schema=META_SCHEMA)
    meta.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, meta)
    return [d.id for d in docs]


def big_shard(path: Path, n_docs: int, words_per_doc: int, seed: int = 0,
              prefix: str = "doc") -> Path:
    rng = random.Random(seed)
    records = [record(f"{prefix}{i}", prose(rng, words_per_doc)) for i in range(n_docs)]
    return write_jsonl_zst(path, encode(records))


def annotate_signals(shard: Path, meta: Path, out: Path, batch_size: int = 4):
    return annotate_shard([shard], meta, signals_annotator(), out, family="signals",
                          shard="s", batch_size=batch_size, max_chars=100_000)


def test_sidecar_rows_match_meta_and_bad_lines_are_counted(tmp_path, tiny_tokenizer_dir):
    lines = encode([record("a", "First line.\nSecond LINE 7"), record("b", "Only one.")])
    lines[1:1] = [b'{"id": "broken", "text": "no closing quote',
                  b'{"id": "latin", "text": "caf\xe9", "meta": {"redpajama_set_name": "X"}}']
    lines += encode([record("c", "Third document here!", "RedPajamaBook")])
    shard = write_jsonl_zst(tmp_path / "raw" / "s.jsonl.zst", lines)
    meta = tmp_path / "attributes" / "meta" / "s.parquet"
    tokenize_shard([shard], tiny_tokenizer_dir, "s", tmp_path / "s.npy", meta,
                   tmp_path / "report.json", tmp_path / "quarantine.jsonl", max_chars=1000)
    out = tmp_path / "attributes" / "signals" / "s.parquet"

    stats = annotate_signals(shard, meta, out, batch_size=2)

    sidecar = pq.read_table(out)
    assert sidecar.column("id").to_pylist() == pq.read_table(meta).column("id").to_pylist()
    assert sidecar.column("id").to_pylist() == ["a", "b", "c"]
    assert sidecar.schema.names[0] == "id"
    assert sidecar.column("doc_word_count").to_pylist() == [
        compute_signals(text)["doc_word_count"]
        for text in ("First line.\nSecond LINE 7", "Only one.", "Third document here!")]
    report = sidecar_read_report(out)
    assert report["skipped"]["malformed_json"] == 1 and report["skipped"]["non_utf8"] == 1
    assert report["documents"] == 3 and report["n_skipped"] == 2
    assert stats.read_report == report and stats.documents == 3
    assert pq.ParquetFile(out).metadata.num_row_groups == 2  # one per batch of 2


def test_a_meta_sidecar_of_other_documents_is_an_error_and_leaves_no_file(tmp_path):
    shard = big_shard(tmp_path / "s.jsonl.zst", 10, 20)
    other = big_shard(tmp_path / "other.jsonl.zst", 10, 20, prefix="x")
    meta = tmp_path / "meta.parquet"
    write_meta(other, meta)
    out = tmp_path / "signals" / "s.parquet"
    with pytest.raises(ValueError, match="row 0: the shard reads document 'doc0'.*re-run"):
        annotate_signals(shard, meta, out)
    assert list(out.parent.iterdir()) == []


def test_meta_with_more_rows_than_the_shard_is_an_error(tmp_path):
    full = big_shard(tmp_path / "full.jsonl.zst", 12, 10)
    meta = tmp_path / "meta.parquet"
    write_meta(full, meta)
    shorter = big_shard(tmp_path / "short.jsonl.zst", 9, 10)
    out = tmp_path / "signals" / "s.parquet"
    with pytest.raises(ValueError, match="more rows than the shard's 9 valid documents"):
        annotate_signals(shorter, meta, out)
    assert not out.exists()


def test_a_shard_without_valid_documents_gets_an_empty_sidecar(tmp_path):
    shard = write_jsonl_zst(tmp_path / "s.jsonl.zst", [b"not json", b"{}"])
    meta = tmp_path / "meta.parquet"
    write_meta(shard, meta)
    out = tmp_path / "signals" / "s.parquet"
    stats = annotate_signals(shard, meta, out)
    table = pq.read_table(out)
    assert table.num_rows == 0 and "doc_word_count" in table.schema.names
    assert stats.read_report["skipped"]["malformed_json"] == 1
    assert stats.read_report["skipped"]["missing_field"] == 1


def test_temporary_files_of_a_killed_job_are_removed(tmp_path):
    shard = big_shard(tmp_path / "s.jsonl.zst", 5, 10)
    meta = tmp_path / "meta.parquet"
    write_meta(shard, meta)
    out = tmp_path / "signals" / "s.parquet"
    out.parent.mkdir()
    stale = out.parent / ".s.parquet.tmp-99999"
    stale.write_bytes(b"PAR1 half a file")
    annotate_signals(shard, meta, out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["s.parquet"]


def peak_python_memory(shard: Path, meta: Path, out: Path) -> int:
    tracemalloc.start()
    try:
        annotate_signals(shard, meta, out, batch_size=8)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_does_not_grow_with_the_shard(tmp_path):
    sizes = {}
    for n_docs in (100, 400):
        shard = big_shard(tmp_path / f"s{n_docs}.jsonl.zst", n_docs, 1200, seed=n_docs)
        meta = tmp_path / f"meta{n_docs}.parquet"
        write_meta(shard, meta)
        sizes[n_docs] = peak_python_memory(shard, meta, tmp_path / f"out{n_docs}.parquet")
    # Holding the shard would need ~4x: its text alone is ~3 MB at 400 documents.
    assert sizes[400] < 1.5 * sizes[100], sizes


def annotate_command(shards: dict[str, Path], meta_dir: Path, out_dir: Path,
                     stats: Path) -> list[str]:
    """`selectlab annotate run` of the signals family over `shards` (name -> raw file)."""
    files = json.dumps({name: [str(path)] for name, path in shards.items()})
    return [sys.executable, "-m", "selectlab.cli", "annotate", "run", "--family", "signals",
            "--params", json.dumps({"kind": "signals"}),
            "--throughput", json.dumps({"batch_size": 8}), "--shard-files", files,
            "--meta-dir", str(meta_dir), "--max-doc-chars", "100000",
            "--out-dir", str(out_dir), "--stats", str(stats)]


def temporaries(out: Path) -> list[Path]:
    return list(out.parent.glob(f".{out.name}.tmp-*")) if out.parent.exists() else []


def test_killing_a_job_mid_shard_and_rerunning_gives_the_uninterrupted_sidecar(tmp_path):
    shard = big_shard(tmp_path / "s.jsonl.zst", 1200, 300)
    (tmp_path / "meta").mkdir()
    write_meta(shard, tmp_path / "meta" / "s.parquet")
    reference = tmp_path / "reference" / "s.parquet"
    subprocess.run(annotate_command({"s": shard}, tmp_path / "meta", reference.parent,
                                    tmp_path / "ref.json"), check=True, capture_output=True)

    out = tmp_path / "killed" / "s.parquet"
    command = annotate_command({"s": shard}, tmp_path / "meta", out.parent,
                               tmp_path / "killed.json")
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not temporaries(out):
        assert job.poll() is None, "the job ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(job.pid, signal.SIGKILL)
    job.wait()
    assert not out.exists(), "a killed job left a file that looks finished"
    assert temporaries(out)

    subprocess.run(command, check=True, capture_output=True)
    assert sorted(p.name for p in out.parent.iterdir()) == ["s.parquet"]
    assert pq.read_table(out).equals(pq.read_table(reference))
    assert out.read_bytes() == reference.read_bytes()


def test_one_job_scores_several_shards_into_one_sidecar_each(tmp_path):
    (tmp_path / "meta").mkdir()
    shards = {}
    for index, n_docs in enumerate((30, 50)):
        name = f"shard_0000{index}"
        shards[name] = big_shard(tmp_path / f"{name}.jsonl.zst", n_docs, 200, seed=index)
        write_meta(shards[name], tmp_path / "meta" / f"{name}.parquet")
    subprocess.run(annotate_command(shards, tmp_path / "meta", tmp_path / "together",
                                    tmp_path / "together.json"), check=True, capture_output=True)
    stats = json.loads((tmp_path / "together.json").read_text())
    assert [entry["shard"] for entry in stats] == list(shards)
    for name, entry in zip(shards, stats, strict=True):
        alone = tmp_path / "alone" / name
        subprocess.run(annotate_command({name: shards[name]}, tmp_path / "meta", alone,
                                        alone / "stats.json"), check=True, capture_output=True)
        assert (tmp_path / "together" / f"{name}.parquet").read_bytes() == (
            alone / f"{name}.parquet").read_bytes()
        assert entry["documents"] == len(read_all([shards[name]])[0])


def signals_annotator() -> PluginAnnotator:
    return PluginAnnotator(redpajama_signals, {}, 0, kind="signals")


class FailingModel(PluginAnnotator):
    """Signals, plus a model failure for every `every`-th document (as a generative rater
    records an unparseable answer: the row stays, with a reason)."""

    def __init__(self, every: int):
        super().__init__(redpajama_signals, {}, 0, kind="signals")
        self.every, self.seen, self.failed = every, 0, 0

    def annotate_batch(self, docs):
        for _ in docs:
            self.seen += 1
            self.failed += self.seen % self.every == 0
        return super().annotate_batch(docs)

    def failure_counts(self):
        return {"parse_error: no parseable rating in 3 attempt(s)": self.failed}


def test_a_shard_whose_model_failures_pass_the_threshold_is_not_written(tmp_path):
    from selectlab.errors import StageError

    shard = big_shard(tmp_path / "raw.jsonl.zst", 40, 30)
    write_meta(shard, tmp_path / "meta.parquet")
    out = tmp_path / "sidecar.parquet"
    with pytest.raises(StageError, match=r"annotate dataman s: 10 of 40 documents got no value "
                                         r"\(25.0%, above the family's max_failure_rate 5.0%\); "
                                         r"the sidecar was not written. Most frequent causes:\n"
                                         r"  10 x parse_error: no parseable rating in 3 "):
        annotate_shard([shard], tmp_path / "meta.parquet", FailingModel(4), out,
                       family="dataman", shard="s", batch_size=8, max_chars=100_000)
    assert not out.exists() and not list(tmp_path.glob(".sidecar*"))
    annotate_shard([shard], tmp_path / "meta.parquet", FailingModel(40), out, family="dataman",
                   shard="s", batch_size=8, max_chars=100_000)
    assert pq.read_metadata(out).num_rows == 40  # 1 in 40 is below the threshold
